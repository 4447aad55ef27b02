"""Controller figures: start-up, EndpointSlice churn, status of 1000 new HTTPRoutes.

The REAL controller runs as its own process (``python -m titanium_gateway controller``, the
chart's flags for the release ``titanium-gateway``, ``--kubeconfig`` pointing at loopback)
against the in-process API server of the integration tests (``tests/support/apiserver.py``),
seeded like ``helm install`` (``tests/support/release.py``, chart RBAC). No data-plane pods
run (the Deployment exists, with no pods): the prober finds none and Programmed stays pending,
which does not change what is measured and keeps the benchmark process's CPU for the API server.

Write times are taken inside the API server when it commits a write (a hook on its commit
path), so the clocks of the updates and of the writes are the same ``time.monotonic``.

With ``run.py --data-plane-mode per-gateway`` the controller creates a data plane for each of
the workload's 20 Gateways (Deployment, Service, ConfigMaps, Secrets in their namespaces, with
the chart's RBAC for it), and the start-up figure also tells when the last of their configs
was written.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import importlib
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from benchmarks import workload
from benchmarks.bench_render import data_plane_mode
from benchmarks.common import ROOT, Row, error_row, mib, not_measured, percentile, proc_status, seconds

GW = "gateway.networking.k8s.io"
#: Part ConfigMaps pre-created for the controller (the default 8 cannot hold a 10k-route mix).
PARTS = 48
#: Extra controller flags for every figure (run.py --controller-args).
EXTRA_ARGS: list[str] = []
_MARKER = re.compile(rb"172\.(?:1[6-9]|2[0-9]|3[01])\.[0-9]{1,3}\.[0-9]{1,3}")


def _per_gateway() -> bool:
    return data_plane_mode() == "per-gateway"


#: The data-plane template of the per-gateway figures (what the chart renders, trimmed: no pod runs)
TEMPLATE = {
    "replicas": 2, "configParts": PARTS,
    "ports": [{"name": "http", "port": 80, "containerPort": 8080}, {"name": "https", "port": 443, "containerPort": 8443}],
    "service": {"type": "LoadBalancer"},
    "labels": {"app.kubernetes.io/part-of": "titanium-gateway"},
    "pod": {"metadata": {"labels": {}}, "spec": {"containers": [{"name": "titanium", "image": "titanium"}]}},
}


def _missing() -> str:
    """Why the controller figures cannot run ("" when they can)."""
    for mod in ("tests.support.apiserver", "tests.support.release", "titanium_gateway.controller.main"):
        try:
            importlib.import_module(mod)
        except Exception as exc:  # noqa: BLE001
            return f"{mod} not available ({type(exc).__name__}: {exc})"
    return ""


def marker_ip(k: int) -> str:
    """A unique address for update ``k`` (172.16.0.0/12, never used by the workload)."""
    return f"172.{16 + (k >> 16) % 16}.{(k >> 8) & 255}.{k & 255}"


@dataclass
class Write:
    t: float
    kind: str
    namespace: str
    name: str
    obj: Any


@dataclass
class Cluster:
    """A FakeApiServer seeded with the chart's objects and a workload; records committed writes."""

    server: Any
    rel: Any
    workdir: Path
    writes: list[Write] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    on_write: list[Callable[[Write], None]] = field(default_factory=list)
    proc: subprocess.Popen | None = None
    log_path: Path | None = None
    health_port: int = 0

    # --- set-up -------------------------------------------------------------------------
    @classmethod
    @contextlib.contextmanager
    def start(cls, objects: list[dict[str, Any]]) -> Iterator[Cluster]:
        from tests.support.apiserver import FakeApiServer
        from tests.support.release import Release, seed_release

        server = FakeApiServer(bookmark_interval=1.0, history_size=200_000).start()
        rel = Release(parts=PARTS, leader_election=False)
        with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
            c = cls(server, rel, Path(tmp))
            try:
                seed_release(server, rel, per_gateway=_per_gateway())
                labels = dict(rel.data_plane_labels)
                server.put_object({"apiVersion": "apps/v1", "kind": "Deployment",
                                   "metadata": {"name": rel.data_plane, "namespace": rel.namespace, "labels": labels},
                                   "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                                            "template": {"metadata": {"labels": labels}, "spec": {
                                                "containers": [{"name": "titanium", "image": "titanium"}]}}}})
                c.load(objects)
                c._hook()
                # The API server stands in for a Go one: keep the loaded cluster out of this
                # process's cyclic GC, whose full collections over it pause the watch streams
                gc.collect()
                gc.freeze()
                yield c
            finally:
                c.stop_controller()
                server.stop()

    def load(self, objects: list[dict[str, Any]]) -> None:
        for obj in objects:
            kind = obj["kind"]
            if kind in ("GatewayClass", "IngressClass"):
                continue  # seed_release created them (same names, same controllers)
            if kind == "Service" and obj["metadata"]["name"] == workload.DATA_PLANE_SERVICE:
                obj = copy.deepcopy(obj)
                obj["metadata"]["name"] = self.rel.data_plane
            if kind == "Namespace" and self.server.get_object("Namespace", None, obj["metadata"]["name"]):
                continue
            self.server.put_object(_strip_server_fields(obj))

    def prime_statuses(self) -> int:
        """Writes the statuses the controller would write, so it starts on a converged cluster.

        Renders the server's objects offline (same options as the controller) and stores each
        wanted status; a controller restarted on this cluster then writes (nearly) no status.
        Returns the number of statuses stored.
        """
        from titanium_gateway.render import render
        from titanium_gateway.render.options import RenderOptions
        from titanium_gateway.render.snapshot import KIND_FIELDS, Snapshot

        objs = [o for kind in KIND_FIELDS for o in self.server.list_objects(kind)]
        snap = Snapshot.from_objects(objs, now=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        opts = RenderOptions(controller_name=self.rel.controller_name,
                             ingress_controller_name=self.rel.ingress_controller_name,
                             data_plane_service=(self.rel.namespace, self.rel.data_plane),
                             data_plane_mode=data_plane_mode())
        result = render(snap, opts)
        for st in result.statuses:
            def mutate(o: dict[str, Any], status: Any = st.status) -> None:
                o["status"] = copy.deepcopy(_plain(status))

            self.server.update_object(st.kind, st.namespace or None, st.name, mutate)
        return len(result.statuses)

    def _hook(self) -> None:
        """Wraps the server's commit-time event recorder (called under its lock)."""
        orig = self.server._record

        def record(rt: Any, etype: str, obj: Any, prev: Any) -> None:
            orig(rt, etype, obj, prev)
            if etype == "MODIFIED" or etype == "ADDED":
                meta = obj.get("metadata") or {}
                w = Write(time.monotonic(), rt.kind, meta.get("namespace", ""), meta.get("name", ""), obj)
                if rt.kind in ("ConfigMap", "Secret", "HTTPRoute", "Gateway", "Ingress"):
                    with self.lock:
                        self.writes.append(w)
                for fn in list(self.on_write):
                    fn(w)

        self.server._record = record

    # --- the controller process ---------------------------------------------------------
    def start_controller(self, *extra: str) -> float:
        kubeconfig = self.workdir / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(self.server.kubeconfig()))
        self.log_path = self.workdir / "controller.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TITANIUM_GATEWAY_")}
        env["TITANIUM_ADMIN_TOKEN"] = self.rel.token
        env.setdefault("MALLOC_ARENA_MAX", "2")  # as the image and the chart set it
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        from tests.support.ports import free_port

        self.health_port = free_port()
        mode: list[str] = []
        if _per_gateway():
            template = self.workdir / "data-plane.yaml"
            template.write_text(yaml.safe_dump(TEMPLATE))
            mode = ["--data-plane-mode=per-gateway", f"--data-plane-template={template}"]
        args = [sys.executable, "-m", "titanium_gateway", "controller", *self.rel.controller_args(),
                f"--kubeconfig={kubeconfig}", f"--health-port={self.health_port}", "--admin-port=1", *mode,
                *EXTRA_ARGS, *extra]
        log = open(self.log_path, "wb")  # noqa: SIM115 - closed with the process
        t0 = time.monotonic()
        self.proc = subprocess.Popen(args, cwd=str(ROOT), env=env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        return t0

    def stop_controller(self) -> None:
        p, self.proc = self.proc, None
        if p is None:
            return
        p.terminate()
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)

    def metrics(self) -> dict[str, float]:
        """``name -> value`` of the controller's /metrics (sums and counts of histograms)."""
        import urllib.request

        out: dict[str, float] = {}
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/metrics", timeout=10) as r:  # noqa: S310
                text = r.read().decode()
        except OSError:
            return out
        for line in text.splitlines():
            if line.startswith("#") or " " not in line:
                continue
            name, _, value = line.rpartition(" ")
            try:
                out[name] = out.get(name, 0.0) + float(value)
            except ValueError:
                continue
        return out

    def reconcile_summary(self, before: dict[str, float] | None = None) -> str:
        """Reconciles and mean reconcile/render time from /metrics (since ``before``)."""
        m = self.metrics()
        b = before or {}

        def d(name: str) -> float:
            return m.get(name, 0.0) - b.get(name, 0.0)

        n = d("controller_runtime_reconcile_time_seconds_count")
        r = d("titanium_render_duration_seconds_count")
        if not n:
            return "no /metrics"
        return (f"{n:.0f} reconciles, mean {d('controller_runtime_reconcile_time_seconds_sum') / n:.2f} s "
                f"(render {d('titanium_render_duration_seconds_sum') / max(r, 1):.2f} s)")

    def controller_rss(self) -> dict[str, int]:
        return proc_status(self.proc.pid) if self.proc is not None else {}

    def log_tail(self, n: int = 3) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        lines = self.log_path.read_text(errors="replace").strip().splitlines()
        return " / ".join(ln[:200] for ln in lines[-n:])

    def check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"controller exited with {self.proc.returncode}: {self.log_tail()}")

    # --- observations -------------------------------------------------------------------
    def config_writes(self, since: float = 0.0, root_only: bool = True) -> list[Write]:
        names = {self.rel.config_map} if root_only else {self.rel.config_map, *self.rel.part_names}
        with self.lock:
            return [w for w in self.writes if w.kind == "ConfigMap" and w.name in names and w.t >= since
                    and w.namespace == self.rel.namespace]

    def wait_planes(self, since: float, timeout: float) -> float:
        """When the last of the Gateways' own data planes' root ConfigMaps holds a config
        (per-gateway), as a ``time.monotonic``."""
        from titanium_gateway.render.planes import plane_names

        wanted = {(gw["metadata"]["namespace"], plane_names(gw["metadata"]["name"], "titanium").config_map)
                  for gw in self.server.list_objects("Gateway")}
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                done = {(w.namespace, w.name): w.t for w in self.writes if w.kind == "ConfigMap" and w.t >= since
                        and (w.namespace, w.name) in wanted and ((w.obj.get("data") or {}).get("twp.yaml") or "")}
            if len(done) == len(wanted):
                return max(done.values())
            self.check_alive()
            time.sleep(0.05)
        raise TimeoutError(f"{len(wanted)} Gateway configs not all written within {timeout:.0f} s: {self.log_tail()}")

    def wait_config(self, since: float, timeout: float) -> Write:
        """The first root ConfigMap write after ``since`` that holds a config."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for w in self.config_writes(since):
                if ((w.obj.get("data") or {}).get("twp.yaml") or "").strip():
                    return w
            self.check_alive()
            time.sleep(0.02)
        raise TimeoutError(f"no config written within {timeout:.0f} s: {self.log_tail()}")

    def api_writes(self, since: float, until: float | None = None) -> list[Any]:
        """Write requests the controller sent (from the server's request log), by wall time."""
        return [r for r in self.server.requests() if r.method in ("POST", "PUT", "PATCH", "DELETE")
                and r.time >= since and (until is None or r.time < until)]


def _plain(value: Any) -> Any:
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _strip_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    for k in ("uid", "resourceVersion", "creationTimestamp", "generation"):
        meta.pop(k, None)
    return out


def _log_phases(path: Path | None, t0_wall: float) -> str:
    """Seconds from process start to notable controller log lines (JSON logs), if found."""
    if path is None or not path.exists():
        return ""
    import json

    marks: list[str] = []
    seen: set[str] = set()
    for line in path.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        msg = str(rec.get("message") or rec.get("msg") or "")
        ts = rec.get("ts") or rec.get("time") or rec.get("timestamp")
        if not msg or msg in seen or ts is None:
            continue
        if any(w in msg for w in ("synced", "starting controller", "config written", "reconcile")):
            seen.add(msg)
            try:
                from datetime import datetime

                t = datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp()
                marks.append(f"{msg[:40]} +{t - t0_wall:.1f}s")
            except ValueError:
                continue
        if len(marks) >= 4:
            break
    return "; ".join(marks)


# --- figures ------------------------------------------------------------------------------


def figure_startup(n: int) -> list[Row]:
    why = _missing()
    if why:
        return [not_measured("startup", f"N={n}", why, "< 10 s")]
    rows: list[Row] = []
    wl = workload.build(n)
    t_load = time.monotonic()
    with Cluster.start(wl.objects) as c:
        c.prime_statuses()
        load_s = time.monotonic() - t_load
        try:
            t0_wall = time.time()
            t0 = c.start_controller()
            w = c.wait_config(t0, timeout=120)
            took = w.t - t0
            parts = len(c.config_writes(t0, root_only=False)) - len(c.config_writes(t0))
            rows.append(Row("startup", f"N={n} routes + {n} ingresses ({len(wl.objects)} objs), {data_plane_mode()}",
                            f"first config written after {seconds(took)} ({parts} part writes before it)",
                            "< 10 s", took < 10.0))
            if _per_gateway():
                last = c.wait_planes(t0, timeout=180) - t0
                rows.append(Row("startup", f"N={n}, every Gateway's own data plane (20)",
                                f"the last Gateway's config written after {seconds(last)}", "< 10 s", last < 10.0))
            phases = _log_phases(c.log_path, t0_wall)
            if phases:
                rows.append(Row("startup", "phases (controller log)", phases, "", None))
            time.sleep(3)  # statuses, events: let the first reconcile finish
            rows.append(Row("startup", "first reconcile (controller /metrics)", c.reconcile_summary(), "", None))
            st = c.controller_rss()
            rows.append(Row("memory", f"controller process, N={n} after start-up",
                            f"RSS {mib(st.get('VmRSS', 0))}, peak {mib(st.get('VmHWM', 0))}",
                            "< 300 MiB", st.get("VmHWM", 1 << 40) < 300 * 1024 * 1024))
        except Exception as exc:  # noqa: BLE001
            rows.append(error_row("startup", exc, f"N={n}"))
        rows.append(Row("startup", "API server seeding + status priming (not counted)", f"{seconds(load_s)}", "", None))
    return rows


def figure_churn(n: int, rate: float, duration: float, quiet_seconds: float) -> list[Row]:
    label = f"N={n}, {rate:.0f} slice updates/s for {duration:.0f} s" + (f" ({' '.join(EXTRA_ARGS)})" if EXTRA_ARGS else "")
    why = _missing()
    if why:
        return [not_measured("churn", label, why, "<= 2 writes/s, p99 < 1.5 s")]
    rows: list[Row] = []
    wl = workload.build(n)
    slices = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in wl.objects if o["kind"] == "EndpointSlice"]
    with Cluster.start(wl.objects) as c:
        c.prime_statuses()
        pending: dict[str, float] = {}
        latencies: list[float] = []
        plock = threading.Lock()
        part_names = {c.rel.config_map, *c.rel.part_names}

        def on_write(w: Write) -> None:
            if w.kind != "ConfigMap" or w.name not in part_names:
                return
            data = w.obj.get("data") or {}
            found: set[bytes] = set()
            for text in data.values():
                if isinstance(text, str) and "172." in text:
                    found.update(_MARKER.findall(text.encode()))
            if found:
                with plock:
                    for ip in found:
                        t = pending.pop(ip.decode(), None)
                        if t is not None:
                            latencies.append(w.t - t)

        try:
            t0 = c.start_controller()
            c.wait_config(t0, timeout=120)
            time.sleep(2.0)  # the first reconcile's statuses and events
            c.on_write.append(on_write)
            before = c.metrics()
            total = int(rate * duration)
            start = time.monotonic()
            start_wall = time.time()
            for k in range(total):
                due = start + k / rate
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                ns, name = slices[k % len(slices)]
                ip = marker_ip(k)
                slot = (k // len(slices)) % workload.ENDPOINTS_PER_SLICE

                def mutate(o: dict[str, Any], ip: str = ip, slot: int = slot) -> None:
                    o["endpoints"][slot]["addresses"] = [ip]

                with plock:
                    pending[ip] = time.monotonic()
                c.server.update_object("EndpointSlice", ns, name, mutate)
            end = time.monotonic()
            achieved = total / (end - start)
            # drain: wait until every update is in a written config (or 10 s)
            drain_end = time.monotonic() + 10
            while time.monotonic() < drain_end:
                with plock:
                    if not pending:
                        break
                time.sleep(0.05)
            drained = time.monotonic()
            window = [w for w in c.config_writes(start) if w.t <= drained]
            all_cm = [w for w in c.config_writes(start, root_only=False) if w.t <= drained]
            span = max(drained - start, 1e-9)
            wps = len(window) / span
            # the rate the coalescing window bounds: writes at most every 0.5 s, i.e. n writes
            # take at least (n - 1) * 0.5 s (n / span counts a fencepost: 61 writes 0.5 s apart
            # fit in 30.1 s, "2.03/s")
            times = sorted(w.t for w in window)
            gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
            paced = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and times[-1] > times[0] else 0.0
            rows.append(Row("churn", label,
                            f"{len(window)} config writes in {span:.1f} s ({wps:.2f}/s counting both ends); "
                            f"{paced:.2f}/s between the first and the last, shortest gap "
                            f"{seconds(min(gaps)) if gaps else '-'} "
                            f"({len(all_cm)} ConfigMap writes incl. parts); {achieved:.0f} updates/s achieved",
                            "<= 2 writes/s", paced <= 2.0))
            with plock:
                lost = len(pending)
                lat = list(latencies)
            if lat:
                p50, p99 = percentile(lat, 50), percentile(lat, 99)
                rows.append(Row("churn", "update -> ConfigMap latency",
                                f"p50 {seconds(p50)}, p99 {seconds(p99)}, max {seconds(max(lat))} "
                                f"({len(lat)} seen, {lost} not seen within 10 s)",
                                "p99 < 1.5 s", p99 < 1.5 and lost == 0))
            else:
                rows.append(Row("churn", "update -> ConfigMap latency", f"no update seen in a config ({lost} pending)",
                                "p99 < 1.5 s", False))
            rows.append(Row("churn", "controller work during churn", c.reconcile_summary(before), "", None))
            tls = [w for w in c.writes if w.kind == "Secret" and w.name == c.rel.tls_secret and w.t >= start]
            rows.append(Row("churn", "TLS Secret writes during churn", f"{len(tls)}", "0 (certs unchanged)", not tls))
            # quiet period: nothing changes, nothing may be written
            time.sleep(2.0)
            q0, q0_wall = time.monotonic(), time.time()
            q_metrics = c.metrics()
            time.sleep(quiet_seconds)
            quiet_cm = c.config_writes(q0, root_only=False)
            quiet_api = c.api_writes(q0_wall)
            rows.append(Row("churn", f"quiet period {quiet_seconds:.0f} s",
                            f"{len(quiet_cm)} ConfigMap writes, {len(quiet_api)} API writes in total; "
                            f"{c.reconcile_summary(q_metrics)}",
                            "0 writes", not quiet_cm and not quiet_api))
            st = c.controller_rss()
            rows.append(Row("memory", f"controller process, N={n} after churn",
                            f"RSS {mib(st.get('VmRSS', 0))}, peak {mib(st.get('VmHWM', 0))}",
                            "< 300 MiB", st.get("VmHWM", 1 << 40) < 300 * 1024 * 1024))
            del start_wall
        except Exception as exc:  # noqa: BLE001
            rows.append(error_row("churn", exc, label))
    return rows


def figure_status(n: int) -> list[Row]:
    label = f"{n} HTTPRoutes created at once" + (f" ({' '.join(EXTRA_ARGS)})" if EXTRA_ARGS else "")
    why = _missing()
    if why:
        return [not_measured("status", label, why, "< 2 s, 1 write per object")]
    rows: list[Row] = []
    base = workload.build(n, ingresses=False, routes=False)
    gw_ns, gw_name = workload.namespace_name(0), "gw-00"
    routes = workload.routes_for_one_gateway(n, _strip_server_fields)
    keys = {(r["metadata"]["namespace"], r["metadata"]["name"]) for r in routes}
    with Cluster.start(base.objects) as c:
        accepted: set[tuple[str, str]] = set()
        done = threading.Event()
        state: dict[str, Any] = {"attached": None, "t_routes": None, "t_gateway": None, "t_first": None}
        ours = c.rel.controller_name

        def on_write(w: Write) -> None:
            st = w.obj.get("status") or {}
            if w.kind == "HTTPRoute" and (w.namespace, w.name) in keys:
                for p in st.get("parents") or []:
                    if p.get("controllerName") == ours and any(
                            cd.get("type") == "Accepted" and cd.get("status") == "True" for cd in p.get("conditions") or []):
                        accepted.add((w.namespace, w.name))
                        if state["t_first"] is None:
                            state["t_first"] = w.t
                        if len(accepted) == len(keys) and state["t_routes"] is None:
                            state["t_routes"] = w.t
            elif w.kind == "Gateway" and w.namespace == gw_ns and w.name == gw_name:
                counts = [ls.get("attachedRoutes") for ls in st.get("listeners") or []]
                state["attached"] = counts
                if counts and all(x == len(keys) for x in counts) and state["t_gateway"] is None:
                    state["t_gateway"] = w.t
            if state["t_routes"] is not None and state["t_gateway"] is not None:
                done.set()

        try:
            t0 = c.start_controller()
            c.wait_config(t0, timeout=120)
            time.sleep(2.0)
            c.on_write.append(on_write)
            c.server.clear_log()
            before = c.metrics()
            t_wall = time.time()
            t_create = time.monotonic()
            for r in routes:
                c.server.put_object(r)
            t_created = time.monotonic()
            if not done.wait(60):
                c.check_alive()
                raise TimeoutError(f"after 60 s: {len(accepted)}/{len(keys)} Accepted, attachedRoutes {state['attached']}")
            t_end = max(state["t_routes"], state["t_gateway"])
            took = t_end - t_create
            time.sleep(2.0)  # late duplicate writes, if any, are counted too
            reqs = c.api_writes(t_wall)
            route_writes = [r for r in reqs if r.resource == "httproutes/status"]
            gw_writes = [r for r in reqs if r.resource == "gateways/status"]
            per_obj = len(route_writes) / len(keys)
            rows.append(Row("status", label,
                            f"all Accepted + attachedRoutes={len(keys)} after {seconds(took)} "
                            f"(creating took {seconds(t_created - t_create)})",
                            "< 2 s", took < 2.0))
            rows.append(Row("status", "phases (API server commit times)",
                            f"created +{seconds(t_created - t_create)}; first route Accepted "
                            f"+{seconds(state['t_first'] - t_create)}; Gateway attachedRoutes={len(keys)} "
                            f"+{seconds(state['t_gateway'] - t_create)}; last route Accepted "
                            f"+{seconds(state['t_routes'] - t_create)}", "", None))
            rows.append(Row("status", "controller work", c.reconcile_summary(before), "", None))
            rows.append(Row("status", "status writes",
                            f"{len(route_writes)} HTTPRoute ({per_obj:.2f}/route), {len(gw_writes)} Gateway "
                            f"status writes; {len(reqs)} API writes in total",
                            "1 per object", len(route_writes) == len(keys) and len(gw_writes) <= 2))
        except Exception as exc:  # noqa: BLE001
            rows.append(error_row("status", exc, label))
    return rows
