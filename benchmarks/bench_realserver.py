"""Controller figures against the REAL API server: start-up to the first config at 10k, and the
status of 1000 new HTTPRoutes.

The same workload and measurements as ``bench_controller`` (start-up, status), with the
in-process API server replaced by the local control plane of ``hack/kube`` (kube-apiserver
v1.36 with etcd, in a network namespace of its own; a fresh cluster per figure in
``.cache/kube/bench``). The chart is installed with real Helm (release ``titanium-gateway``, 48
part ConfigMaps, its controller Deployment at 0 replicas); the controller runs as its own
process with the chart's environment and a TokenRequest token of the chart's ServiceAccount, so
the chart's RBAC and leader election apply. As with the in-process server no data-plane pod
runs (the Deployment's pods stay Pending: there is no kubelet), so Programmed stays pending.

Times are taken when this process receives the watch event of the write (one clock for the
process start, the creates and the writes); the status writes are counted from the API
server's audit log.

Seeding 24k objects and priming their statuses takes minutes. With ``reuse`` (``run.py
--reuse-cluster``) the start-up figure keeps its cluster running after the run, seeded, and a
later run with the same N starts from it: the release's config ConfigMaps and TLS Secret are emptied again
(as the chart creates them) and the Lease is free (the controller released it), so the controller
starts as on a fresh install over a converged cluster. Stop it with
``hack/kube/down.sh .cache/kube/bench``.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks import workload
from benchmarks.common import ROOT, Row, error_row, mib, not_measured, proc_status, seconds

GW = "gateway.networking.k8s.io"
PARTS = 48
RELEASE, NAMESPACE = "titanium-gateway", "gateway-system"
BENCH_DIR = ROOT / ".cache" / "kube" / "bench"
LOADERS = 4  # parallel creates while seeding (the API server has 2 cores)
_ORDER = ("Namespace", "Secret", "Service", "EndpointSlice", "Gateway", "HTTPRoute", "Ingress")


def _missing() -> str:
    try:
        from tests.support.kubecluster import KUBE, toolchain_problem
    except Exception as exc:  # noqa: BLE001
        return f"tests.support.kubecluster not available ({exc})"
    problem = toolchain_problem()
    if problem:
        return problem
    if not KUBE.exists():
        return "the local control plane is not built (hack/kube/build.sh)"
    return ""


#: what the running cluster in BENCH_DIR was seeded with (``reuse``): the start-up figure's N
_SEEDED = BENCH_DIR / "seeded-startup"


@contextlib.contextmanager
def _cluster(*, reuse: bool = False) -> Iterator[tuple[Any, str]]:
    """A fresh cluster in .cache/kube/bench, this thread inside its network; stopped after
    (``reuse``: the one running there if any, left running after)."""
    import subprocess

    from tests.support.kubecluster import REPO, LocalCluster

    if not reuse:
        subprocess.run([str(REPO / "hack/kube/down.sh"), str(BENCH_DIR)], capture_output=True, check=False)
    helm = subprocess.run([str(REPO / "hack/helm.sh"), "--print-path"], capture_output=True, text=True, check=True)
    cluster = LocalCluster.start(BENCH_DIR)
    if not cluster.started_here and not reuse:
        raise RuntimeError(f"a cluster still runs in {BENCH_DIR}")
    if cluster.started_here:
        _SEEDED.unlink(missing_ok=True)
    try:
        with cluster.inside():
            yield cluster, helm.stdout.strip()
    finally:
        if not reuse:
            cluster.stop()
            _SEEDED.unlink(missing_ok=True)


_WORK = BENCH_DIR.parent / "bench-work"  # release files and controller logs of the last run


def _install(cluster: Any, helm: str) -> Any:
    from tests.support.chartrelease import ChartRelease

    values = {"fullnameOverride": RELEASE, "gatewayClass": {"name": "titanium"}, "ingressClass": {"name": "titanium"},
              "controller": {"controllerName": workload.CONTROLLER_NAME,
                             "ingressControllerName": workload.INGRESS_CONTROLLER_NAME},
              "dataPlane": {"configParts": PARTS}}
    import shutil

    shutil.rmtree(_WORK, ignore_errors=True)
    return ChartRelease.install(cluster, helm, RELEASE, namespace=NAMESPACE, values=values, workdir=_WORK)


def _reset_config(cluster: Any, release: Any) -> None:
    """The release's config ConfigMaps and TLS Secret as the chart creates them (no data), for a
    reused cluster."""
    api = cluster.api
    for name in (release.rel.config_map, *release.rel.part_names):
        api.patch("ConfigMap", NAMESPACE, name, {"data": None})
    api.patch("Secret", NAMESPACE, release.rel.tls_secret, {"data": None})


def _for_server(obj: dict[str, Any]) -> dict[str, Any]:
    """A workload object as a user would create it: no server-set fields, no fixed cluster IP."""
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    for k in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        meta.pop(k, None)
    out.pop("status", None)
    if out["kind"] == "Service":
        out["spec"].pop("clusterIP", None)
        out["spec"].pop("clusterIPs", None)
    return out


def _seed(cluster: Any, release: Any, objects: list[dict[str, Any]]) -> float:
    """Create the workload (the chart made the classes and the data-plane Service, whose
    load-balancer address is set as the workload's); seconds taken."""
    t0 = time.monotonic()
    api = cluster.api
    lb = next(o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == workload.DATA_PLANE_SERVICE)
    api.patch("Service", NAMESPACE, release.rel.data_plane, {"status": lb["status"]}, subresource="status")
    todo = [o for o in objects if o["kind"] not in ("GatewayClass", "IngressClass")
            and not (o["kind"] == "Service" and o["metadata"]["name"] == workload.DATA_PLANE_SERVICE)
            and not (o["kind"] == "Namespace" and o["metadata"]["name"] == NAMESPACE)]
    local = threading.local()

    def create(obj: dict[str, Any]) -> None:
        if not hasattr(local, "api"):
            local.api = cluster.admin_api()
        local.api.create(_for_server(obj))

    with ThreadPoolExecutor(LOADERS) as pool:
        for kind in _ORDER:
            list(pool.map(create, [o for o in todo if o["kind"] == kind]))
    return time.monotonic() - t0


def _prime_statuses(cluster: Any, release: Any) -> int:
    """The statuses the controller would write, written first (a converged cluster, as the
    in-process figure primes it): rendered offline from what the server holds."""
    from titanium_gateway.render import render
    from titanium_gateway.render.options import RenderOptions
    from titanium_gateway.render.snapshot import KIND_FIELDS, Snapshot

    api = cluster.api
    objs = [o for kind in KIND_FIELDS if kind in _LISTABLE for o in _list_all(api, kind)]
    snap = Snapshot.from_objects(objs, now=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    opts = RenderOptions(controller_name=release.rel.controller_name,
                         ingress_controller_name=release.rel.ingress_controller_name,
                         data_plane_service=(NAMESPACE, release.rel.data_plane))
    result = render(snap, opts)
    local = threading.local()

    def write(st: Any) -> None:
        if not hasattr(local, "api"):
            local.api = cluster.admin_api()
        local.api.patch(st.kind, st.namespace or None, st.name, {"status": _plain(st.status)}, subresource="status")

    with ThreadPoolExecutor(LOADERS) as pool:
        list(pool.map(write, result.statuses))
    return len(result.statuses)


_LISTABLE = {"Namespace", "Service", "Secret", "EndpointSlice", "Ingress", "IngressClass", "GatewayClass",
             "Gateway", "HTTPRoute", "GRPCRoute", "ReferenceGrant", "Pod", "ConfigMap", "Deployment"}


def _list_all(api: Any, kind: str) -> list[dict[str, Any]]:
    items = api.list(kind)
    for o in items:  # List items carry no kind/apiVersion
        o.setdefault("kind", kind)
    return items


def _plain(value: Any) -> Any:
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class _Watcher:
    """Watches one kind (all namespaces) from now on in a thread; ``on_event(t, type, obj)``."""

    def __init__(self, cluster: Any, kind: str, on_event: Any) -> None:
        self.cluster, self.kind, self.on_event = cluster, kind, on_event
        self._stop = threading.Event()
        api = cluster.admin_api()
        self._rv = api.list_raw(kind)["metadata"]["resourceVersion"]
        self._api = api
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"bench-watch-{kind}")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for ev in self._api.watch(self.kind, resource_version=self._rv, timeout_seconds=30):
                    t = time.monotonic()
                    obj = ev.get("object") or {}
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        self._rv = rv
                    if ev.get("type") in ("ADDED", "MODIFIED"):
                        self.on_event(t, ev["type"], obj)
                    if self._stop.is_set():
                        return
            except Exception:  # noqa: BLE001 - re-watch
                time.sleep(0.2)

    def stop(self) -> None:
        self._stop.set()


def _log_phases(path: Path, t0_wall: float) -> str:
    """Where the start-up went, from the controller's JSON log (seconds after Popen)."""
    import json
    from datetime import datetime

    marks: dict[str, float] = {}
    parts: list[float] = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
            t = datetime.fromisoformat(str(rec["ts"]).replace("Z", "+00:00")).timestamp() - t0_wall
        except (ValueError, KeyError):
            continue
        msg, name = str(rec.get("msg", "")), str(rec.get("name", ""))
        if msg == "starting controller":
            marks.setdefault("process up", t)
        elif msg == "informers synced":
            marks.setdefault("informers synced", t)
        elif msg.startswith("wrote ") and "first write (render done)" not in marks:
            marks["first write (render done)"] = t
        if msg == "wrote ConfigMap" and "-part-" in name and "config written" not in marks:
            parts.append(t)
        elif msg == "config written":
            marks.setdefault("config written", t)
    out = [f"{k} +{v:.1f}s" for k, v in marks.items()]
    if parts:
        out.append(f"{len(parts)} part writes in {parts[-1] - parts[0] + (parts[1] - parts[0] if len(parts) > 1 else 0):.1f}s")
    return "; ".join(out)


def figure_startup_real(n: int, *, reuse: bool = False) -> list[Row]:
    """``reuse``: start from the seeded cluster a former run left running, and leave it running."""
    case = f"N={n} routes + {n} ingresses, real API server"
    why = _missing()
    if why:
        return [not_measured("startup", case, why, "< 10 s")]
    rows: list[Row] = []
    wl = workload.build(n)
    try:
        with _cluster(reuse=reuse) as (cluster, helm):
            seeded = _SEEDED.exists() and _SEEDED.read_text().strip() == str(n)
            if seeded:
                from tests.support.chartrelease import ChartRelease

                release = ChartRelease.attach(cluster, helm, RELEASE, NAMESPACE, workdir=_WORK)
                _reset_config(cluster, release)
                load_s = prime_s = 0.0
                primed = 0
            else:
                if _SEEDED.exists():
                    raise RuntimeError(f"the cluster in {BENCH_DIR} was seeded with N={_SEEDED.read_text().strip()}: "
                                       "stop it first (hack/kube/down.sh .cache/kube/bench)")
                release = _install(cluster, helm)
                load_s = _seed(cluster, release, wl.objects)
                t_prime = time.monotonic()
                primed = _prime_statuses(cluster, release)
                prime_s = time.monotonic() - t_prime
                if reuse:
                    _SEEDED.write_text(f"{n}\n")
            first: dict[str, float] = {}
            root = release.rel.config_map

            def on_cm(t: float, _etype: str, obj: dict[str, Any]) -> None:
                if obj["metadata"]["name"] == root and ((obj.get("data") or {}).get("twp.yaml") or "").strip():
                    first.setdefault("t", t)

            watcher = _Watcher(cluster, "ConfigMap", on_cm)
            try:
                (_WORK / "bench.log").unlink(missing_ok=True)  # (the log of a former run, with reuse)
                t0_wall, t0 = time.time(), time.monotonic()
                ctrl = release.start_controller("bench", health_port=18081)
                end = t0 + 300
                while "t" not in first and time.monotonic() < end:
                    if not ctrl.alive():
                        raise RuntimeError(f"controller exited: {ctrl.log()[-500:]}")
                    time.sleep(0.02)
                if "t" not in first:
                    raise TimeoutError("no config written within 300 s")
                took = first["t"] - t0
                rows.append(Row("startup", case, f"first config written after {seconds(took)}", "< 10 s", took < 10.0))
                phases = _log_phases(ctrl.log_path, t0_wall)
                if phases:
                    rows.append(Row("startup", "phases (controller log), real API server", phases, "", None))
                time.sleep(3)
                st = proc_status(ctrl.pid)
                rows.append(Row("memory", f"controller process, N={n} after start-up, real API server",
                                f"RSS {mib(st.get('VmRSS', 0))}, peak {mib(st.get('VmHWM', 0))}",
                                "< 300 MiB", st.get("VmHWM", 1 << 40) < 300 * 1024 * 1024))
                ctrl.stop()
            finally:
                watcher.stop()
            rows.append(Row("startup", "real API server: seeding + status priming (not counted)",
                            "a seeded cluster reused (--reuse-cluster)" if seeded else
                            f"{len(wl.objects)} objects in {seconds(load_s)}, {primed} statuses in {seconds(prime_s)}",
                            "", None))
    except Exception as exc:  # noqa: BLE001
        rows.append(error_row("startup", exc, case))
    return rows


def figure_status_real(n: int) -> list[Row]:
    case = f"{n} HTTPRoutes created at once, real API server"
    why = _missing()
    if why:
        return [not_measured("status", case, why, "< 2 s, 1 write per object")]
    rows: list[Row] = []
    base = workload.build(n, ingresses=False, routes=False)
    gw_ns, gw_name = workload.namespace_name(0), "gw-00"
    routes = workload.routes_for_one_gateway(n, _for_server)
    keys = {(r["metadata"]["namespace"], r["metadata"]["name"]) for r in routes}
    try:
        with _cluster() as (cluster, helm):
            release = _install(cluster, helm)
            _seed(cluster, release, base.objects)
            ours = release.rel.controller_name
            accepted: set[tuple[str, str]] = set()
            state: dict[str, Any] = {"attached": None, "t_routes": None, "t_gateway": None, "t_first": None,
                                     "config": None}
            done = threading.Event()
            lock = threading.Lock()

            def on_route(t: float, _etype: str, obj: dict[str, Any]) -> None:
                meta = obj["metadata"]
                if (meta["namespace"], meta["name"]) not in keys:
                    return
                for p in (obj.get("status") or {}).get("parents") or []:
                    if p.get("controllerName") == ours and any(
                            c.get("type") == "Accepted" and c.get("status") == "True" for c in p.get("conditions") or []):
                        with lock:
                            accepted.add((meta["namespace"], meta["name"]))
                            if state["t_first"] is None:
                                state["t_first"] = t
                            if len(accepted) == len(keys) and state["t_routes"] is None:
                                state["t_routes"] = t
                if state["t_routes"] is not None and state["t_gateway"] is not None:
                    done.set()

            def on_gateway(t: float, _etype: str, obj: dict[str, Any]) -> None:
                meta = obj["metadata"]
                if (meta["namespace"], meta["name"]) != (gw_ns, gw_name):
                    return
                counts = [ls.get("attachedRoutes") for ls in (obj.get("status") or {}).get("listeners") or []]
                state["attached"] = counts
                if counts and all(x == len(keys) for x in counts) and state["t_gateway"] is None:
                    state["t_gateway"] = t
                if state["t_routes"] is not None and state["t_gateway"] is not None:
                    done.set()

            def on_cm(t: float, _etype: str, obj: dict[str, Any]) -> None:
                if obj["metadata"]["name"] == release.rel.config_map and (obj.get("data") or {}).get("twp.yaml"):
                    state["config"] = t

            watchers = [_Watcher(cluster, "ConfigMap", on_cm)]
            try:
                ctrl = release.start_controller("bench", health_port=18081)
                end = time.monotonic() + 120
                while state["config"] is None and time.monotonic() < end:
                    time.sleep(0.05)
                time.sleep(2.0)
                watchers += [_Watcher(cluster, "HTTPRoute", on_route), _Watcher(cluster, "Gateway", on_gateway)]
                mark = cluster.audit.mark()
                local = threading.local()

                def create(obj: dict[str, Any]) -> None:
                    if not hasattr(local, "api"):
                        local.api = cluster.admin_api()
                    local.api.create(obj)

                t_create = time.monotonic()
                with ThreadPoolExecutor(LOADERS) as pool:
                    list(pool.map(create, routes))
                t_created = time.monotonic()
                if not done.wait(120):
                    raise TimeoutError(f"after 120 s: {len(accepted)}/{len(keys)} Accepted, "
                                       f"attachedRoutes {state['attached']}")
                took = max(state["t_routes"], state["t_gateway"]) - t_create
                time.sleep(3.0)  # late duplicate writes, if any, are counted too
                writes = cluster.audit.writes(mark, user=release.service_account_user)
                route_writes = [w for w in writes if w["objectRef"].get("resource") == "httproutes"
                                and w["objectRef"].get("subresource") == "status"]
                gw_writes = [w for w in writes if w["objectRef"].get("resource") == "gateways"
                             and w["objectRef"].get("subresource") == "status"]
                rows.append(Row("status", case, f"all Accepted + attachedRoutes={len(keys)} after {seconds(took)} "
                                f"(creating took {seconds(t_created - t_create)}; "
                                f"{seconds(took - (t_created - t_create))} after the last create)", "< 2 s", took < 2.0))
                rows.append(Row("status", "phases (watch events), real API server",
                                f"created +{seconds(t_created - t_create)}; first route Accepted "
                                f"+{seconds(state['t_first'] - t_create)}; Gateway attachedRoutes={len(keys)} "
                                f"+{seconds(state['t_gateway'] - t_create)}; last route Accepted "
                                f"+{seconds(state['t_routes'] - t_create)}", "", None))
                rows.append(Row("status", "status writes, real API server (audit log)",
                                f"{len(route_writes)} HTTPRoute ({len(route_writes) / len(keys):.2f}/route), "
                                f"{len(gw_writes)} Gateway status writes; {len(writes)} API writes in total",
                                "1 per object", len(route_writes) == len(keys) and len(gw_writes) <= 2))
                ctrl.stop()
            finally:
                for w in watchers:
                    w.stop()
    except Exception as exc:  # noqa: BLE001
        rows.append(error_row("status", exc, case))
    return rows
