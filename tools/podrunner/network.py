"""Pod and load-balancer addresses on the local cluster's network (hack/kube, NETWORK.md).

The runner itself runs inside the cluster's network namespace, where the bridge (``tgbr0``,
the node address) lives. A pod is hosted one of two ways:

- own stack: a network namespace ``<prefix><n>`` joined to the bridge by a veth pair, the pod IP
  (/16 of the bridge's network) on its ``eth0``, the default route via the node address. Programs
  that listen on every address of fixed ports (the echo server, the data plane's ``0.0.0.0``
  listeners, two controller replicas' health ports) each get their own ports this way.
- shared stack: the pod IP as a /32 on the cluster namespace's ``lo``; the program binds it.

Load-balancer addresses are /32s on ``lo`` too.
"""

from __future__ import annotations

import ipaddress
import logging
import subprocess
import threading
from collections.abc import Sequence

log = logging.getLogger(__name__)


class AddressPool:
    """IPv4 addresses ``first``..``last`` handed out in turn (the next free one after the last
    handed out, wrapping around), so a released address is not given again at once: the
    neighbour (ARP) caches of the cluster and of other pods may still hold the old pod's MAC
    address for it, and connections to the new pod would go nowhere for up to a minute;
    ``reserve`` pins a known one."""

    def __init__(self, first: str, last: str) -> None:
        self.first = int(ipaddress.IPv4Address(first))
        self.last = int(ipaddress.IPv4Address(last))
        if self.last < self.first:
            raise ValueError(f"empty address range {first}-{last}")
        self._used: set[int] = set()
        self._next = self.first
        self._lock = threading.Lock()

    @classmethod
    def parse(cls, spec: str) -> AddressPool:
        first, _, last = spec.partition("-")
        return cls(first.strip(), (last or first).strip())

    def contains(self, ip: str) -> bool:
        try:
            n = int(ipaddress.IPv4Address(ip))
        except ValueError:
            return False
        return self.first <= n <= self.last

    def reserve(self, ip: str) -> bool:
        """Mark ``ip`` used; False when it is outside the range or already used."""
        if not self.contains(ip):
            return False
        n = int(ipaddress.IPv4Address(ip))
        with self._lock:
            if n in self._used:
                return False
            self._used.add(n)
            return True

    def allocate(self) -> str:
        with self._lock:
            size = self.last - self.first + 1
            for i in range(size):
                n = self.first + (self._next - self.first + i) % size
                if n not in self._used:
                    self._used.add(n)
                    self._next = n + 1 if n < self.last else self.first
                    return str(ipaddress.IPv4Address(n))
        raise RuntimeError("address pool exhausted")

    def release(self, ip: str) -> None:
        try:
            n = int(ipaddress.IPv4Address(ip))
        except ValueError:
            return
        with self._lock:
            self._used.discard(n)

    def in_use(self) -> list[str]:
        with self._lock:
            return [str(ipaddress.IPv4Address(n)) for n in sorted(self._used)]


class IpCommandError(RuntimeError):
    pass


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``ip ARGS`` (iproute2)."""
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise IpCommandError(f"ip {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")
    return proc


class Network:
    """Creates and removes pod network namespaces and local addresses (see module doc)."""

    def __init__(self, *, bridge: str, gateway: str, prefix_len: int, netns_prefix: str) -> None:
        self.bridge = bridge
        self.gateway = gateway
        self.prefix_len = prefix_len
        self.netns_prefix = netns_prefix
        self._n = 0
        self._lock = threading.Lock()

    def next_index(self) -> int:
        with self._lock:
            self._n += 1
            return self._n

    def add_own_stack(self, pod_ip: str) -> tuple[str, str]:
        """A new pod namespace with ``pod_ip``: returns (netns name, host-side veth name)."""
        n = self.next_index()
        netns = f"{self.netns_prefix}{n}"
        veth = f"tgv{n}"
        ip("netns", "add", netns)
        try:
            ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
            ip("link", "set", veth, "master", self.bridge)
            ip("link", "set", veth, "up")
            ip("-n", netns, "link", "set", "lo", "up")
            ip("-n", netns, "addr", "add", f"{pod_ip}/{self.prefix_len}", "dev", "eth0")
            ip("-n", netns, "link", "set", "eth0", "up")
            ip("-n", netns, "route", "add", "default", "via", self.gateway)
            # an entry of an earlier pod with this address would send its packets to a MAC
            # address that is gone until it expires
            ip("neigh", "flush", "to", pod_ip, check=False)
        except Exception:
            self.remove_own_stack(netns, veth)
            raise
        return netns, veth

    def remove_own_stack(self, netns: str, veth: str) -> None:
        ip("link", "del", veth, check=False)  # deleting one end deletes the pair
        ip("netns", "del", netns, check=False)

    def add_local(self, addr: str) -> None:
        proc = ip("addr", "add", f"{addr}/32", "dev", "lo", check=False)
        if proc.returncode != 0 and "File exists" not in proc.stderr:
            raise IpCommandError(f"ip addr add {addr}/32 dev lo: {proc.stderr.strip()}")

    def remove_local(self, addr: str) -> None:
        ip("addr", "del", f"{addr}/32", "dev", "lo", check=False)

    def leftover_namespaces(self) -> list[str]:
        """Namespaces with our prefix (from a runner that did not clean up)."""
        out = ip("netns", "list", check=False).stdout
        return [line.split()[0] for line in out.splitlines()
                if line.strip() and line.split()[0].startswith(self.netns_prefix)]


def wrap_netns(netns: str | None, argv: Sequence[str]) -> list[str]:
    """``argv`` run inside ``netns`` (unchanged for the shared stack)."""
    return ["ip", "netns", "exec", netns, *argv] if netns else list(argv)
