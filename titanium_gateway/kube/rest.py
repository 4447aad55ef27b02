"""``RestApi``: the ``KubeApi`` protocol over urllib3, configured by a ``kubernetes.client.Configuration``.

The official ``kubernetes`` package provides the configuration: kubeconfig or in-cluster
loading, authentication (tokens, exec plugins and auth providers with their refresh hook),
client certificates, CA, TLS verification, proxy (``kube/kubeconfig.py`` imports those parts
without the generated client). The transport is :class:`Transport`: the urllib3 pool the
official ``ApiClient``/``RESTClientObject`` would build from that configuration, the same URL,
query, header and JSON body encoding, and the ``authorization`` header from
``Configuration.auth_settings()`` on every request (which runs the token refresh hook).
Response bodies are parsed here as raw JSON; no model classes are built. Watches read the
chunked stream line by line (one JSON event per line).

Every request waits for a token of a client-side token bucket (``qps``/``burst``) and is
counted in ``rest_client_requests_total{code,method,host}`` (code ``<error>`` when no answer).
"""

from __future__ import annotations

import copy
import ipaddress
import json
import logging
import socket
import ssl
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, urlparse

import urllib3

from titanium_gateway.kube.api import ApiError, Obj, PatchType, Resource
from titanium_gateway.kube.clock import REAL_CLOCK, Clock
from titanium_gateway.kube.ratelimit import TokenBucket
from titanium_gateway.metrics import Registry, rest_client_requests

log = logging.getLogger(__name__)

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


class StrategicPatchNotSupported(ValueError):
    """A strategic merge patch was asked for a CRD-backed resource (the server answers 415)."""


class WatchStreamError(Exception):
    """The watch connection broke (reset, read timeout, truncated chunk) before a clean end."""


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        from datetime import datetime, timezone
        when = parsedate_to_datetime(value)
        return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
    except (TypeError, ValueError):
        return None


def api_error_from_response(status: int, body: bytes, headers: Any) -> ApiError:
    """An ``ApiError`` from a non-2xx answer: reason/message from a Status body when there is one."""
    parsed: Obj = {}
    try:
        data = json.loads(body.decode("utf-8")) if body else {}
        if isinstance(data, dict):
            parsed = data
    except (ValueError, UnicodeDecodeError):
        pass
    reason = str(parsed.get("reason") or "")
    message = str(parsed.get("message") or (body[:500].decode("utf-8", "replace") if not parsed else ""))
    retry_after = parse_retry_after(headers.get("Retry-After") if headers is not None else None)
    if retry_after is None:
        ra = (parsed.get("details") or {}).get("retryAfterSeconds") if isinstance(parsed.get("details"), dict) \
            else None
        if isinstance(ra, (int, float)) and ra > 0:
            retry_after = float(ra)
    return ApiError(status, reason, message, retry_after, parsed)


SOCKS_PROXY_SCHEMES = frozenset({"socks5", "socks5h", "socks4", "socks4a"})


def tcp_keepalive_socket_options(idle: int = 30, interval: int = 15, count: int = 9) -> list[tuple[int, int, int]]:
    """urllib3's default socket options plus TCP keepalive (``Configuration.keep_alive``), with
    client-go's timings, as ``kubernetes.utils.keepalive.tcp_keepalive_socket_options``."""
    options = list(urllib3.connection.HTTPConnection.default_socket_options)
    options.append((socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1))
    if hasattr(socket, "TCP_KEEPIDLE"):
        options.append((socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, idle))
    elif hasattr(socket, "TCP_KEEPALIVE"):
        options.append((socket.IPPROTO_TCP, socket.TCP_KEEPALIVE, idle))
    if hasattr(socket, "TCP_KEEPINTVL"):
        options.append((socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, interval))
    if hasattr(socket, "TCP_KEEPCNT"):
        options.append((socket.IPPROTO_TCP, socket.TCP_KEEPCNT, count))
    return options


def bypasses_proxy(url: str, no_proxy: str) -> bool:
    """Whether ``url``'s host matches one of the comma-separated ``no_proxy`` rules (``*``, a
    CIDR, a domain suffix, ``host:port``), as the official client decides."""
    parsed = urlparse(url)
    if not parsed.hostname:
        return True
    host = parsed.hostname.lower()
    host_and_port = parsed.netloc.lower()
    try:
        host_ip: Any = ipaddress.ip_address(host)
    except ValueError:
        host_ip = None
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        if host_ip is not None:
            try:
                if host_ip in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
        entry = entry.lstrip(".")
        if host in (entry,) or host.endswith("." + entry) or host_and_port == entry \
                or host_and_port.endswith("." + entry):
            return True
    return False


