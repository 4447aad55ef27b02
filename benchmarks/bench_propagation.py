"""Route propagation on the real control plane with the reference data plane, as `make dev` runs it.

    sudo python3 benchmarks/bench_propagation.py [--attached 1000,3000] [--count 30] [--no-listener]
    make bench-propagation

On a cluster of its own (``.cache/kube/propagation``, ``--dir``), ``hack/kube/dev.sh`` sets up
what ``make dev`` does: the local control plane, the pod runner (the kubelet and load-balancer
stand-in), the chart with this tree's controller and the reference data plane, the quick start
(Gateway ``apps/web``, HTTPRoute ``shop``) and its echo backends. Then, for each size N:

1. HTTPRoutes ``seed-<i>`` (hostname ``seed-<i>.bench.example.com``, ``/`` -> ``api:8080``) are
   created until N of them are attached to ``web`` (the quick start's ``shop`` besides), and the
   last one answers through the Gateway's address;
2. one at a time, ``--count`` times each: a route **created**, then **changed** (a
   ResponseHeaderModifier setting ``x-bench: <n>``), then **deleted**; each timed from just before
   the API call to the first matching answer through the Gateway's address (200; 200 with the
   new header; 404), polled every ``--poll-ms``;
3. beside each operation, the moments the Gateway's config ConfigMap was written and the
   data-plane pod was poked (watch events received here), to show where the time goes.

Then, at the largest N (the routes still attached; ``--no-listener`` skips it), an HTTPS listener
(port 443, hostname ``shop.example.com``, Terminate) is added to ``web`` with a certificate Secret
in ``apps`` (self-signed, made in memory): timed from just before the API call to the first 200
over TLS through the Gateway's address (SNI ``shop.example.com``, the certificate verified against
that one), and to the data plane's Deployment rolled out (as many pods as it wants, all new and
Ready, the old ones gone: a new listener set rolls the Gateway's data plane); then the listener is
removed, timed until the data plane has rolled back.

A background client sends ``--rate`` requests a second to the quick start's route on port 80 (a
new connection each, so through the load balancer to any ready data-plane pod) for the whole run,
the listener's rollouts included; every answer other than 200 is counted and shown.

Prints one table per N: p50, p99 and max of each operation (nearest rank: with fewer than 100
samples, p99 is the largest); then one of the listener's steps, in seconds. Needs root (the
cluster's network namespace) and the control plane built (``hack/kube/build.sh``). ``--keep``
leaves the cluster running; ``--reuse`` uses one that is running there (its seed routes are kept
and topped up).
"""

from __future__ import annotations

import argparse
import base64
import collections
import concurrent.futures
import http.client
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import requests  # noqa: E402

from benchmarks import workload  # noqa: E402
from benchmarks.common import ROOT, percentile  # noqa: E402

NS = "apps"
GATEWAY = "web"
CONFIG_MAP = "web-titanium"  # the Gateway's own data plane (render/planes.py: <gateway>-<class>)
DOMAIN = "bench.example.com"
LOADERS = 4
HOST = "shop.example.com"  # the quick start's route
DATA_PLANE = f"gateway.networking.k8s.io/gateway-name={GATEWAY}"  # the labels of its pods
TLS_SECRET = "bench-shop-tls"


def route(name: str, host: str, header: str | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                            "backendRefs": [{"name": "api", "port": 8080}]}
    if header is not None:
        rule["filters"] = [{"type": "ResponseHeaderModifier",
                            "responseHeaderModifier": {"set": [{"name": "x-bench", "value": header}]}}]
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"parentRefs": [{"name": GATEWAY}], "hostnames": [host], "rules": [rule]}}


class Watcher(threading.Thread):
    """Receive times of the writes to the Gateway's ConfigMap and of pokes of its pods."""

    def __init__(self, cluster: Any, kind: str, name: str | None = None, **selectors: str) -> None:
        super().__init__(daemon=True, name=f"watch-{kind}")
        self.cluster, self.kind, self.only, self.selectors = cluster, kind, name, selectors
        self.times: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        api = self.cluster.admin_api()
        rv = None
        last: dict[str, str] = {}
        while not self.stop.is_set():
            try:
                if rv is None:
                    listed = api.list_raw(self.kind, NS, **self.selectors)
                    rv = listed["metadata"]["resourceVersion"]
                    for o in listed.get("items") or []:
                        last[o["metadata"]["name"]] = self.key(o)
                for ev in api.watch(self.kind, NS, resource_version=rv, timeout_seconds=30, **self.selectors):
                    now = time.monotonic()
                    obj = ev.get("object") or {}
                    rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
                    if ev.get("type") not in ("ADDED", "MODIFIED"):
                        continue
                    name, key = obj["metadata"]["name"], self.key(obj)
                    if self.only is not None and name != self.only:
                        continue
                    if last.get(name) != key:
                        last[name] = key
                        self.times.append(now)
            except Exception as exc:  # noqa: BLE001 - a watch that ends (410, a timeout) is listed again
                print(f"bench_propagation: the {self.kind} watch ended ({exc!r}); listing again", file=sys.stderr)
                rv = None
                time.sleep(0.2)

    def key(self, obj: dict[str, Any]) -> str:
        if self.kind == "Pod":
            return str(((obj.get("metadata") or {}).get("annotations") or {}).get(
                "gateway.titaniumproxy.com/config-poke", ""))
        return str(obj["metadata"]["resourceVersion"])

    def first_after(self, t0: float) -> float | None:
        return next((t for t in self.times if t >= t0), None)


