"""A load-balancer stand-in for Services of type LoadBalancer (what MetalLB or a cloud does).

Each such Service (without a ``loadBalancerClass``, or with the one given) gets an address from
the load-balancer range, added as a /32 on the cluster namespace's ``lo`` and written to
``status.loadBalancer.ingress``. A Service that asks for an address (``spec.loadBalancerIP``)
gets that one when it is free in the load-balancer range or in the static range (addresses
given only on request, as a MetalLB pool without auto-assignment), else none (MetalLB's
behaviour: the Service stays without an address). Every TCP port of the Service is served there by a TCP proxy
that forwards each connection to one of the Service's ready endpoints (EndpointSlices,
round robin), on the endpoint port of the same name. When no endpoint of a port is ready, the
serving endpoints of terminating pods take the connections, as kube-proxy does (KEP-1669: a pod
in its preStop delay keeps serving until its replacement is ready). With neither, a connection
is closed at once. A Service that stops being a LoadBalancer, or goes away, loses its address.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from titanium_gateway.kube.api import ENDPOINT_SLICES, SERVICES, ApiError, Obj
from titanium_gateway.kube.informer import SharedInformer
from tools.podrunner.kube import RunnerApi
from tools.podrunner.network import AddressPool, Network

log = logging.getLogger(__name__)
SERVICE_NAME_LABEL = "kubernetes.io/service-name"


@dataclass
class _Balanced:
    key: str
    ip: str
    servers: dict[int, asyncio.base_events.Server] = field(default_factory=dict)
    # service port -> [(address, port)] of the ready endpoints
    backends: dict[int, list[tuple[str, int]]] = field(default_factory=dict)
    cursor: itertools.count = field(default_factory=itertools.count)


def _asked(svc: Obj) -> str:
    """The address a Service asks for (``spec.loadBalancerIP``), "" when none."""
    return str((svc.get("spec") or {}).get("loadBalancerIP") or "")


def ready_backends(service: Obj, slices: list[Obj]) -> dict[int, list[tuple[str, int]]]:
    """Service port -> ready (address, target port) pairs, from the Service's EndpointSlices;
    where a port has none, its serving terminating ones (kube-proxy's fallback)."""
    out: dict[int, list[tuple[str, int]]] = {}
    for sp in (service.get("spec") or {}).get("ports") or []:
        if sp.get("protocol", "TCP") != "TCP":
            continue
        name = sp.get("name", "") or ""
        targets: list[tuple[str, int]] = []
        terminating: list[tuple[str, int]] = []
        for es in slices:
            if es.get("addressType") not in ("IPv4", "IPv6"):
                continue
            port = next((p.get("port") for p in es.get("ports") or [] if (p.get("name") or "") == name), None)
            if port is None:
                continue
            for ep in es.get("endpoints") or []:
                cond = ep.get("conditions") or {}
                if cond.get("ready") is False:
                    if cond.get("serving") and cond.get("terminating"):
                        terminating += [(addr, int(port)) for addr in ep.get("addresses") or []]
                    continue
                for addr in ep.get("addresses") or []:
                    targets.append((addr, int(port)))
        out[int(sp["port"])] = sorted(set(targets or terminating))
    return out


class LoadBalancer:
    def __init__(self, api: RunnerApi, network: Network, pool: AddressPool, *,
                 load_balancer_class: str | None = None,
                 informer_factory: Callable[..., SharedInformer] = SharedInformer,
                 static_pool: AddressPool | None = None) -> None:
        self.api = api
        self.net = network
        self.pool = pool
        self.static_pool = static_pool
        self.lb_class = load_balancer_class
        self.services = informer_factory(api, SERVICES, name="services")
        self.slices = informer_factory(api, ENDPOINT_SLICES, name="endpointslices")
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="loadbalancer", daemon=True)
        self.active: dict[str, _Balanced] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> LoadBalancer:
        self._thread.start()
        for inf in (self.services, self.slices):
            inf.start()
        for inf in (self.services, self.slices):
            inf.wait_for_sync(120)
        self.services.add_event_handler(on_add=self._changed, on_update=lambda _o, n: self._changed(n),
                                        on_delete=self._changed)
        self.slices.add_event_handler(on_add=self._slice_changed, on_update=lambda _o, n: self._slice_changed(n),
                                      on_delete=self._slice_changed)
        return self

    def stop(self) -> None:
        for inf in (self.services, self.slices):
            inf.stop()
        fut = asyncio.run_coroutine_threadsafe(self._close_all(), self.loop)
        with contextlib.suppress(Exception):
            fut.result(15)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    async def _close_all(self) -> None:
        for key in list(self.active):
            await self._release(key, clear_status=False)

    # -- events ------------------------------------------------------------------------------------
    @staticmethod
    def _key(obj: Obj) -> str:
        m = obj.get("metadata") or {}
        return f"{m.get('namespace', '')}/{m.get('name', '')}"

    def _changed(self, svc: Obj) -> None:
        asyncio.run_coroutine_threadsafe(self._sync(self._key(svc)), self.loop)

    def _slice_changed(self, es: Obj) -> None:
        m = es.get("metadata") or {}
        svc = (m.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if svc:
            asyncio.run_coroutine_threadsafe(self._sync(f"{m.get('namespace', '')}/{svc}"), self.loop)

    def _wanted(self, svc: Obj | None) -> bool:
        if svc is None or (svc.get("metadata") or {}).get("deletionTimestamp"):
            return False
        spec = svc.get("spec") or {}
        if spec.get("type") != "LoadBalancer":
            return False
        cls = spec.get("loadBalancerClass")
        return not cls or cls == self.lb_class

    def _slices_of(self, ns: str, name: str) -> list[Obj]:
        return [es for es in self.slices.list()
                if (es.get("metadata") or {}).get("namespace") == ns
                and ((es.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME_LABEL) == name]

    async def _sync(self, key: str) -> None:
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            await self._sync_locked(key)

    async def _sync_locked(self, key: str) -> None:
        ns, _, name = key.partition("/")
        svc = self.services.get(ns, name)
        if not self._wanted(svc):
            if key in self.active:
                await self._release(key, clear_status=svc is not None)
            return
        assert svc is not None
        bal = self.active.get(key)
        asked = _asked(svc)
        if bal is not None and asked and bal.ip != asked:  # (another address asked for)
            await self._release(key, clear_status=True)
            bal = None
        if bal is None:
            ip = self._address_for(svc)
            if ip is None:
                log.error("service %s: %s", key, f"the address {asked} it asks for is not free or not in a range"
                          if asked else "no load-balancer address left")
                return
            try:
                self.net.add_local(ip)
            except Exception as e:  # noqa: BLE001
                log.error("service %s: cannot add %s: %s", key, ip, e)
                self.pool.release(ip)
                return
            bal = self.active[key] = _Balanced(key, ip)
            log.info("service %s: load-balancer address %s", key, ip)
        bal.backends = ready_backends(svc, self._slices_of(ns, name))
        for port in list(bal.servers):
            if port not in bal.backends:
                bal.servers.pop(port).close()
        for port in bal.backends:
            if port not in bal.servers:
                try:
                    bal.servers[port] = await asyncio.start_server(
                        lambda r, w, b=bal, p=port: self._track(self._forward(b, p, r, w)), bal.ip, port,
                        reuse_address=True)
                except OSError as e:
                    log.error("service %s: cannot listen on %s:%s: %s", key, bal.ip, port, e)
        ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        if [i.get("ip") for i in ingress] != [bal.ip]:
            await asyncio.to_thread(self._patch_status, ns, name, [{"ip": bal.ip}])

    def _address_for(self, svc: Obj) -> str | None:
        asked = _asked(svc)
        if asked:
            if self.pool.reserve(asked) or (self.static_pool is not None and self.static_pool.reserve(asked)):
                return asked
            return None
        for ing in ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []:
            if ing.get("ip") and self.pool.reserve(ing["ip"]):
                return str(ing["ip"])
        try:
            return self.pool.allocate()
        except RuntimeError:
            return None

    def _patch_status(self, ns: str, name: str, ingress: list[Obj]) -> None:
        try:
            self.api.patch(SERVICES, ns, name, {"status": {"loadBalancer": {"ingress": ingress or None}}},
                           patch_type="merge", subresource="status")
        except ApiError as e:
            if e.status != 404:
                log.warning("service %s/%s: status update failed: %s", ns, name, e)

    async def _release(self, key: str, *, clear_status: bool) -> None:
        bal = self.active.pop(key, None)
        if bal is None:
            return
        for server in bal.servers.values():
            server.close()
        for server in bal.servers.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)
        self.net.remove_local(bal.ip)
        self.pool.release(bal.ip)
        if self.static_pool is not None:
            self.static_pool.release(bal.ip)
        if clear_status:
            ns, _, name = key.partition("/")
            await asyncio.to_thread(self._patch_status, ns, name, [])
        log.info("service %s: load-balancer address %s released", key, bal.ip)

    # -- forwarding --------------------------------------------------------------------------------
    def _track(self, coro: Any) -> None:
        # The loop keeps only weak references to tasks: hold each connection's task until it ends.
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _forward(self, bal: _Balanced, port: int, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> None:
        targets = bal.backends.get(port) or []
        if not targets:
            writer.close()
            return
        start = next(bal.cursor)
        upstream = None
        for i in range(len(targets)):
            host, tport = targets[(start + i) % len(targets)]
            try:
                upstream = await asyncio.wait_for(asyncio.open_connection(host, tport), 5)
                break
            except (OSError, asyncio.TimeoutError):
                continue
        if upstream is None:
            writer.close()
            return
        ureader, uwriter = upstream

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
                if dst.can_write_eof():
                    dst.write_eof()  # pass the half-close on
            except (ConnectionError, OSError):
                for w in (writer, uwriter):
                    w.transport.abort()

        try:
            await asyncio.gather(pipe(reader, uwriter), pipe(ureader, writer))
        finally:
            for w in (writer, uwriter):
                w.close()