def pool_manager(configuration: Any) -> urllib3.PoolManager:
    """The urllib3 pool manager ``kubernetes.client.rest.RESTClientObject`` builds from
    ``configuration``: TLS verification, CA (file or data), client certificate, hostname check,
    SNI (``tls_server_name``), retries, socket options or keepalive, pool size, and an HTTP(S)
    or SOCKS proxy unless ``no_proxy`` exempts the host."""
    pool_args: dict[str, Any] = {
        "cert_reqs": ssl.CERT_REQUIRED if configuration.verify_ssl else ssl.CERT_NONE,
        "ca_certs": configuration.ssl_ca_cert,
        "cert_file": configuration.cert_file,
        "key_file": configuration.key_file,
        "ca_cert_data": getattr(configuration, "ca_cert_data", None),
    }
    if configuration.assert_hostname is not None:
        pool_args["assert_hostname"] = configuration.assert_hostname
    if configuration.retries is not None:
        pool_args["retries"] = configuration.retries
    if getattr(configuration, "tls_server_name", None):
        pool_args["server_hostname"] = configuration.tls_server_name
    if getattr(configuration, "socket_options", None) is not None:
        pool_args["socket_options"] = configuration.socket_options
    elif getattr(configuration, "keep_alive", False):
        pool_args["socket_options"] = tcp_keepalive_socket_options()
    if configuration.connection_pool_maxsize is not None:
        pool_args["maxsize"] = configuration.connection_pool_maxsize
    proxy = configuration.proxy
    if proxy and not bypasses_proxy(configuration.host, getattr(configuration, "no_proxy", None) or ""):
        if proxy.split("://", 1)[0].lower() in SOCKS_PROXY_SCHEMES and "://" in proxy:
            from urllib3.contrib.socks import SOCKSProxyManager

            return SOCKSProxyManager(proxy_url=proxy, headers=configuration.proxy_headers, **pool_args)
        if getattr(configuration, "proxy_ssl_context", None) is not None:
            pool_args["proxy_ssl_context"] = configuration.proxy_ssl_context
        return urllib3.ProxyManager(proxy_url=proxy, proxy_headers=configuration.proxy_headers, **pool_args)
    return urllib3.PoolManager(**pool_args)


def encode_query(query: list[tuple[str, Any]]) -> str:
    """``k=v&...`` with each value percent-encoded (booleans as ``true``/``false``), as the
    official client's ``parameters_to_url_query``."""
    out = []
    for k, v in query:
        if isinstance(v, bool):
            v = str(v).lower()
        out.append(f"{k}={quote(str(v))}")
    return "&".join(out)


class Transport:
    """One connection pool to the API server and the request encoding of the official client:
    URL = ``configuration.host`` + path (+ ``?`` query), ``User-Agent``, the auth headers of
    ``configuration.auth_settings()`` (asked per request: it calls ``refresh_api_key_hook``,
    which renews exec-plugin, auth-provider and in-cluster tokens), a JSON body for every
    content type used here (JSON, merge, JSON and strategic merge patches, apply YAML)."""

    def __init__(self, configuration: Any, user_agent: str) -> None:
        self.configuration = configuration
        self.user_agent = user_agent
        self.pool = pool_manager(configuration)

    def auth_headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for setting in self.configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("type") != "http-signature" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    def request(self, method: str, path: str, query: list[tuple[str, Any]], headers: dict[str, str],
                body: Any = None, timeout: float | tuple[float, float] | None = None) -> Any:
        """The urllib3 response, body not read (``preload_content=False``)."""
        url = self.configuration.host + path
        if query:
            url += "?" + encode_query(query)
        hdrs = {"User-Agent": self.user_agent, **headers, **self.auth_headers()}
        if isinstance(timeout, tuple):
            to: urllib3.Timeout | None = urllib3.Timeout(connect=timeout[0], read=timeout[1])
        else:
            to = urllib3.Timeout(total=timeout) if timeout else None
        data = None if body is None else json.dumps(body)
        return self.pool.request(method, url, body=data, headers=hdrs, timeout=to, preload_content=False)

    def close(self) -> None:
        self.pool.clear()