class Background(threading.Thread):
    """A steady stream to the quick start's route; every answer other than 200 is kept."""

    def __init__(self, address: str, rate: float) -> None:
        super().__init__(daemon=True, name="background")
        self.url = f"http://{address}/api/items"
        self.interval = 1.0 / rate
        self.codes: collections.Counter[str] = collections.Counter()
        self.failures: list[tuple[float, str]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        nxt = time.monotonic()
        while not self.stop.is_set():
            try:
                r = requests.get(self.url, headers={"Host": "shop.example.com", "Connection": "close"}, timeout=5)
                code = str(r.status_code)
            except requests.RequestException as exc:
                code = type(exc).__name__
            self.codes[code] += 1
            if code != "200":
                self.failures.append((time.time(), code))
            nxt += self.interval
            self.stop.wait(max(0.0, nxt - time.monotonic()))


def get(http: requests.Session, address: str, host: str) -> requests.Response | None:
    try:
        return http.get(f"http://{address}/", headers={"Host": host}, timeout=5)
    except requests.RequestException:
        return None


def wait_answer(http: requests.Session, address: str, host: str, ok: Any, poll: float, timeout: float) -> float:
    end = time.monotonic() + timeout
    while True:
        r = get(http, address, host)
        if r is not None and ok(r):
            return time.monotonic()
        if time.monotonic() > end:
            raise TimeoutError(f"{host}: no matching answer within {timeout:.0f} s "
                               f"(last: {r.status_code if r is not None else 'no answer'})")
        time.sleep(poll)


def seed(cluster: Any, address: str, n: int) -> float:
    """Create seed-0..n-1 where absent; wait until all are attached and the last one serves."""
    api = cluster.api
    have = {o["metadata"]["name"] for o in api.list("HTTPRoute", NS)}
    todo = [i for i in range(n) if f"seed-{i}" not in have]
    t0 = time.monotonic()
    local = threading.local()

    def create(i: int) -> None:
        if not hasattr(local, "api"):
            local.api = cluster.admin_api()
        for attempt in range(5):
            try:
                local.api.create(route(f"seed-{i}", f"seed-{i}.{DOMAIN}"))
                return
            except Exception as exc:  # noqa: BLE001
                if "AlreadyExists" in str(exc) or "409" in str(exc):
                    return
                if attempt == 4:
                    raise
                time.sleep(1)

    with concurrent.futures.ThreadPoolExecutor(LOADERS) as pool:
        list(pool.map(create, todo))
    end = time.monotonic() + 600
    while True:
        gw = api.get("Gateway", NS, GATEWAY)
        attached = max((ls.get("attachedRoutes", 0) for ls in (gw.get("status") or {}).get("listeners") or []),
                       default=0)
        if attached >= n + 1:
            break
        if time.monotonic() > end:
            raise TimeoutError(f"attachedRoutes {attached} < {n + 1} after 600 s")
        time.sleep(1)
    http = requests.Session()
    http.trust_env = False
    wait_answer(http, address, f"seed-{n - 1}.{DOMAIN}", lambda r: r.status_code == 200, 0.2, 600)
    return time.monotonic() - t0


def stats(xs: list[float]) -> str:
    if not xs:
        return "-"
    return f"{percentile(xs, 50):.3f} / {percentile(xs, 99):.3f} / {max(xs):.3f}"


def measure(cluster: Any, address: str, n: int, count: int, poll: float, gap: float,
            cm: Watcher, pods: Watcher) -> list[tuple[str, list[float], list[float], list[float]]]:
    api = cluster.api
    http = requests.Session()
    http.trust_env = False
    ops: dict[str, tuple[list[float], list[float], list[float]]] = {
        op: ([], [], []) for op in ("create", "change", "delete")}

    def timed(op: str, call: Any, host: str, ok: Any) -> None:
        time.sleep(gap)
        t0 = time.monotonic()
        call()
        t1 = wait_answer(http, address, host, ok, poll, 60)
        total, written, poked = ops[op]
        total.append(t1 - t0)
        w, p = cm.first_after(t0), pods.first_after(t0)
        if w is not None and w <= t1:
            written.append(w - t0)
        if p is not None and p <= t1:
            poked.append(p - t0)

    for k in range(count):
        name = f"probe-{n}-{k}"
        host = f"{name}.{DOMAIN}"
        created, changed = route(name, host), route(name, host, str(k))
        timed("create", lambda obj=created: api.create(obj), host, lambda r: r.status_code == 200)
        timed("change", lambda name=name, spec=changed["spec"]: api.patch("HTTPRoute", NS, name, {"spec": spec}),
              host, lambda r, k=k: r.status_code == 200 and r.headers.get("x-bench") == str(k))
        timed("delete", lambda name=name: api.delete("HTTPRoute", NS, name), host, lambda r: r.status_code == 404)
    return [(op, *lists) for op, lists in ops.items()]


def certificate(host: str) -> tuple[dict[str, Any], str]:
    """A kubernetes.io/tls Secret in the Gateway's namespace for ``host`` (the workload's
    self-signed certificates, made in memory), and that certificate's PEM to trust."""
    secret = {**workload.tls_secret(NS, TLS_SECRET, (host,), 1), "metadata": {"name": TLS_SECRET, "namespace": NS}}
    return secret, base64.b64decode(secret["data"]["tls.crt"]).decode()


def get_tls(address: str, host: str, ctx: ssl.SSLContext) -> int | None:
    """GET /api/items on a new TLS connection to ``address``:443 with SNI ``host``; the status, or
    None when there is no answer (refused, reset, a certificate that does not verify)."""
    try:
        raw = socket.create_connection((address, 443), timeout=5)
    except OSError:
        return None
    conn = http.client.HTTPConnection(host, 443, timeout=5)
    try:
        conn.sock = ctx.wrap_socket(raw, server_hostname=host)
        conn.request("GET", "/api/items", headers={"Host": host, "Connection": "close"})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except (OSError, ssl.SSLError, http.client.HTTPException):
        return None
    finally:
        conn.close()
        raw.close()


def rolled_out(api: Any, old: set[str]) -> bool:
    """The data plane's Deployment has rolled: as many pods as it wants, all Ready, none of them
    in ``old`` and none terminating."""
    want = api.get("Deployment", NS, CONFIG_MAP)["spec"].get("replicas", 1)
    now = api.list("Pod", NS, label_selector=DATA_PLANE)
    return len(now) == want and all(
        p["metadata"]["name"] not in old and not p["metadata"].get("deletionTimestamp") and any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in (p.get("status") or {}).get("conditions") or [])
        for p in now)


