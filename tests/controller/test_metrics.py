"""The reconcile loop's metrics of a result: certificate expiry of every data plane, Gateways' Programmed."""

from __future__ import annotations

from titanium_gateway.controller.reconcile_metrics import ReconcileMetrics
from titanium_gateway.metrics import Registry
from titanium_gateway.render.result import CertificateEntry, GatewayRef, Plane, RenderResult

EXPIRY = "titanium_certificate_expiry_timestamp_seconds"


def _cert(source: str, not_after: int | None) -> CertificateEntry:
    ns, _, name = source.partition("/")
    return CertificateEntry(f"{ns}.{name}.pfx", ("shop.example.com",), source, not_after=not_after)


def _result(shared: tuple[CertificateEntry, ...], own: tuple[CertificateEntry, ...]) -> RenderResult:
    gateway = Plane("apps/web", b"own", "h2", certificates=own, gateway=GatewayRef("apps", "web", "u1", "ours"),
                    gateways=(("apps", "web"),))
    return RenderResult(planes=(Plane("", b"shared", "h1", certificates=shared), gateway))


def test_a_certificate_of_a_gateways_own_data_plane_has_an_expiry_series_too() -> None:
    reg = Registry()
    m = ReconcileMetrics(reg)
    m.certificates(_result((_cert("apps/ingress-tls", 1_900_000_000),), (_cert("apps/shop-tls", 2_000_000_000),)))
    assert reg.value(EXPIRY, namespace="apps", name="ingress-tls") == 1_900_000_000
    assert reg.value(EXPIRY, namespace="apps", name="shop-tls") == 2_000_000_000


def test_the_series_of_a_certificate_no_data_plane_uses_goes() -> None:
    reg = Registry()
    m = ReconcileMetrics(reg)
    m.certificates(_result((), (_cert("apps/shop-tls", 2_000_000_000), _cert("apps/old-tls", 1_800_000_000))))
    m.certificates(_result((_cert("apps/shop-tls", 2_000_000_000),), (_cert("apps/undated", None),)))
    assert reg.value(EXPIRY, namespace="apps", name="shop-tls") == 2_000_000_000
    assert 'name="old-tls"' not in reg.render_text() and 'name="undated"' not in reg.render_text()