def load_configuration(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """In-cluster config when running in a pod (and no kubeconfig is given), else the kubeconfig
    file (``kubeconfig``, ``$KUBECONFIG`` or ``~/.kube/config``): a ``kubernetes.client.Configuration``."""
    from titanium_gateway.kube.kubeconfig import load_configuration as load

    return load(kubeconfig, context)


class WatchStream(Iterator[Obj]):
    """The events of one watch; ``close()`` may be called from another thread to cut the
    connection (the reading thread then sees the stream end)."""

    def __init__(self, raw: Any, events: Iterator[Obj]) -> None:
        self._raw = raw
        self._events = events
        self.closed = False

    def __iter__(self) -> WatchStream:
        return self

    def __next__(self) -> Obj:
        try:
            return next(self._events)
        except WatchStreamError:
            if self.closed:
                raise StopIteration from None
            raise

    def close(self) -> None:
        self.closed = True
        shutdown = getattr(self._raw, "shutdown", None)
        try:
            if shutdown is not None:
                shutdown()
            else:
                self._raw.close()
        except Exception:  # noqa: BLE001 - best effort
            pass


class RestApi:
    """``KubeApi`` over HTTP.

    ``RestApi(configuration, qps=50, burst=100)`` uses a ``kubernetes.client.Configuration``
    (tests point one at a local server; it is copied, never modified);
    ``RestApi.from_kubeconfig(path)`` loads one. ``request_timeout`` bounds non-watch requests;
    watches use ``timeout_seconds`` + a margin as the read timeout, so a silent dead connection
    ends within that time.
    """

    def __init__(self, configuration: Any, *, qps: float = 50.0, burst: int = 100,
                 request_timeout: float = 30.0, connect_timeout: float = 10.0, watch_read_margin: float = 30.0,
                 registry: Registry | None = None, clock: Clock = REAL_CLOCK,
                 user_agent: str = "titanium-gateway") -> None:
        configuration = copy.deepcopy(configuration)
        # Pin the proxy as loaded (from the kubeconfig or the environment): the refresh hook
        # assigns ``host`` before every request, and while the proxy is "from the environment"
        # the client re-reads every environment variable on that assignment (~0.3 ms a request).
        # The public setter keeps the value and stops the re-reading.
        configuration.proxy = configuration.proxy
        if configuration.retries is None:
            # urllib3's default Retry(3) silently sleeps on 429/503 + Retry-After and retries: we
            # want the ApiError (with retry_after) so callers back off on their own terms.
            configuration.retries = False
        self.configuration = configuration
        self.user_agent = user_agent
        self.transport = Transport(configuration, user_agent)
        self.limiter = TokenBucket(qps, burst, clock)
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout
        self.watch_read_margin = watch_read_margin
        self.host = urlparse(configuration.host).netloc or configuration.host
        self._requests = rest_client_requests(registry)

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None, *, context: str | None = None,
                        **kwargs: Any) -> RestApi:
        return cls(load_configuration(kubeconfig, context), **kwargs)

    def close(self) -> None:
        self.transport.close()

    # --- transport ----------------------------------------------------------------------------
    def _send(self, method: str, path: str, query: list[tuple[str, Any]], body: Any = None,
              content_type: str | None = None, timeout: float | tuple[float, float] | None = None,
              accept: str = "application/json") -> Any:
        """Send one request; returns the urllib3 response (body unread) or raises ApiError."""
        self.limiter.accept()
        headers = {"Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        try:
            raw = self.transport.request(method, path, query, headers, body,
                                         timeout or (self.connect_timeout, self.request_timeout))
        except Exception:
            self._requests.labels(code="<error>", method=method, host=self.host).inc()
            raise
        self._requests.labels(code=str(raw.status), method=method, host=self.host).inc()
        if not 200 <= raw.status < 300:
            try:
                data = raw.data
            finally:
                raw.release_conn()
            raise api_error_from_response(raw.status, data or b"", raw.headers)
        return raw

    def _json(self, method: str, path: str, query: list[tuple[str, Any]] | None = None, body: Any = None,
              content_type: str | None = None, accept: str = "application/json") -> Obj:
        raw = self._send(method, path, query or [], body, content_type, accept=accept)
        try:
            data = raw.data
        finally:
            raw.release_conn()
        if not data:
            return {}
        out = json.loads(data)
        if not isinstance(out, dict):
            raise ValueError(f"{method} {path}: expected a JSON object, got {type(out).__name__}")
        return out

    # --- KubeApi --------------------------------------------------------------------------------
    def list(self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, resource_version: str | None = None,
             limit: int | None = None, continue_token: str | None = None) -> Obj:
        q: list[tuple[str, Any]] = []
        if label_selector:
            q.append(("labelSelector", label_selector))
        if field_selector:
            q.append(("fieldSelector", field_selector))
        if resource_version is not None:
            q.append(("resourceVersion", resource_version))
        if limit:
            q.append(("limit", int(limit)))
        if continue_token:
            q.append(("continue", continue_token))
        return self._json("GET", res.path(namespace), q)

    def watch(self, res: Resource, namespace: str | None = None, *, resource_version: str | None = None,
              label_selector: str | None = None, field_selector: str | None = None,
              timeout_seconds: int | None = None, allow_bookmarks: bool = True,
              send_initial_events: bool = False) -> Iterator[Obj]:
        q: list[tuple[str, Any]] = [("watch", "true")]
        if resource_version:
            q.append(("resourceVersion", resource_version))
        if label_selector:
            q.append(("labelSelector", label_selector))
        if field_selector:
            q.append(("fieldSelector", field_selector))
        if timeout_seconds:
            q.append(("timeoutSeconds", int(timeout_seconds)))
        if allow_bookmarks or send_initial_events:
            q.append(("allowWatchBookmarks", "true"))
        if send_initial_events:
            q += [("sendInitialEvents", "true"), ("resourceVersionMatch", "NotOlderThan")]
        read_timeout = (timeout_seconds or 1800) + self.watch_read_margin
        raw = self._send("GET", res.path(namespace), q, timeout=(self.connect_timeout, read_timeout))
        return WatchStream(raw, self._iter_events(raw))

    @staticmethod
    def _iter_events(raw: Any) -> Iterator[Obj]:
        buf = b""
        try:
            try:
                for chunk in raw.stream(amt=None, decode_content=True):
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if line.strip():
                            yield json.loads(line)
                if buf.strip():
                    yield json.loads(buf)
            except (TimeoutError, urllib3.exceptions.HTTPError, OSError, ValueError) as e:
                raise WatchStreamError(f"watch stream broke: {e}") from e
        finally:
            raw.release_conn()
            raw.close()

    def get(self, res: Resource, namespace: str | None, name: str, *, subresource: str | None = None) -> Obj:
        return self._json("GET", res.path(namespace, name, subresource))

    def create(self, res: Resource, namespace: str | None, body: Obj) -> Obj:
        return self._json("POST", res.path(namespace), body=body, content_type="application/json")

    def get_metadata(self, res: Resource, namespace: str | None, name: str) -> Obj:
        """The object's metadata only (a PartialObjectMetadata): a Secret's data never travels."""
        return self._json("GET", res.path(namespace, name),
                          accept="application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")

    def create_dry_run(self, res: Resource, namespace: str | None, body: Obj) -> Obj:
        """A create the API server runs through authorization and admission but never stores."""
        return self._json("POST", res.path(namespace), [("dryRun", "All")], body=body,
                          content_type="application/json")

    def replace(self, res: Resource, namespace: str | None, name: str, body: Obj, *,
                subresource: str | None = None) -> Obj:
        return self._json("PUT", res.path(namespace, name, subresource), body=body,
                          content_type="application/json")

    def patch(self, res: Resource, namespace: str | None, name: str, body: Any, *,
              patch_type: PatchType = "merge", subresource: str | None = None) -> Obj:
        if patch_type not in PATCH_CONTENT_TYPES:
            raise ValueError(f"unknown patch type {patch_type!r}")
        if patch_type == "strategic" and res.is_custom:
            raise StrategicPatchNotSupported(
                f"{res.kind} is a custom resource: use a merge or JSON patch, not a strategic merge patch")
        if patch_type == "json" and not isinstance(body, list):
            raise ValueError("a JSON patch is a list of operations")
        q: list[tuple[str, Any]] = []
        if patch_type == "apply":
            q.append(("fieldManager", self.user_agent or "titanium-gateway"))
        return self._json("PATCH", res.path(namespace, name, subresource), q, body=body,
                          content_type=PATCH_CONTENT_TYPES[patch_type])

    def delete(self, res: Resource, namespace: str | None, name: str) -> Obj:
        return self._json("DELETE", res.path(namespace, name))
