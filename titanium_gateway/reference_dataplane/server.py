"""The reference data plane: admin port, listeners, config reloads.

Each listener serves HTTP/1.1 (aiohttp) and HTTP/2 (``h2server``): h2c with prior knowledge on
a plain listener, h2 by ALPN on a decrypting one.

``DataPlane(config_dir, ...)``: ``await start()`` serves the admin port at once (``/readyz``
503 until a config is loaded), loads the config directory, binds the listeners of the first
config that loads (``--bind-address`` replaces ``0.0.0.0``) and polls the directory for
changes. Listeners are bound once: a later config with another listener set is logged, not
applied (the contract rolls the pods for that). ``stop()`` (SIGTERM) drains: ``/readyz``
answers 503 from its first moment, the listeners stop accepting, requests in flight are answered
(up to ``shutdown_timeout`` s), idle keep-alive connections are closed, then the admin port.
``run_in_thread()`` runs one in a background thread (tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import random
import sys
import threading
from collections.abc import Callable
from functools import partial
from typing import TextIO

import aiohttp
from aiohttp import web

from titanium_gateway import __version__
from titanium_gateway.contract.balancing import Balancer
from titanium_gateway.contract.policies import FixedWindowLimiter
from titanium_gateway.reference_dataplane.h2client import H2Pool
from titanium_gateway.reference_dataplane.h2server import H2ServerConnection, ListenerProtocol
from titanium_gateway.reference_dataplane.metrics import CONTENT_TYPE_LATEST, DataPlaneMetrics
from titanium_gateway.reference_dataplane.proxy import Proxy
from titanium_gateway.reference_dataplane.source import ConfigSource, LoadedState
from titanium_gateway.reference_dataplane.tls import listener_context
from titanium_gateway.twp import model as m

log = logging.getLogger("titanium.reference_dataplane")

VERSION = f"{__version__}-reference"
TOKEN_ENV = "TITANIUM_ADMIN_TOKEN"
#: Headers the upstream client never makes up (the request's own are forwarded as they are).
_NO_AUTO_HEADERS = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")


class DataPlane:
    def __init__(self, config_dir: str | os.PathLike[str], *, admin_port: int = 9901, bind_address: str | None = None,
                 admin_address: str | None = None, admin_token: str | None = None, access_log: bool = False, poll_interval: float = 0.05,
                 rnd: random.Random | None = None, out: TextIO | None = None, shutdown_timeout: float = 15.0) -> None:
        self.source = ConfigSource(config_dir)
        self.admin_port = admin_port
        self.bind_address = bind_address
        self.admin_address = admin_address or bind_address or "0.0.0.0"
        self.admin_token = admin_token if admin_token is not None else os.environ.get(TOKEN_ENV, "")
        self.access_log = access_log
        self.poll_interval = poll_interval
        self.out = out or sys.stdout
        self.state: LoadedState | None = None
        self.metrics = DataPlaneMetrics()
        self.balancer = Balancer(rnd)
        self.limiter = FixedWindowLimiter()
        self.proxy = Proxy(self, rnd)
        self.session: aiohttp.ClientSession = None  # type: ignore[assignment]  # made in start()
        self.h2pool: H2Pool = None  # type: ignore[assignment]  # made in start()
        self._servers: list[asyncio.Server] = []
        self._h2_connections: set[H2ServerConnection] = set()
        #: config listener port -> (address, bound port) once bound
        self.bound: dict[int, tuple[str, int]] = {}
        self.bound_listeners: frozenset[tuple[str, int, bool]] | None = None
        self.fatal: str | None = None
        self.draining = False
        self.shutdown_timeout = shutdown_timeout
        self.stopped: asyncio.Event | None = None  # made in start()
        self._runners: list[web.BaseRunner] = []
        self._admin_runner: web.AppRunner | None = None
        self._poll_task: asyncio.Task | None = None
        self._warned_listeners: frozenset | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        self.stopped = asyncio.Event()
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=False, skip_auto_headers=_NO_AUTO_HEADERS,
            timeout=aiohttp.ClientTimeout(total=None), trust_env=False)
        self.h2pool = H2Pool()
        await self._start_admin()
        await self.poll(force=True)
        self._poll_task = asyncio.get_running_loop().create_task(self._poll_loop())

    async def stop(self) -> None:
        if not self.draining and self.bound_listeners is not None:
            log.info("draining: readyz 503, listeners closed, waiting for requests in flight")
        self.draining = True
        if self._poll_task is not None:
            self._poll_task.cancel()
            with contextlib.suppress(BaseException):
                await self._poll_task
        for server in self._servers:  # no new connection; the requests in flight are answered
            server.close()
        await asyncio.gather(*(conn.shutdown(self.shutdown_timeout) for conn in list(self._h2_connections)),
                             *(runner.cleanup() for runner in self._runners))
        self._h2_connections.clear()
        self._runners.clear()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        self._servers.clear()
        if self._admin_runner is not None:
            await self._admin_runner.cleanup()
            self._admin_runner = None
        await self.proxy.close()
        if self.h2pool is not None:
            await self.h2pool.close()
        if self.session is not None:
            await self.session.close()
        if self.stopped is not None:
            self.stopped.set()

    def fail(self, reason: str) -> None:
        """A fatal error (a listener that cannot be bound): the process should exit 1."""
        log.error("%s", reason)
        self.fatal = reason
        if self.stopped is not None:
            self.stopped.set()

    # -- config --------------------------------------------------------------------------------
    async def _poll_loop(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            try:
                await self.poll()
            except Exception:  # never let the reload loop die
                log.exception("config poll failed")

    async def poll(self, force: bool = False) -> bool:
        """Load the directory when it changed; True when a new config was applied."""
        attempts = self.source.attempts
        state = await asyncio.get_running_loop().run_in_executor(None, partial(self.source.poll, force))
        if state is None:
            if self.source.attempts != attempts and self.source.last_error:
                self.metrics.reloads.labels("rejected").inc()
            return False
        await self.apply(state)
        return True

    async def apply(self, state: LoadedState) -> None:
        previous = self.state
        self.state = state
        config = state.config
        self.metrics.loaded(config.config_hash, len(config.routes), len(config.clusters), state.loaded_at)
        self.balancer.retain(config.clusters.values())
        if self.h2pool is not None:
            self.h2pool.retain(set(state.h2_client_contexts.values()))
        if previous is None or previous.config_hash != state.config_hash:
            log.info("config %s loaded: %d listener(s), %d route(s), %d cluster(s), %d certificate(s)",
                     config.config_hash[:12], len(config.listeners), len(config.routes), len(config.clusters),
                     len(config.certificates))
        else:
            log.info("config %s reloaded (a named file changed)", config.config_hash[:12])
        if self.bound_listeners is None:
            await self._bind(config.listeners)
        elif config.listener_keys != self.bound_listeners and config.listener_keys != self._warned_listeners:
            self._warned_listeners = config.listener_keys
            log.warning("the listener set changed (%s -> %s): listeners are bound at start, restart to apply it",
                        _describe(self.bound_listeners), _describe(config.listener_keys))

    @property
    def ready(self) -> bool:
        return self.state is not None and self.bound_listeners is not None and self.fatal is None and not self.draining

    # -- listeners -----------------------------------------------------------------------------
    def _certificates(self) -> tuple[tuple[m.Certificate, ...], dict] | None:
        state = self.state
        return state.certificates() if state is not None else None

    def _tls_rejected(self, server_name: str | None) -> None:
        self.metrics.tls_rejected.inc()
        log.info("TLS handshake rejected: no certificate for SNI %r and no default", server_name)

    async def _bind(self, listeners: tuple[m.Listener, ...]) -> None:
        bound: dict[int, tuple[str, int]] = {}
        loop = asyncio.get_running_loop()
        for listener in listeners:
            host = self.bind_address if self.bind_address and listener.host == "0.0.0.0" else listener.host
            server = web.Server(partial(self.proxy.handle, listener), auto_decompress=False, access_log=None,
                                max_field_size=16384, max_line_size=16384)
            runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=self.shutdown_timeout)
            await runner.setup()
            ssl_ctx = listener_context(self._certificates, self._tls_rejected) if listener.decrypt_ssl else None
            factory = partial(ListenerProtocol, server, partial(self._h2_connection, listener),
                              listener.decrypt_ssl, self._h2_connections.add)
            try:
                tcp = await loop.create_server(factory, host, listener.port, ssl=ssl_ctx, reuse_address=True)
            except OSError as exc:
                await runner.cleanup()
                self.fail(f"cannot bind listener {host}:{listener.port}: {exc}")
                return
            self._runners.append(runner)
            self._servers.append(tcp)
            addr = tcp.sockets[0].getsockname()
            bound[listener.port] = (str(addr[0]), int(addr[1]))
            log.info("listening on %s:%d (%s)", host, listener.port,
                     "TLS; HTTP/1.1 and h2" if listener.decrypt_ssl else "HTTP/1.1 and h2c")
        self.bound = bound
        self.bound_listeners = frozenset((x.host, x.port, x.decrypt_ssl) for x in listeners)

    def _h2_connection(self, listener: m.Listener) -> H2ServerConnection:
        conn = H2ServerConnection(partial(self.proxy.handle_h2, listener))
        conn.on_lost = self._h2_connections.discard
        return conn

    # -- admin ---------------------------------------------------------------------------------
    async def _start_admin(self) -> None:
        app = web.Application()
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/version", self._version)
        app.router.add_get("/metrics", self._metrics)
        runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.admin_address, self.admin_port, reuse_address=True)
        await site.start()
        self._admin_runner = runner
        self.admin_port = int(runner.addresses[0][1])
        log.info("admin on %s:%d", self.admin_address, self.admin_port)

    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        return bool(self.admin_token) and scheme.lower() == "bearer" and \
            hmac.compare_digest(token.strip().encode(), self.admin_token.encode())

    async def _readyz(self, request: web.Request) -> web.Response:
        if self.ready:
            return web.Response(text="ok\n")
        reason = self.fatal or ("draining" if self.draining else "") or self.source.last_error or "no config loaded yet"
        return web.Response(status=503, text=f"not ready: {reason}\n")

    async def _version(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.Response(status=401, text="unauthorized\n", headers={"WWW-Authenticate": "Bearer"})
        state = self.state
        body = {"version": VERSION, "config_hash": state.config_hash if state is not None else ""}
        return web.Response(text=json.dumps(body), content_type="application/json")

    async def _metrics(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.Response(status=401, text="unauthorized\n", headers={"WWW-Authenticate": "Bearer"})
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    # -- access log ----------------------------------------------------------------------------
    def write_access_log(self, line: str) -> None:
        try:
            self.out.write(line + "\n")
            self.out.flush()
        except (OSError, ValueError):
            pass

    # -- running -------------------------------------------------------------------------------
    async def serve(self) -> int:
        """Start and run until stopped (or a fatal error); the exit code."""
        await self.start()
        assert self.stopped is not None
        if self.fatal is None:
            await self.stopped.wait()
        await self.stop()
        return 1 if self.fatal else 0

    def run_in_thread(self, timeout: float = 10.0) -> DataPlaneThread:
        return DataPlaneThread(self).start(timeout)


def _describe(keys: frozenset[tuple[str, int, bool]] | None) -> str:
    if not keys:
        return "none"
    return ", ".join(f"{port}{'/tls' if tls else ''}" for _, port, tls in sorted(keys, key=lambda k: k[1]))


class DataPlaneThread:
    """A DataPlane on its own event loop in a daemon thread (for tests and embedding)."""

    def __init__(self, dataplane: DataPlane) -> None:
        self.dataplane = dataplane
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="reference-dataplane", daemon=True)
        self._started = threading.Event()
        self._error: BaseException | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.dataplane.start())
        except BaseException as exc:  # reported to start()
            self._error = exc
            self._started.set()
            return
        self._started.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.dataplane.stop())
        self.loop.close()

    def start(self, timeout: float = 10.0) -> DataPlaneThread:
        self._thread.start()
        if not self._started.wait(timeout):
            raise TimeoutError("the reference data plane did not start")
        if self._error is not None:
            raise self._error
        return self

    def call(self, fn: Callable[[], object], timeout: float = 10.0) -> object:
        """Run a coroutine function on the data plane's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(fn(), self.loop).result(timeout)  # type: ignore[arg-type]

    def stop(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)

    def __enter__(self) -> DataPlaneThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
