"""An Ingress's ``tls``: each entry's Secret bound as a certificate for its hosts (a TLS entry
without hosts is a default-certificate candidate, the oldest wins); a bad entry is reported
(InvalidTLS), and nothing is bound while the HTTPS data-plane port is unusable."""

from __future__ import annotations

from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.ingress.objects import IngressInfo
from titanium_gateway.render.ingress.paths import normalize_host
from titanium_gateway.render.ingress.status import event


def bind(ctx: RenderContext, ing: IngressInfo, https_ok: bool, https_why: str) -> bool:
    """Bind the Ingress's certificates; True when one is bound (the HTTPS listener is needed)."""
    bound = False
    entries = f.items(f.mapping(ing.obj.get("spec")).get("tls"))
    if entries and not https_ok:
        # One cause, one event: the port is PortUnavailable (once per Ingress, not an
        # InvalidTLS per entry); each entry is still validated below, so a bad Secret is
        # reported too, yet nothing is bound and no decrypting listener opened.
        event(ctx, ing, "PortUnavailable", https_why)
    for t, entry in enumerate(entries):
        entry = f.mapping(entry)
        secret = f.text(entry.get("secretName"))
        if not secret:
            event(ctx, ing, "InvalidTLS", f"tls {t}: no secretName")
            continue
        hosts: list[str] = []
        bad = False
        for raw in f.items(entry.get("hosts")):
            host, error = normalize_host(raw)
            if error or host is None:
                event(ctx, ing, "InvalidTLS", f"tls {t} (Secret {secret}): {error or 'empty host'}")
                bad = True
                break
            hosts.append(host)
        if bad:
            continue
        if not https_ok:
            error = check_tls_secret(ctx, ing.namespace, secret)
            if error:
                event(ctx, ing, "InvalidTLS", f"tls {t}: {error}")
            continue  # no certificate bound, no decrypting listener
        rank = None if hosts else (ing.created, ing.namespace, ing.name, t)
        conversion = ctx.bind_certificate(ing.namespace, secret, sorted(set(hosts)), rank)
        if not conversion.ok:
            event(ctx, ing, "InvalidTLS", f"tls {t}: {conversion.error}")
            continue
        bound = True
    return bound


def check_tls_secret(ctx: RenderContext, namespace: str, name: str) -> str:
    """Why the Secret ``namespace/name`` cannot be a certificate ("" when it can), with the
    same messages as ``ctx.bind_certificate``, but binding nothing."""
    return ctx.certificate_problem(namespace, name)