def wait_for(what: str, check: Any, poll: float, timeout: float) -> float:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(poll)
    return time.monotonic()


def listener(cluster: Any, address: str) -> list[tuple[str, str]]:
    """An HTTPS listener for the quick start's host added to the Gateway and removed again; the
    rows of its table (step, seconds or what went wrong)."""
    api = cluster.api
    secret, crt = certificate(HOST)
    ctx = ssl.create_default_context(cadata=crt)  # the served certificate must be ours
    https = {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": HOST,
             "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": TLS_SECRET}]},
             "allowedRoutes": {"namespaces": {"from": "Same"}}}
    api.delete("Secret", NS, TLS_SECRET)
    api.create(secret)
    listeners = [ls for ls in api.get("Gateway", NS, GATEWAY)["spec"]["listeners"] if ls["name"] != "https"]
    pods = lambda: {p["metadata"]["name"] for p in api.list("Pod", NS, label_selector=DATA_PLANE)}  # noqa: E731
    rows: list[tuple[str, str]] = []
    try:
        old = pods()
        time.sleep(1)
        t0 = time.monotonic()
        api.patch("Gateway", NS, GATEWAY, {"spec": {"listeners": [*listeners, https]}})
        try:
            t1 = wait_for("a 200 over HTTPS", lambda: get_tls(address, HOST, ctx) == 200, 0.1, 180)
            rows.append(("HTTPS listener added -> first HTTPS 200", f"{t1 - t0:.1f}"))
            t2 = wait_for("the data plane rolled out", lambda: rolled_out(api, old), 0.2, 240)
            rows.append(("HTTPS listener added -> data plane rolled out", f"{t2 - t0:.1f}"))
        except TimeoutError as exc:
            rows.append(("HTTPS listener added", f"failed: {exc}"))
    finally:
        time.sleep(2)
        old = pods()
        t0 = time.monotonic()
        api.patch("Gateway", NS, GATEWAY, {"spec": {"listeners": listeners}})
        try:
            t3 = wait_for("the data plane rolled back", lambda: rolled_out(api, old), 0.2, 240)
            rows.append(("HTTPS listener removed -> data plane rolled back", f"{t3 - t0:.1f}"))
        except TimeoutError as exc:
            rows.append(("HTTPS listener removed", f"failed: {exc}"))
        time.sleep(2)
        api.delete("Secret", NS, TLS_SECRET)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=str(ROOT / ".cache" / "kube" / "propagation"))
    ap.add_argument("--attached", default="1000,3000", help="sizes N, ascending (routes already attached)")
    ap.add_argument("--count", type=int, default=30, help="creates, changes and deletes timed per size")
    ap.add_argument("--poll-ms", type=float, default=20)
    ap.add_argument("--gap", type=float, default=1.0, help="seconds between timed operations")
    ap.add_argument("--rate", type=float, default=20, help="background requests a second")
    ap.add_argument("--reuse", action="store_true", help="use the cluster running in --dir as it is")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    ap.add_argument("--no-listener", action="store_true",
                    help="skip adding and removing an HTTPS listener at the largest size")
    ap.add_argument("--change-detection", choices=("Cache", "Watch"), default="Cache",
                    help="the pod runner's (the kubelet's) configMapAndSecretChangeDetectionStrategy")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_propagation: needs root (the local cluster's network namespace)", file=sys.stderr)
        return 2
    sizes = [int(s) for s in args.attached.split(",") if s]
    from tests.support.kubecluster import LocalCluster

    directory = Path(args.dir)
    env = {**os.environ, "PYTHON": sys.executable, "PODRUNNER_CHANGE_DETECTION": args.change_detection}
    if not args.reuse:
        subprocess.run([str(ROOT / "hack/kube/down.sh"), str(directory)], capture_output=True, check=False)
    t = time.monotonic()
    p = subprocess.run([str(ROOT / "hack/kube/dev.sh"), str(directory)], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-4000:], sep="\n", file=sys.stderr)
        return 1
    print(f"make dev (hack/kube/dev.sh {directory}): {time.monotonic() - t:.0f} s", file=sys.stderr)
    cluster = LocalCluster(directory)
    address = (directory / "dev" / "gateway-address").read_text().strip()
    bg: Background | None = None
    try:
        with cluster.inside():
            cm = Watcher(cluster, "ConfigMap", CONFIG_MAP)
            pods = Watcher(cluster, "Pod", label_selector=f"gateway.networking.k8s.io/gateway-name={GATEWAY}")
            cm.start()
            pods.start()
            bg = Background(address, args.rate)
            bg.start()
            print(f"Route propagation through {address} (reference data plane; pod runner with "
                  f"{args.change_detection} change detection; {os.cpu_count()} cores); "
                  f"seconds p50 / p99 / max of {args.count} each\n")
            for n in sizes:
                took = seed(cluster, address, n)
                print(f"{n} routes attached (seeded and served in {took:.0f} s)", file=sys.stderr)
                rows = measure(cluster, address, n, args.count, args.poll_ms / 1000, args.gap, cm, pods)
                print(f"| {n} routes attached | API call -> first matching answer | -> ConfigMap written | "
                      f"-> pod poked |")
                print("|---|---|---|---|")
                for op, total, written, poked in rows:
                    print(f"| {op} | {stats(total)} | {stats(written)} | {stats(poked)} |")
                print(flush=True)
            if sizes and not args.no_listener:
                n = max(sizes)
                print(f"| HTTPS listener on {GATEWAY}, {n} routes attached | seconds |")
                print("|---|---|")
                for step, took in listener(cluster, address):
                    print(f"| {step} | {took} |")
                print(flush=True)
    finally:
        if bg is not None:
            bg.stop.set()
            bg.join(10)
            others = {c: n for c, n in bg.codes.items() if c != "200"}
            print(f"background: {sum(bg.codes.values())} requests to shop.example.com/api/items at "
                  f"{args.rate:g}/s, answers other than 200: {others or 'none'}")
            for when, code in bg.failures[:20]:
                print(f"  {time.strftime('%H:%M:%S', time.gmtime(when))} {code}")
        if not args.keep:
            subprocess.run([str(ROOT / "hack/kube/down.sh"), str(directory)], capture_output=True, check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
