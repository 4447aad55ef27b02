"""The backends of Ingress paths: the cluster settings of an annotation set (timeouts, load
balancing, affinity, backend protocol, upstream TLS) and a backend's cluster.

Both are made once per render for what they read (an annotation set, a backend's content with
exact types): the Ingresses of one annotation set share one settings object, and a Service is
usually the backend of many paths.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cryptography import x509

from titanium_gateway.render import fields as f
from titanium_gateway.render.backends import resolve_backend
from titanium_gateway.render.builder import RenderContext, with_id_suffix
from titanium_gateway.render.certificates import secret_data
from titanium_gateway.render.ingress import titanium as ia
from titanium_gateway.render.ingress.objects import IngressInfo, Resolved
from titanium_gateway.render.ingress.status import event
from titanium_gateway.render.ingress.titanium import IngressAnnotations
from titanium_gateway.twp.model import DEFAULT_SETTINGS, ClusterSettings


class Backends:
    """The cluster settings and backend clusters of one render (see the module doc)."""

    def __init__(self, ctx: RenderContext) -> None:
        self.ctx = ctx
        self._upstream: dict[tuple[str, str], tuple[tuple[tuple[str, str], ...], str]] = {}
        #: what cluster settings read of an annotation set -> (settings or None, why not, id suffix)
        self._settings: dict[tuple[Any, ...], tuple[ClusterSettings | None, str, str]] = {}
        #: a backend by exact-typed content -> (cluster, reason, message)
        self._resolved: dict[tuple[Any, ...], Resolved] = {}

    # -- cluster settings -----------------------------------------------------------------
    def cluster_settings(self, ing: IngressInfo) -> None:
        """The Ingress's cluster settings, made once per render for what they read of its
        annotations, so the Ingresses of one annotation set share one settings object."""
        ann = ing.ann
        key = (ann.proxy_read_timeout, ann.load_balance, ann.affinity, ann.backend_protocol, ann.upstream_tls_secret)
        hit = self._settings.get(key)
        if hit is None:
            hit = self._settings[key] = self._cluster_settings(ann)
        ing.settings, ing.settings_error, ing.id_suffix = hit
        if ing.settings_error:
            event(self.ctx, ing, "InvalidAnnotation", ing.settings_error)

    def _cluster_settings(self, ann: IngressAnnotations) -> tuple[ClusterSettings | None, str, str]:
        """(settings or None, why not, cluster id suffix)."""
        tls: tuple[tuple[str, str], ...] = ()
        if ann.upstream_tls_secret is not None:
            files, error = self.upstream_tls(ann.upstream_tls_secret)
            if error:
                return None, error, ""
            tls = files
        settings = ClusterSettings(
            request_timeout=f.timespan(ann.proxy_read_timeout * 1000) if ann.proxy_read_timeout else None,
            algorithm=ann.load_balance,
            affinity_cookie=ia.AFFINITY_COOKIE_NAME if ann.affinity == "cookie" else None,
            use_https=ann.backend_protocol == "HTTPS",
            tls=tls,
        )
        if settings == DEFAULT_SETTINGS:
            settings = DEFAULT_SETTINGS  # the same clusters, and resolve_backend's fast key
        # H2C and GRPC change nothing in the cluster (the data plane follows the client's
        # HTTP version), yet the table says the backend gets its own cluster: mark the id.
        suffix = "-" + ann.backend_protocol.lower() if ann.backend_protocol in ("H2C", "GRPC") else ""
        return settings, "", suffix

    def upstream_tls(self, ref: ia.UpstreamTLSRef) -> tuple[tuple[tuple[str, str], ...], str]:
        """Validates the upstream TLS Secret and adds its PEM files to the TLS Secret (once per
        Secret per render)."""
        key = (ref.namespace, ref.name)
        cached = self._upstream.get(key)
        if cached is None:
            cached = self._upstream[key] = self._load_upstream_tls(ref)
        return cached

    def _load_upstream_tls(self, ref: ia.UpstreamTLSRef) -> tuple[tuple[tuple[str, str], ...], str]:
        label = f"{ia.UPSTREAM_TLS_SECRET}: Secret {ref.namespace}/{ref.name}"
        secret = self.ctx.snapshot.secrets.get(f"{ref.namespace}/{ref.name}")
        conversion = self.ctx.convert(ref.namespace, ref.name)
        if conversion is None or not f.is_mapping(secret):
            return (), f"{label} not found"
        if not conversion.ok:
            return (), f"{label}: {conversion.error}"
        crt = secret_data(secret, "tls.crt")
        key = secret_data(secret, "tls.key")
        ca = secret_data(secret, "ca.crt")
        if crt is None or key is None:  # convert_tls_secret accepted it, so unreachable
            return (), f"{label} lacks tls.crt or tls.key"
        if ca is not None:
            try:
                anchors = x509.load_pem_x509_certificates(ca)
            except Exception:  # noqa: BLE001 - any parse failure means "not a PEM certificate"
                anchors = []
            if not anchors:
                return (), f"{label}: ca.crt is not a PEM certificate"
        base = f"upstream.{ref.namespace}.{ref.name}"
        files = [("certFile", f"{base}.tls.crt"), ("keyFile", f"{base}.tls.key")]
        self.ctx.add_tls_file(f"{base}.tls.crt", crt)
        self.ctx.add_tls_file(f"{base}.tls.key", key)
        if ca is not None:
            files.append(("caFile", f"{base}.ca.crt"))
            self.ctx.add_tls_file(f"{base}.ca.crt", ca)
        return tuple(sorted(files)), ""

    # -- backends -------------------------------------------------------------------------
    def backend_cluster(self, ing: IngressInfo, backend: Any, settings: ClusterSettings, id_suffix: str) -> Resolved:
        """(cluster, reason, message): resolves an Ingress backend (the caller adds the cluster
        to the context only when a route uses it). Once per render for each distinct backend:
        a Service is usually the backend of many paths. The key is the backend's content with
        exact types (``True``, ``1.0`` and ``"1"`` are not the port ``1``); any other shape is
        resolved every time."""
        key: tuple[Any, ...] | None = None
        if type(backend) is dict and "resource" not in backend:
            service = backend.get("service")
            if type(service) is dict:
                name, port = service.get("name"), service.get("port")
                if type(name) is str and type(port) is dict:
                    number, port_name = port.get("number"), port.get("name")
                    if (number is None or type(number) is int) and (port_name is None or type(port_name) is str):
                        key = (ing.namespace, name, number, port_name, settings, id_suffix)
        if key is None:
            return self._backend_cluster(ing, backend, settings, id_suffix)
        hit = self._resolved.get(key)
        if hit is None:
            hit = self._resolved[key] = self._backend_cluster(ing, backend, settings, id_suffix)
        return hit

    def _backend_cluster(self, ing: IngressInfo, backend: Any, settings: ClusterSettings, id_suffix: str) -> Resolved:
        backend = f.mapping(backend)
        if backend.get("resource") is not None:
            return None, "UnsupportedBackend", "backend.resource is not supported"
        service = backend.get("service")
        if not isinstance(service, Mapping):
            return None, "InvalidBackend", "the backend names no Service"
        name = f.text(service.get("name"))
        if not name:
            return None, "InvalidBackend", "the backend Service has no name"
        port = f.mapping(service.get("port"))
        number, port_name = port.get("number"), port.get("name")
        ref: int | str
        if number is not None and port_name is not None:
            return None, "InvalidBackend", f"the backend Service {name} gives both a port number and name"
        if number is not None:
            if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 65535:
                return None, "InvalidBackend", f"the backend Service {name} port {number!r} is not 1-65535"
            ref = number
        elif f.text(port_name):
            # A named port resolves to its number, so the cluster is shared with every other
            # reference to the same Service port (HTTPRoute backendRefs use numbers).
            entry = self.ctx.backends.service_port(ing.namespace, name, port_name)
            number = entry.get("port") if entry is not None else None
            if isinstance(number, int) and not isinstance(number, bool):
                ref = number
            else:
                ref = port_name  # resolve_backend reports the missing Service or port
        else:
            return None, "InvalidBackend", f"the backend Service {name} has no port"
        resolution = resolve_backend(self.ctx.backends, ing.namespace, name, ref, settings)
        if not resolution.ok or resolution.cluster is None:
            # Only the Ingress page's reasons are reported on an Ingress: a backend the core
            # rejects for another reason (e.g. an ExternalName Service) is an InvalidBackend.
            reason = resolution.reason if resolution.reason == "BackendNotFound" else "InvalidBackend"
            return None, reason, resolution.message
        cluster = resolution.cluster
        return (with_id_suffix(cluster, id_suffix) if id_suffix else cluster), "", ""
