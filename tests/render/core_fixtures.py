"""Object builders for the render core's unit tests (not the golden harness)."""

from __future__ import annotations

import base64
import datetime
import functools
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from titanium_gateway.render import render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import ObjectStatus, RenderResult
from titanium_gateway.render.snapshot import Snapshot

CONTROLLER = "titaniumproxy.com/gateway-controller"
GW_API = "gateway.networking.k8s.io/v1"


def gatewayclass(name: str = "titanium", controller: str = CONTROLLER) -> dict[str, Any]:
    return {"apiVersion": GW_API, "kind": "GatewayClass", "metadata": {"name": name},
            "spec": {"controllerName": controller}}


def listener(name: str = "http", port: int = 80, protocol: str = "HTTP", **extra: Any) -> dict[str, Any]:
    return {"name": name, "port": port, "protocol": protocol, **extra}


def gateway(name: str = "web", ns: str = "apps", listeners: list[dict[str, Any]] | None = None,
            cls: str = "titanium", created: str = "2024-01-01T00:00:00Z", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": GW_API, "kind": "Gateway",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": created, "generation": 1},
            "spec": {"gatewayClassName": cls, "listeners": listeners or [listener()], **spec}}


def route(name: str = "shop", ns: str = "apps", rules: list[dict[str, Any]] | None = None,
          parents: list[dict[str, Any]] | None = None, hostnames: list[str] | None = None,
          created: str = "2024-01-02T00:00:00Z", status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": GW_API, "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": created, "generation": 2},
        "spec": {"parentRefs": parents if parents is not None else [{"name": "web"}],
                 "rules": rules if rules is not None else [{"backendRefs": [{"name": "api", "port": 8080}]}]},
    }
    if hostnames is not None:
        obj["spec"]["hostnames"] = hostnames
    if status is not None:
        obj["status"] = status
    return obj


def service(name: str = "api", ns: str = "apps", port: int = 8080, target: Any = 9000,
            port_name: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"port": port, "targetPort": target}
    if port_name:
        entry["name"] = port_name
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": {"ports": [entry]}}


def endpoints(service_name: str = "api", ns: str = "apps", addresses: tuple[str, ...] = ("10.0.0.1",),
              port: int = 9000, port_name: str | None = None, ready: bool | None = True,
              slice_name: str | None = None) -> dict[str, Any]:
    conds = {} if ready is None else {"ready": ready}
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": slice_name or f"{service_name}-abc", "namespace": ns,
                         "labels": {"kubernetes.io/service-name": service_name}},
            "addressType": "IPv4",
            "ports": [{"port": port, **({"name": port_name} if port_name else {})}],
            "endpoints": [{"addresses": [a], "conditions": conds} for a in addresses]}


def grant(ns: str, from_kind: str, from_ns: str, to_kind: str, to_name: str | None = None) -> dict[str, Any]:
    to: dict[str, Any] = {"group": "", "kind": to_kind}
    if to_name:
        to["name"] = to_name
    return {"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
            "metadata": {"name": f"grant-{from_ns}", "namespace": ns},
            "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": from_kind, "namespace": from_ns}],
                     "to": [to]}}


@functools.lru_cache(maxsize=8)
def key_and_cert(cn: str = "example.com") -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(datetime.datetime(2020, 1, 1))
            .not_valid_after(datetime.datetime(2040, 1, 1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(cn)]), critical=False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def tls_secret(name: str = "shop-tls", ns: str = "apps", crt: bytes | None = None, key: bytes | None = None,
               cn: str = "example.com") -> dict[str, Any]:
    c, k = key_and_cert(cn)
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": ns},
            "data": {"tls.crt": base64.b64encode(crt if crt is not None else c).decode(),
                     "tls.key": base64.b64encode(key if key is not None else k).decode()}}


def base_objects() -> list[dict[str, Any]]:
    return [gatewayclass(), gateway(), service(), endpoints()]


def run(objects: list[dict[str, Any]], **options: Any) -> RenderResult:
    snap_kwargs = {k: options.pop(k) for k in ("confirmed_config_hash", "probe_message", "now") if k in options}
    return render(Snapshot.from_objects(objects, **snap_kwargs), RenderOptions(**options))


def config(result: RenderResult) -> dict[str, Any]:
    """The root document as libyaml reads it (and the pure-Python loader: the same)."""
    doc: dict[str, Any] = yaml.load(result.config, Loader=yaml.CSafeLoader)  # noqa: S506 - a safe loader
    assert doc == yaml.safe_load(result.config)
    return doc


def routes(result: RenderResult) -> list[dict[str, Any]]:
    return config(result)["routes"]


def route_by_id(result: RenderResult, rid: str) -> dict[str, Any]:
    for r in routes(result):
        if r["id"] == rid:
            return r
    raise AssertionError(f"no route {rid}: {[r['id'] for r in routes(result)]}")


def status_of(result: RenderResult, kind: str, ns: str, name: str) -> ObjectStatus:
    for s in result.statuses:
        if s.key == (kind, ns, name):
            return s
    raise AssertionError(f"no status for {kind} {ns}/{name}")


def cond(conditions: list[dict[str, Any]], ctype: str) -> dict[str, Any]:
    for c in conditions:
        if c["type"] == ctype:
            return c
    raise AssertionError(f"no {ctype} in {conditions}")


def parent_cond(result: RenderResult, ctype: str, name: str = "shop", ns: str = "apps", index: int = 0) -> dict[str, Any]:
    return cond(status_of(result, "HTTPRoute", ns, name).status["parents"][index]["conditions"], ctype)


def listener_status(result: RenderResult, lname: str, gw: str = "web", ns: str = "apps") -> dict[str, Any]:
    for ls in status_of(result, "Gateway", ns, gw).status["listeners"]:
        if ls["name"] == lname:
            return ls
    raise AssertionError(f"no listener {lname}")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
