"""Own-stack pod namespaces for real (root only): a pod namespace joined to a test cluster
namespace's bridge reaches the node address, and the node reaches the pod on every port it
listens on; removal leaves no namespace behind. Everything stays inside namespaces this test
creates (198.18.0.0/16 on their own bridge)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("nsenter") is None,
                                reason="needs root, iproute2 and nsenter (network namespaces)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@pytest.fixture
def cluster_ns():
    name = f"tgk-t{os.getpid() % 100000}"
    _ip("netns", "add", name)
    try:
        _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", name, "link", "add", "tgbr0", "type", "bridge")
        _ip("-n", name, "addr", "add", "198.18.0.1/16", "dev", "tgbr0")
        _ip("-n", name, "link", "set", "tgbr0", "up")
        yield name
    finally:
        _ip("netns", "del", name, check=False)


SCRIPT = textwrap.dedent('''
    import socket, subprocess, sys, time
    from tools.podrunner.network import Network, ip
    prefix = sys.argv[1]
    net = Network(bridge="tgbr0", gateway="198.18.0.1", prefix_len=16, netns_prefix=prefix)
    netns, veth = net.add_own_stack("198.18.1.10")
    assert netns == prefix + "1" and veth == "tgv1", (netns, veth)
    server = subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, "-c",
        "import socket; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
        "s.bind(('0.0.0.0', 3000)); s.listen(); c,a=s.accept(); c.sendall(a[0].encode()); c.close()"])
    for _ in range(100):
        try:
            c = socket.create_connection(("198.18.1.10", 3000), timeout=1)
            break
        except OSError:
            time.sleep(0.05)
    peer = c.recv(100).decode()
    c.close()
    server.wait(10)
    assert peer == "198.18.0.1", peer   # the node reached the pod from its bridge address
    ping = subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c",
        "import socket; socket.create_connection(('198.18.0.1', 39999), timeout=2)"], capture_output=True, text=True)
    assert "refused" in ping.stderr, ping.stderr   # the node answered (RST), so the route works
    assert net.leftover_namespaces() == [netns]
    net.remove_own_stack(netns, veth)
    assert net.leftover_namespaces() == []
    assert ip("link", "show", veth, check=False).returncode != 0
    print("ok")
''')


def test_own_stack_pod_namespace(cluster_ns, tmp_path):
    prefix = f"tgp-t{os.getpid() % 100000}-"
    script = tmp_path / "net.py"
    script.write_text(SCRIPT)
    try:
        proc = subprocess.run(["nsenter", f"--net=/run/netns/{cluster_ns}", "--", sys.executable, str(script), prefix],
                              capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": ROOT})
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
    finally:
        for line in _ip("netns", "list").stdout.splitlines():
            if line.split() and line.split()[0].startswith(prefix):
                _ip("netns", "del", line.split()[0], check=False)
