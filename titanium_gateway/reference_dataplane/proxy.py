"""The request path of the reference data plane: route, policies, transforms, forward.

For each request on a listener: the route is chosen by the contract library
(:func:`titanium_gateway.contract.decide`, first match in ascending ``order``, 404 when none),
its policies run in list order (a policy may answer itself; ``ExtAuth`` makes its GET
subrequest here), then the action: a redirect or a direct answer at once, or a forward: a
weighted route cluster, a destination by the cluster's algorithm (and affinity cookie), the
request transforms, a request to the destination with the request's headers (less the
hop-by-hop ones) and its body streamed, the response streamed back after the response
transforms (with its trailers, over HTTP/2). The client's protocol decides the destination's:
HTTP/1.1 for an HTTP/1.1 client, HTTP/2 for an HTTP/2 one (h2c to a plain destination, h2 to a
``useHttps`` one; HTTP/1.1 where the destination does not speak HTTP/2). An HTTP/1.1
``Upgrade: websocket`` is passed through: after the destination's 101, bytes flow both ways.
The same steps serve both protocols: a :class:`~.downstream.Downstream` is the client side of
one request. A mirror gets a fire-and-forget copy. ``httpClient.requestTimeout`` bounds the wait
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
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp
import h2.exceptions
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
from titanium_gateway.reference_dataplane.downstream import Downstream, H1Downstream, H2Downstream
from titanium_gateway.reference_dataplane.h2client import HTTP1_MEMORY, H2Pool, NotHttp2, h2_request_head
from titanium_gateway.reference_dataplane.h2conn import Stream, StreamReset
from titanium_gateway.reference_dataplane.http1 import (
    H1Response,
    decode_raw,
    end_to_end,
    tunnel,
    websocket_upgrade,
)
from titanium_gateway.reference_dataplane.metrics import DataPlaneMetrics
from titanium_gateway.reference_dataplane.source import LoadedState
from titanium_gateway.twp import model as m

log = logging.getLogger("titanium.reference_dataplane.proxy")

#: The body of a mirrored request is copied up to this size; a larger one is not mirrored.
MIRROR_BODY_LIMIT = 1 << 20
#: A mirrored request gives up after this long when its cluster sets no requestTimeout.
MIRROR_TIMEOUT = 30.0
#: The body of a relayed ExtAuth answer is kept up to this size.
EXT_AUTH_BODY_LIMIT = 1 << 20
CHUNK = 1 << 16
TEXT = ("Content-Type", "text/plain; charset=utf-8")

#: A destination that cannot be reached, or fails before its response head: 502.
UPSTREAM_ERRORS = (aiohttp.ClientError, OSError, ValueError, StreamReset, h2.exceptions.ProtocolError)
#: A destination's response body that ends abnormally: the client's response is aborted.
UPSTREAM_BODY_ERRORS = (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError,
                        asyncio.IncompleteReadError, StreamReset, ConnectionError)

Headers = tuple[tuple[str, str], ...]


class Upstream(Protocol):
    """A destination's response (``http1.H1Response`` or ``h2client.H2Response``): its head,
    then its body and trailers; ``close()`` when done (an unfinished HTTP/2 stream is reset)."""

    status: int
    reason: str | None
    headers: Headers
    head_only: bool

    def chunks(self) -> AsyncIterator[bytes]: ...

    @property
    def trailers(self) -> Headers: ...

    def close(self) -> None: ...


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
    down: Downstream
    req: Request
    state: LoadedState
    started: float
    route: m.Route | None = None
    status: int = 0
    #: a WebSocket upgrade the destination accepted: the bytes relayed after the route's timeout
    tunnel: tuple[web.BaseRequest, aiohttp.ClientResponse] | None = None


class Host(Protocol):
    """What the proxy uses of the data plane that runs it (``server.DataPlane``): the loaded
    config, the shared balancer, rate limiter, upstream session and HTTP/2 pool, metrics, the
    access log."""

    state: LoadedState | None
    balancer: Balancer
    limiter: FixedWindowLimiter
    session: aiohttp.ClientSession
    h2pool: H2Pool
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
        """An HTTP/1.1 request (aiohttp's handler)."""
        target = request.raw_path
        if target.startswith(("http://", "https://")):  # absolute-form
            parts = urlsplit(target)
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        down = H1Downstream(request, target, decode_raw(request.raw_headers))
        await self.serve(listener, down)
        return down.response if down.response is not None else web.Response(status=500)

    async def handle_h2(self, listener: m.Listener, stream: Stream, peer: str) -> None:
        """An HTTP/2 stream (the listener's HTTP/2 connection runs one per stream)."""
        await self.serve(listener, H2Downstream(stream, peer))

    async def serve(self, listener: m.Listener, down: Downstream) -> None:
        state = self.dp.state
        loop_start = time.monotonic()
        if state is None:  # listeners are bound only once a config is loaded
            await _reply(down, 503, (TEXT,), b"no config loaded\n")
            return
        req = Request.from_target(down.method, down.target, down.headers, client_address=down.peer,
                                  scheme="https" if listener.decrypt_ssl else "http", port=listener.port)
        ex = Exchange(listener, down, req, state, loop_start)
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
                    if not down.started:
                        await self._send(ex, 504, (TEXT,), b"request timeout\n")
                    else:
                        down.abort()
            if ex.tunnel is not None:
                await tunnel(*ex.tunnel)
        except (ConnectionError, aiohttp.ClientConnectionResetError, StreamReset):  # the client left
            ex.status = ex.status or 499
        except asyncio.CancelledError:  # an HTTP/2 client reset its stream, or left
            ex.status = ex.status or 499
            raise
        except Exception:
            log.exception("request %s %s failed", req.method, down.target)
            if not down.started:
                with contextlib.suppress(Exception):
                    await self._send(ex, 500, (TEXT,), b"internal error\n")
            else:
                down.abort()
        finally:
            if ex.tunnel is not None:
                ex.tunnel[1].close()
            self._record(ex)

    def _record(self, ex: Exchange) -> None:
        elapsed = time.monotonic() - ex.started
        port = str(ex.listener.port)
        self.dp.metrics.requests.labels(port, str(ex.status)).inc()
        self.dp.metrics.request_seconds.labels(port).observe(elapsed)
        if self.dp.access_log:
            rid = ex.route.id if ex.route is not None else "-"
            self.dp.write_access_log(f"{ex.req.method} {ex.req.host or '-'} {ex.req.path}"
                                     f"{'?' + ex.req.query if ex.req.query else ''} route={rid} "
                                     f"status={ex.status} {elapsed * 1000:.1f}ms{' HTTP/2' if ex.down.http2 else ''}")

    # -- answers -------------------------------------------------------------------------
    async def _send(self, ex: Exchange, status: int, headers: Headers, body: bytes, reason: str | None = None) -> None:
        ex.status = status
        await _reply(ex.down, status, headers, body, reason)

    async def _answer(self, ex: Exchange, outcome: Any) -> None:
        route = ex.route
        if route is None or isinstance(outcome, NotFound):
            await self._send(ex, 404, (TEXT,), NotFound().body.encode())
            return
        for policy in route.behavior.policies:
            verdict = evaluate(policy, ex.req, limiter=self.dp.limiter, now=time.monotonic())
            if isinstance(verdict, AskExtAuth):
                verdict = await self._ext_auth(ex, verdict.policy)
            if verdict is not None:
                self.dp.metrics.policy_answers.labels(verdict.policy or policy.KIND, str(verdict.status)).inc()
                await self._send(ex, verdict.status, verdict.headers, verdict.body.encode()
                                 if isinstance(verdict.body, str) else verdict.body)
                return
        if isinstance(outcome, RedirectTo):
            await self._send(ex, outcome.status, (("Location", outcome.location),), b"")
        elif isinstance(outcome, Respond):
            await self._send(ex, outcome.status, (("Content-Type", outcome.content_type),), outcome.body.encode())
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
            relayed = tuple((k, v) for k, v in end_to_end(decode_raw(resp.raw_headers)) if k.lower() != "content-length")
            return Answer(resp.status, relayed, body, "ExtAuth")  # type: ignore[arg-type]
        except (asyncio.TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            log.debug("ExtAuth %s failed: %r", policy.url, exc)
            return EXT_AUTH_UNAVAILABLE
        finally:
            if resp is not None:
                resp.close()

    # -- forwarding ----------------------------------------------------------------------
    async def _forward(self, ex: Exchange, outcome: ForwardTo) -> None:
        config, route, down = ex.state.config, ex.route, ex.down
        assert route is not None
        cluster_id = choose_cluster(outcome.clusters, self.rnd)
        if cluster_id is None:
            await self._send(ex, 503, (TEXT,), b"no backend takes traffic for this route\n")
            return
        cluster = config.clusters[cluster_id]
        affinity = cluster.session_affinity
        cookie = request_cookie(ex.req, affinity.name) if affinity is not None else None
        dest = self.dp.balancer.pick(cluster, cookie)
        if dest is None:
            await self._send(ex, 503, (TEXT,), f"cluster {cluster.id} has no destinations\n".encode())
            return
        upgrade = None if down.http2 else websocket_upgrade(ex.req)
        path, headers = apply_request_transforms(route.behavior.transforms, ex.req.path,
                                                 end_to_end(ex.req.headers, keep_te_trailers=down.http2))
        headers = tuple((k, v) for k, v in headers if k.lower() != "expect")
        if upgrade is not None:
            headers = (*headers, ("Connection", "Upgrade"), ("Upgrade", upgrade))
        mirror = self._mirror_target(ex, route) if upgrade is None else None
        has_body = down.has_body
        if has_body and (ex.req.header("expect") or "").lower() == "100-continue":
            await down.continue_100()
        tee = _BodyTee(down.body(), mirror is not None) if has_body else None
        if mirror is not None:
            self._start_mirror(ex, mirror, path, headers, tee)
        metrics = self.dp.metrics
        self.dp.balancer.started(cluster, dest)
        sent = time.monotonic()
        resp: Upstream | None = None
        headers_time: float | None = None
        try:
            try:
                pending = self._upstream(ex, cluster, dest, path, headers, tee.chunks() if tee is not None else None)
                limit = upstream_timeout(cluster)
                resp = await (asyncio.wait_for(pending, limit) if limit is not None else pending)
            except asyncio.TimeoutError:
                metrics.upstream.labels(cluster.id, "timeout").inc()
                await self._send(ex, 504, (TEXT,), b"upstream timeout\n")
                return
            except UPSTREAM_ERRORS as exc:
                metrics.upstream.labels(cluster.id, "error").inc()
                log.debug("forwarding to %s (%s) failed: %r", dest.id, cluster.id, exc)
                await self._send(ex, 502, (TEXT,), b"upstream connection failed\n")
                return
            headers_time = time.monotonic() - sent
            metrics.upstream.labels(cluster.id, "response").inc()
            if upgrade is not None and resp.status == 101 and isinstance(resp, H1Response):
                await self._switch(ex, resp)
                resp = None  # (closed once the tunnel ends)
                return
            await self._relay(ex, resp, route, affinity, cookie, dest)
        finally:
            self.dp.balancer.finished(cluster, dest, headers_time)
            if tee is not None:
                tee.close()
            if resp is not None:
                resp.close()

    async def _upstream(self, ex: Exchange, cluster: m.Cluster, dest: m.Destination, path: str, headers: Headers,
                        body: AsyncIterator[bytes] | None) -> Upstream:
        """The destination's response head: over HTTP/2 when the client speaks it and the
        destination does, else over HTTP/1.1."""
        tls = client_tls(cluster)
        server_name = tls_server_name(cluster) if dest.use_https else None
        if ex.down.http2:
            ctx = ex.state.h2_client_contexts.get(tls) if dest.use_https else None
            pool = self.dp.h2pool
            key = pool.key(dest.address, dest.port, ctx, server_name)
            if not pool.http1_only(key):
                try:
                    return await pool.request(key, ctx, server_name, h2_request_head(
                        ex.req.method, "https" if dest.use_https else "http", path, ex.req.query, headers), body)
                except NotHttp2 as exc:
                    log.info("destination %s does not speak HTTP/2 (%s): HTTP/1.1 for %.0f s", dest.id, exc,
                             HTTP1_MEMORY)
            headers = tuple((k, v) for k, v in headers if k.lower() != "te")
        ssl_ctx = ex.state.client_contexts.get(tls) if dest.use_https else None
        resp = await self.dp.session.request(ex.req.method, _url(dest, path, ex.req.query),
                                             headers=CIMultiDict(headers), data=body, allow_redirects=False,
                                             ssl=ssl_ctx if ssl_ctx else True, server_hostname=server_name)
        return H1Response(resp)

    async def _relay(self, ex: Exchange, resp: Upstream, route: m.Route, affinity: m.SessionAffinity | None,
                     cookie: str | None, dest: m.Destination) -> None:
        headers = apply_response_transforms(route.behavior.transforms, resp.headers)
        if affinity is not None:
            value = affinity_value(dest)
            if cookie != value:
                headers = (*headers, ("Set-Cookie", f"{affinity.name}={value}; Path=/; HttpOnly"))
        down = ex.down
        ex.status = resp.status
        if resp.head_only:  # (an HTTP/2 response that ended with its head, as a gRPC error does)
            await down.respond(resp.status, headers, end=True)
            return
        await down.respond(resp.status, headers, resp.reason)
        try:
            async for chunk in resp.chunks():
                await down.write(chunk)
        except UPSTREAM_BODY_ERRORS as exc:
            log.debug("the upstream response of %s ended early: %r", dest.id, exc)
            down.abort(exc.code if isinstance(exc, StreamReset) else None)  # (a destination's reset, relayed)
            return
        await down.finish(resp.trailers)

    async def _switch(self, ex: Exchange, resp: H1Response) -> None:
        """Relay the destination's 101 to the client; the bytes flow once the answer is done."""
        assert isinstance(ex.down, H1Downstream)
        ex.status = 101
        headers = (*resp.headers, ("Connection", "Upgrade"), ("Upgrade", resp.upgrade or "websocket"))
        await ex.down.respond(101, headers, resp.reason)
        ex.tunnel = (ex.down.request, resp.resp)

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
        """A copy of the request, in the client's protocol like the forward; its answer is discarded."""
        cluster, dest = target
        metrics = self.dp.metrics
        body: bytes | None = None
        if tee is not None:
            body = await tee.copy()
            if body is None:
                metrics.mirrors.labels("dropped").inc()
                return
        mirror_headers = tuple((k, v) for k, v in headers if k.lower() != "content-length")
        if body is not None:
            mirror_headers = (*mirror_headers, ("Content-Length", str(len(body))))
        self.dp.balancer.started(cluster, dest)
        resp: Upstream | None = None
        try:
            resp = await asyncio.wait_for(
                self._upstream(ex, cluster, dest, path, mirror_headers, _once(body) if body is not None else None),
                upstream_timeout(cluster) or MIRROR_TIMEOUT)
            metrics.mirrors.labels("sent").inc()
        except (asyncio.TimeoutError, *UPSTREAM_ERRORS) as exc:
            log.debug("mirror to %s failed: %r", dest.id, exc)
            metrics.mirrors.labels("failed").inc()
        finally:
            self.dp.balancer.finished(cluster, dest)
            if resp is not None:
                resp.close()

    async def close(self) -> None:
        for task in list(self._mirror_tasks):
            task.cancel()
        for task in list(self._mirror_tasks):
            with contextlib.suppress(BaseException):
                await task


async def _reply(down: Downstream, status: int, headers: Headers, body: bytes, reason: str | None = None) -> None:
    """An answer the data plane makes itself."""
    await down.respond(status, (*headers, ("Content-Length", str(len(body)))), reason, end=not body)
    if body:
        await down.write(body)
        await down.finish()


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body


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

    def __init__(self, source: AsyncIterator[bytes], keep_copy: bool) -> None:
        self._source = source
        self._copy: bytearray | None = bytearray() if keep_copy else None
        self._done = asyncio.get_running_loop().create_future()

    async def chunks(self):
        complete = False
        try:
            async for chunk in self._source:
                if self._copy is not None:
                    if len(self._copy) + len(chunk) > MIRROR_BODY_LIMIT:
                        self._copy = None
                    else:
                        self._copy += chunk
                yield chunk
            complete = True
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
