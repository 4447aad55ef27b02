"""Leader failover with real OS processes: ``python -m titanium_gateway controller`` replicas
against the FakeApiServer, the leader SIGKILLed (no clean shutdown, no Lease release) twice
while routes keep changing.

The controller sends one fixed user agent (``titanium-gateway``) whatever its identity, so
each process reaches the API server through its own loopback relay (``TaggingProxy``) that
stamps every request's User-Agent with the process's identity: the fake's request log then
says which process made each write, independently of who held the Lease.
Takeover times are printed (``pytest -s``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.conftest import Env, wait_for
from tests.support.ports import free_port

pytestmark = pytest.mark.timeout(120)

UA = "titanium-gateway/"
LEASE, RENEW, RETRY = 3.0, 2.0, 0.5
RECONCILE = 1.0  # one reconcile, generously (min-reconcile-ms is 100)
TAKEOVER_BOUND = 3 * (LEASE + RETRY + RECONCILE)  # 3x the expected worst case: no tight timing assertion
IN_FLIGHT = 0.25  # a request already on the wire when SIGKILL landed may still reach the server


class TaggingProxy:
    """A loopback TCP relay to the API server for one controller process; every request's
    User-Agent becomes ``titanium-gateway/<identity>``. When the process dies its connections
    close, and the relay closes the matching upstream ones (as the process's exit would)."""

    def __init__(self, upstream_port: int, identity: str) -> None:
        self.upstream_port = upstream_port
        self.agent = f"User-Agent: {UA}{identity}\r\n".encode()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name=f"proxy-{identity}", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._socks += [client, upstream]
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._answers, args=(upstream, client), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        """Client -> server, one whole request at a time (urllib3 neither pipelines nor chunks
        request bodies), so a request is forwarded complete or not at all."""
        rfile = client.makefile("rb")
        try:
            while True:
                start = rfile.readline(65537)
                if not start:
                    return
                headers: list[bytes] = []
                length = 0
                while True:
                    line = rfile.readline(65537)
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name = line.split(b":", 1)[0].strip().lower()
                    if name == b"user-agent":
                        continue
                    if name == b"content-length":
                        length = int(line.split(b":", 1)[1])
                    assert name != b"transfer-encoding", "chunked request bodies are not relayed"
                    headers.append(line)
                body = rfile.read(length) if length else b""
                if len(body) < length:
                    return  # the process died mid-request: never forward half of it
                upstream.sendall(start + self.agent + b"".join(headers) + b"\r\n" + body)
        except OSError:
            return
        finally:
            _shut(client, upstream)

    @staticmethod
    def _answers(upstream: socket.socket, client: socket.socket) -> None:
        try:
            while data := upstream.recv(65536):
                client.sendall(data)
        except OSError:
            pass
        finally:
            _shut(client, upstream)

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            socks, self._socks = self._socks, []
        _shut(*socks)


def _shut(*socks: socket.socket) -> None:
    for s in socks:
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            s.close()


class Replica:
    """One controller process and its relay."""

    def __init__(self, env: Env, identity: str, tmp: Path) -> None:
        self.identity = identity
        self.proxy = TaggingProxy(env.server.port, identity)
        kubeconfig = env.server.kubeconfig()
        for c in kubeconfig["clusters"]:
            c["cluster"]["server"] = f"http://127.0.0.1:{self.proxy.port}"
        path = tmp / f"kubeconfig-{identity}"
        path.write_text(yaml.safe_dump(kubeconfig))
        self.health_port = free_port()
        proc_env = {k: v for k, v in os.environ.items() if not k.startswith("TITANIUM_GATEWAY_")}
        proc_env["TITANIUM_ADMIN_TOKEN"] = env.rel.token
        args = [sys.executable, "-m", "titanium_gateway", "controller", *env.rel.controller_args(),
                f"--kubeconfig={path}", f"--identity={identity}", f"--admin-port={env.fleet.port}",
                f"--health-port={self.health_port}", "--min-reconcile-ms=100",
                f"--lease-duration={LEASE}", f"--renew-deadline={RENEW}", f"--retry-period={RETRY}"]
        self.log = open(tmp / f"controller-{identity}.log", "w+b")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(args, env=proc_env, stdout=self.log, stderr=subprocess.STDOUT)

    def ready(self) -> bool:
        assert self.proc.poll() is None, f"{self.identity} exited {self.proc.returncode}: {self.output()}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=1) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def kill(self) -> float:
        """SIGKILL; returns the wall-clock time of the kill (the request log's clock)."""
        t = time.time()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        return t

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-3000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
        self.proxy.close()
        self.log.close()


def writer(rec: Any) -> str:
    return rec.user_agent[len(UA):] if rec.user_agent.startswith(UA) else rec.user_agent


def holder(env: Env) -> str:
    return str((env.must("Lease", env.rel.namespace, env.rel.lease).get("spec") or {}).get("holderIdentity") or "")


def lease_writes(env: Env) -> list[tuple[float, str, str]]:
    """(time, holder in the body, writer) of every successful Lease write."""
    return [(r.time, str((r.body.get("spec") or {}).get("holderIdentity") or ""), writer(r))
            for r in env.server.requests(resource="leases")
            if r.method in ("PUT", "PATCH") and r.status < 300 and isinstance(r.body, dict)]


def test_sigkilled_leader_processes_are_replaced_without_two_writers_or_lost_updates(
        env: Env, tmp_path: Path) -> None:
    env.service("api")
    env.gateway()
    env.route()
    replicas: dict[str, Replica] = {}
    hosts: dict[str, str] = {"shop": "shop.example.com"}  # route name -> its current host
    stop = threading.Event()
    churn_error: list[BaseException] = []

    def churn() -> None:
        """A new route every 0.3 s, and every third round an earlier route changes its host."""
        try:
            i = 0
            while not stop.wait(0.3) and i < 200:
                env.route(name=f"c{i}", host=f"c{i}.example.com")
                hosts[f"c{i}"] = f"c{i}.example.com"
                if i % 3 == 2:
                    env.route(name=f"c{i - 1}", host=f"c{i - 1}-v2.example.com")
                    hosts[f"c{i - 1}"] = f"c{i - 1}-v2.example.com"
                i += 1
        except BaseException as e:  # surfaced after the join
            churn_error.append(e)

    churner = threading.Thread(target=churn, name="route-churn", daemon=True)
    kills: list[tuple[str, float]] = []  # (identity, kill time)
    takeovers: list[tuple[str, str, float, float]] = []  # (killed, successor, takeover s, route in config s)
    try:
        for ident in ("a", "b"):
            replicas[ident] = Replica(env, ident, tmp_path)
        first = wait_for(lambda: holder(env) in replicas and holder(env), timeout=30, interval=0.1,
                         what="one process holds the Lease")
        wait_for(lambda: "shop.example.com" in env.route_hosts(), timeout=20, interval=0.1,
                 what=f"{first} writes the ConfigMap")
        for ident in replicas:
            wait_for(replicas[ident].ready, timeout=20, interval=0.1, what=f"{ident} ready")
        churner.start()
        spare = iter(("c", "d"))
        for k in (1, 2):
            leader = holder(env)
            time.sleep(0.7)  # let the leader write some churn first
            assert holder(env) == leader
            killed_at = replicas[leader].kill()
            kills.append((leader, killed_at))
            # a change right after the kill, while nobody leads
            env.route(name=f"kill{k}", host=f"kill{k}.example.com")
            hosts[f"kill{k}"] = f"kill{k}.example.com"
            successor = wait_for(lambda ld=leader: (h := holder(env)) != ld and h, timeout=TAKEOVER_BOUND,
                                 interval=0.05, what=f"a successor of the SIGKILLed {leader}")
            took = min(t for t, h, w in lease_writes(env) if t > killed_at and h == successor) - killed_at
            wait_for(lambda k=k: f"kill{k}.example.com" in env.route_hosts(), timeout=TAKEOVER_BOUND,
                     interval=0.05, what=f"kill{k}.example.com in the ConfigMap")
            landed = time.time() - killed_at
            takeovers.append((leader, successor, took, landed))
            assert successor in replicas and replicas[successor].proc.poll() is None
            assert took <= TAKEOVER_BOUND and landed <= TAKEOVER_BOUND, takeovers
            # a replacement for the killed replica, a follower by the next kill
            new = next(spare)
            replicas[new] = Replica(env, new, tmp_path)
            wait_for(replicas[new].ready, timeout=20, interval=0.1, what=f"replacement {new} ready")
        stop.set()
        churner.join(10)
        assert not churn_error, churn_error
        final = holder(env)
        want = set(hosts.values())
        wait_for(lambda: env.route_hosts() == want, timeout=20, interval=0.1,
                 what="every route, at its latest host, in the ConfigMap")
    except BaseException:
        for r in replicas.values():
            print(f"--- {r.identity} (exit {r.proc.poll()}):\n{r.output()}")
        raise
    finally:
        stop.set()
        for r in replicas.values():
            r.stop()

    writes = [r for r in env.server.requests() if r.method in ("POST", "PUT", "PATCH", "DELETE")
              and r.resource != "leases" and r.status < 300]
    assert writes and all(writer(r) in replicas for r in writes), {r.user_agent for r in writes}
    cm_writers = {writer(r) for r in writes if r.resource == "configmaps" and r.name == env.rel.config_map}
    assert {kills[0][0], kills[1][0], final} <= cm_writers, cm_writers

    # a SIGKILLed process writes nothing after its kill (beyond a request already on the wire)
    for ident, killed_at in kills:
        late = [(r.verb, r.resource, r.name, round(r.time - killed_at, 3)) for r in writes
                if writer(r) == ident and r.time > killed_at + IN_FLIGHT]
        assert not late, f"{ident} wrote after its SIGKILL: {late}"

    # never two writers within one lease term: the writers' runs never interleave, every write
    # falls in a term its writer holds, and a successor's first write comes after its
    # predecessor's last renewal + the lease duration
    leases = lease_writes(env)
    assert all(h == w for _, h, w in leases if h), "a process wrote the Lease for another identity"
    order: list[str] = []
    for r in writes:
        w = writer(r)
        if not order or order[-1] != w:
            assert w not in order, f"{w} wrote again after {order[-1]} had written: two writers"
            order.append(w)
    for r in writes:
        w = writer(r)
        renewed = [t for t, h, _ in leases if h == w and t <= r.time]
        assert renewed and r.time < max(renewed) + LEASE, \
            f"{writer(r)} wrote {r.verb} {r.resource}/{r.name} outside a lease term it held"
    for prev, nxt in zip(order, order[1:], strict=False):
        last_renew = max(t for t, h, _ in leases if h == prev)
        first_write = min(r.time for r in writes if writer(r) == nxt)
        assert first_write >= last_renew + LEASE - 0.05, \
            f"{nxt} wrote {last_renew + LEASE - first_write:.2f}s before {prev}'s lease could have expired"
    assert order == [kills[0][0], kills[1][0], final], order

    print(f"\nprocess kills: writers in order {order}; "
          + "; ".join(f"SIGKILL {k} -> {s} took the Lease after {t:.2f}s, change in the ConfigMap after {d:.2f}s"
                      for k, s, t, d in takeovers)
          + f" (lease {LEASE:g}s / renew {RENEW:g}s / retry {RETRY:g}s, bound {TAKEOVER_BOUND:g}s); "
          f"{len(hosts)} routes, none lost")
