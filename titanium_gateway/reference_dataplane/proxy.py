"""The request path of the reference data plane: route, policies, transforms, forward.

For each request on a listener: the route is chosen by the contract library
(:func:`titanium_gateway.contract.decide`, first match in ascending ``order``, 404 when none),
its policies run in list order (a policy may answer itself; ``ExtAuth`` makes its GET
subrequest here), then the action: a redirect or a direct answer at once, or a forward: a
weighted route cluster, a destination by the cluster's algorithm (and affinity cookie), the
request transforms, an HTTP/1.1 request to the destination with the request's headers (less
the hop-by-hop ones) and its body streamed, the response streamed back after the response
transforms. A mirror gets a fire-and-forget copy. ``httpClient.requestTimeout`` bounds the wait
for the response headers, ``limits.requestTimeout`` the whole request; either answers 504.
Nothing else is added to the request (no ``X-Forwarded-*``; Host is forwarded as sent unless
``HostSet``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from titanium_gateway.contract.balancing import Balancer, affinity_value, choose_cluster
from titanium_gateway.contract.policies import (
    EXT_AUTH_UNAVAILABLE,
    Answer,
    AskExtAuth,
    FixedWindowLimiter,
    evaluate,
    ext_auth_admits,
)
from titanium_gateway.contract.routing import ForwardTo, NotFound, RedirectTo, Request, Respond, decide
from titanium_gateway.contract.transforms import apply_request_transforms, apply_response_transforms
from titanium_gateway.contract.values import (
    client_tls,
    route_timeout,
    seconds,
    tls_server_name,
    upstream_timeout,
)
from titanium_gateway.reference_dataplane.metrics import DataPlaneMetrics
from titanium_gateway.reference_dataplane.source import LoadedState
from titanium_gateway.twp import model as m

log = logging.getLogger("titanium.reference_dataplane.proxy")

#: Hop-by-hop headers (RFC 9110 7.6.1), never forwarded; names listed in Connection go too.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                        "upgrade"})
#: The body of a mirrored request is copied up to this size; a larger one is not mirrored.
MIRROR_BODY_LIMIT = 1 << 20
#: A mirrored request gives up after this long when its cluster sets no requestTimeout.
MIRROR_TIMEOUT = 30.0
#: The body of a relayed ExtAuth answer is kept up to this size.
EXT_AUTH_BODY_LIMIT = 1 << 20
CHUNK = 1 << 16
TEXT = ("Content-Type", "text/plain; charset=utf-8")

Headers = tuple[tuple[str, str], ...]


class ProxyResponse(web.StreamResponse):
    """A StreamResponse that sends the headers it is given: aiohttp's default ``Server`` and
    ``Content-Type`` are not added (``Date`` is, when missing, as RFC 9110 asks of a proxy)."""

    async def _prepare_headers(self) -> None:
        had_server = "Server" in self.headers
        had_type = "Content-Type" in self.headers
        await super()._prepare_headers()
        if not had_server:
            self.headers.popall("Server", None)
        if not had_type:
            self.headers.popall("Content-Type", None)


def end_to_end(headers: Headers) -> Headers:
    listed = set()
    for k, v in headers:
        if k.lower() == "connection":
            listed.update(t.strip().lower() for t in v.split(","))
    drop = HOP_BY_HOP | listed
    return tuple((k, v) for k, v in headers if k.lower() not in drop)


def _decode(raw: tuple[tuple[bytes, bytes], ...]) -> Headers:
    return tuple((k.decode("utf-8", "replace"), v.decode("utf-8", "replace")) for k, v in raw)


def request_cookie(request: Request, name: str) -> str | None:
    for k, v in request.headers:
        if k.lower() != "cookie":
            continue
        for part in v.split(";"):
            key, eq, value = part.strip().partition("=")
            if eq and key == name:
                return value.strip().strip('"')
    return None


@dataclass
class Exchange:
    """One request in flight."""

    listener: m.Listener
    request: web.BaseRequest
    req: Request
    state: LoadedState
    started: float
    route: m.Route | None = None
    response: web.StreamResponse | None = None
    status: int = 0


class Host(Protocol):
    """What the proxy uses of the data plane that runs it (``server.DataPlane``): the loaded
    config, the shared balancer, rate limiter, upstream session and metrics, the access log."""

    state: LoadedState | None
    balancer: Balancer
    limiter: FixedWindowLimiter
    session: aiohttp.ClientSession
    metrics: DataPlaneMetrics
    access_log: bool

    def write_access_log(self, line: str) -> None: ...


class Proxy:
    def __init__(self, dataplane: Host, rnd: random.Random | None = None) -> None:
        self.dp = dataplane
        self.rnd = rnd or random.Random()
        self._mirror_tasks: set[asyncio.Task] = set()

    # -- entry ---------------------------------------------------------------------------
    async def handle(self, listener: m.Listener, request: web.BaseRequest) -> web.StreamResponse:
        state = self.dp.state
        loop_start = time.monotonic()
        if state is None:  # listeners are bound only once a config is loaded
            return await self._send(None, request, 503, (TEXT,), b"no config loaded\n")
        target = request.raw_path
        if target.startswith(("http://", "https://")):  # absolute-form
            parts = urlsplit(target)
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = _decode(request.raw_headers)
        peer = request.transport.get_extra_info("peername") if request.transport else None
        req = Request.from_target(request.method, target, headers, client_address=str(peer[0]) if peer else "",
                                  scheme="https" if listener.decrypt_ssl else "http", port=listener.port)
        ex = Exchange(listener, request, req, state, loop_start)
        try:
            decision = decide(state.config, req, all_matches=False)
            ex.route = decision.route
            timeout = route_timeout(ex.route) if ex.route is not None else None
            work = self._answer(ex, decision.outcome)
            if timeout is None:
                await work
            else:
                try:
                    await asyncio.wait_for(work, timeout)
                except asyncio.TimeoutError:
                    if ex.response is None:
                        await self._send(ex, request, 504, (TEXT,), b"request timeout\n")
                    else:
                        self._abort(ex)
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            ex.status = ex.status or 499
        except Exception:
            log.exception("request %s %s failed", req.method, target)
            if ex.response is None:
                await self._send(ex, request, 500, (TEXT,), b"internal error\n")
            else:
                self._abort(ex)
        finally:
            self._record(ex)
        return ex.response if ex.response is not None else web.Response(status=500)

    def _record(self, ex: Exchange) -> None:
        elapsed = time.monotonic() - ex.started
        port = str(ex.listener.port)
        self.dp.metrics.requests.labels(port, str(ex.status)).inc()
        self.dp.metrics.request_seconds.labels(port).observe(elapsed)
        if self.dp.access_log:
            rid = ex.route.id if ex.route is not None else "-"
            self.dp.write_access_log(f"{ex.req.method} {ex.req.host or '-'} {ex.req.path}"
                                     f"{'?' + ex.req.query if ex.req.query else ''} route={rid} "
                                     f"status={ex.status} {elapsed * 1000:.1f}ms")

    # -- answers -------------------------------------------------------------------------
    async def _send(self, ex: Exchange | None, request: web.BaseRequest, status: int, headers: Headers,
                    body: bytes, reason: str | None = None) -> web.StreamResponse:
        resp = ProxyResponse(status=status, reason=reason, headers=CIMultiDict(headers))
        resp.headers["Content-Length"] = str(len(body))
        if ex is not None:
            ex.response, ex.status = resp, status
        await resp.prepare(request)
        if body:
            await resp.write(body)
        await resp.write_eof()
        return resp

    def _abort(self, ex: Exchange) -> None:
        if ex.request.transport is not None:
            ex.request.transport.close()

    async def _answer(self, ex: Exchange, outcome: Any) -> None:
        route = ex.route
        if route is None or isinstance(outcome, NotFound):
            await self._send(ex, ex.request, 404, (TEXT,), NotFound().body.encode())
            return
        for policy in route.behavior.policies:
            verdict = evaluate(policy, ex.req, limiter=self.dp.limiter, now=time.monotonic())
            if isinstance(verdict, AskExtAuth):
                verdict = await self._ext_auth(ex, verdict.policy)
            if verdict is not None:
                self.dp.metrics.policy_answers.labels(verdict.policy or policy.KIND, str(verdict.status)).inc()
                await self._send(ex, ex.request, verdict.status, verdict.headers, verdict.body.encode()
                                 if isinstance(verdict.body, str) else verdict.body)
                return
        if isinstance(outcome, RedirectTo):
            await self._send(ex, ex.request, outcome.status, (("Location", outcome.location),), b"")
        elif isinstance(outcome, Respond):
            await self._send(ex, ex.request, outcome.status, (("Content-Type", outcome.content_type),),
                             outcome.body.encode())
        elif isinstance(outcome, ForwardTo):
            await self._forward(ex, outcome)

    # -- ExtAuth -------------------------------------------------------------------------
    async def _ext_auth(self, ex: Exchange, policy: m.ExtAuth) -> Answer | None:
        skip = {"host", "content-length", "expect"}
        headers = [(k, v) for k, v in end_to_end(ex.req.headers) if k.lower() not in skip]
        resp = None
        try:
            resp = await asyncio.wait_for(self.dp.session.request(
                "GET", URL(policy.url, encoded=True), headers=CIMultiDict(headers), allow_redirects=False,
                ssl=ex.state.client_contexts[None] if policy.url.startswith("https:") else None), seconds(policy.timeout))
            if ext_auth_admits(resp.status):
                return None
            body = await asyncio.wait_for(_read_bounded(resp.content, EXT_AUTH_BODY_LIMIT), seconds(policy.timeout))
            relayed = tuple((k, v) for k, v in end_to_end(_decode(resp.raw_headers)) if k.lower() != "content-length")
            return Answer(resp.status, relayed, body, "ExtAuth")  # type: ignore[arg-type]
        except (asyncio.TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            log.debug("ExtAuth %s failed: %r", policy.url, exc)
            return EXT_AUTH_UNAVAILABLE
        finally:
            if resp is not None:
                resp.close()

    # -- forwarding ----------------------------------------------------------------------
    async def _forward(self, ex: Exchange, outcome: ForwardTo) -> None:
        config, route = ex.state.config, ex.route
        assert route is not None
        cluster_id = choose_cluster(outcome.clusters, self.rnd)
        if cluster_id is None:
            await self._send(ex, ex.request, 503, (TEXT,), b"no backend takes traffic for this route\n")
            return
        cluster = config.clusters[cluster_id]
        affinity = cluster.session_affinity
        cookie = request_cookie(ex.req, affinity.name) if affinity is not None else None
        dest = self.dp.balancer.pick(cluster, cookie)
        if dest is None:
            await self._send(ex, ex.request, 503, (TEXT,), f"cluster {cluster.id} has no destinations\n".encode())
            return
        path, headers = apply_request_transforms(route.behavior.transforms, ex.req.path, end_to_end(ex.req.headers))
        headers = tuple((k, v) for k, v in headers if k.lower() != "expect")
        mirror = self._mirror_target(ex, route)
        request = ex.request
        has_body = request.body_exists
        if has_body and (ex.req.header("expect") or "").lower() == "100-continue":
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        tee = _BodyTee(request.content, mirror is not None) if has_body else None
        if mirror is not None:
            self._start_mirror(ex, mirror, path, headers, tee)
        url = _url(dest, path, ex.req.query)
        ssl_ctx = ex.state.client_contexts.get(client_tls(cluster)) if dest.use_https else None
        server_name = tls_server_name(cluster) if dest.use_https else None
        metrics = self.dp.metrics
        self.dp.balancer.started(cluster, dest)
        sent = time.monotonic()
        resp: aiohttp.ClientResponse | None = None
        headers_time: float | None = None
        try:
            try:
                pending = self.dp.session.request(request.method, url, headers=CIMultiDict(headers),
                                                  data=tee.chunks() if tee is not None else None,
                                                  allow_redirects=False, ssl=ssl_ctx if ssl_ctx else True,
                                                  server_hostname=server_name)
                limit = upstream_timeout(cluster)
                resp = await (asyncio.wait_for(pending, limit) if limit is not None else pending)
            except asyncio.TimeoutError:
                metrics.upstream.labels(cluster.id, "timeout").inc()
                await self._send(ex, request, 504, (TEXT,), b"upstream timeout\n")
                return
            except (aiohttp.ClientError, OSError, ValueError) as exc:
                metrics.upstream.labels(cluster.id, "error").inc()
                log.debug("forwarding to %s (%s) failed: %r", dest.id, cluster.id, exc)
                await self._send(ex, request, 502, (TEXT,), b"upstream connection failed\n")
                return
            headers_time = time.monotonic() - sent
            metrics.upstream.labels(cluster.id, "response").inc()
            await self._relay(ex, resp, route, affinity, cookie, dest)
        finally:
            self.dp.balancer.finished(cluster, dest, headers_time)
            if tee is not None:
                tee.close()
            if resp is not None:
                resp.close()

    async def _relay(self, ex: Exchange, resp: aiohttp.ClientResponse, route: m.Route,
                     affinity: m.SessionAffinity | None, cookie: str | None, dest: m.Destination) -> None:
        headers = end_to_end(_decode(resp.raw_headers))
        headers = apply_response_transforms(route.behavior.transforms, headers)
        if affinity is not None:
            value = affinity_value(dest)
            if cookie != value:
                headers = (*headers, ("Set-Cookie", f"{affinity.name}={value}; Path=/; HttpOnly"))
        out = ProxyResponse(status=resp.status, reason=resp.reason, headers=CIMultiDict(headers))
        ex.response, ex.status = out, resp.status
        await out.prepare(ex.request)
        try:
            async for chunk in resp.content.iter_chunked(CHUNK):
                await out.write(chunk)
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError,
                asyncio.IncompleteReadError) as exc:
            log.debug("the upstream response of %s ended early: %r", dest.id, exc)
            self._abort(ex)
            return
        await out.write_eof()

    # -- mirror --------------------------------------------------------------------------
    def _mirror_target(self, ex: Exchange, route: m.Route) -> tuple[m.Cluster, m.Destination] | None:
        mirror = route.behavior.mirror
        if mirror is None or self.rnd.random() * 100 >= mirror.percent:
            return None
        cluster = ex.state.config.clusters[mirror.cluster_id]
        dest = self.dp.balancer.pick(cluster)
        if dest is None:
            self.dp.metrics.mirrors.labels("dropped").inc()
            return None
        return cluster, dest

    def _start_mirror(self, ex: Exchange, target: tuple[m.Cluster, m.Destination], path: str, headers: Headers,
                      tee: _BodyTee | None) -> None:
        task = asyncio.get_running_loop().create_task(self._mirror(ex, target, path, headers, tee))
        self._mirror_tasks.add(task)
        task.add_done_callback(self._mirror_tasks.discard)

    async def _mirror(self, ex: Exchange, target: tuple[m.Cluster, m.Destination], path: str, headers: Headers,
                      tee: _BodyTee | None) -> None:
        cluster, dest = target
        metrics = self.dp.metrics
        body: bytes | None = None
        if tee is not None:
            body = await tee.copy()
            if body is None:
                metrics.mirrors.labels("dropped").inc()
                return
        ssl_ctx = ex.state.client_contexts.get(client_tls(cluster)) if dest.use_https else None
        mirror_headers = CIMultiDict((k, v) for k, v in headers if k.lower() != "content-length")
        self.dp.balancer.started(cluster, dest)
        try:
            resp = await asyncio.wait_for(
                self.dp.session.request(ex.request.method, _url(dest, path, ex.req.query), headers=mirror_headers,
                                        data=body, allow_redirects=False, ssl=ssl_ctx if ssl_ctx else True,
                                        server_hostname=tls_server_name(cluster) if dest.use_https else None),
                upstream_timeout(cluster) or MIRROR_TIMEOUT)
            resp.close()
            metrics.mirrors.labels("sent").inc()
        except (asyncio.TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            log.debug("mirror to %s failed: %r", dest.id, exc)
            metrics.mirrors.labels("failed").inc()
        finally:
            self.dp.balancer.finished(cluster, dest)

    async def close(self) -> None:
        for task in list(self._mirror_tasks):
            task.cancel()
        for task in list(self._mirror_tasks):
            with contextlib.suppress(BaseException):
                await task


async def _read_bounded(content: aiohttp.StreamReader, limit: int) -> bytes:
    """The body up to ``limit`` bytes (the rest is not read)."""
    buf = bytearray()
    while len(buf) < limit:
        chunk = await content.read(limit - len(buf))
        if not chunk:
            break
        buf += chunk
    return bytes(buf)


def _url(dest: m.Destination, path: str, query: str) -> URL:
    host = f"[{dest.address}]" if ":" in dest.address else dest.address
    scheme = "https" if dest.use_https else "http"
    return URL(f"{scheme}://{host}:{dest.port}{path}{'?' + query if query else ''}", encoded=True)


class _BodyTee:
    """The request body streamed to the destination, copied (up to MIRROR_BODY_LIMIT) for a mirror."""

    def __init__(self, content: aiohttp.StreamReader, keep_copy: bool) -> None:
        self._content = content
        self._copy: bytearray | None = bytearray() if keep_copy else None
        self._done = asyncio.get_running_loop().create_future()

    async def chunks(self):
        complete = False
        try:
            while True:
                chunk = await self._content.read(CHUNK)
                if not chunk:
                    complete = True
                    break
                if self._copy is not None:
                    if len(self._copy) + len(chunk) > MIRROR_BODY_LIMIT:
                        self._copy = None
                    else:
                        self._copy += chunk
                yield chunk
        finally:
            if not self._done.done():
                self._done.set_result(bytes(self._copy) if complete and self._copy is not None else None)

    def close(self) -> None:
        """The forward is over: a mirror still waiting for the body gets none."""
        if not self._done.done():
            self._done.set_result(None)

    async def copy(self) -> bytes | None:
        """The whole body once it was read (None: too large, or not read to its end)."""
        return await self._done
