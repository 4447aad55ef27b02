"""Loopback ports for servers a test starts itself and must name before they bind.

Asking the kernel for a free port (bind to port 0, read it, close) and binding it later races
with every other bind to port 0 and every outgoing connection in between: the kernel hands out
ephemeral ports from the same range, so the "free" port can be given to the data plane's admin
server or to a client's local end before the listener binds it. ``free_port`` therefore picks
from outside the kernel's ephemeral range (``net.ipv4.ip_local_port_range``) and never gives
the same port twice in one process.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
from pathlib import Path

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10000


def _candidates() -> list[int]:
    """Ports outside the ephemeral range, starting at an offset of this process's own."""
    try:
        low, high = (int(x) for x in _RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    ports = [p for p in range(_LOWEST, 65536) if not low <= p <= high]
    if not ports:  # the whole space is ephemeral: fall back to the kernel's choice
        return []
    start = (os.getpid() * 997) % len(ports)
    return ports[start:] + ports[:start]


_lock = threading.Lock()
_next = itertools.cycle(_candidates() or [0])
_given: set[int] = set()


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` that nothing holds now and that no other call in this process has
    returned or will return, outside the kernel's ephemeral range."""
    with _lock:
        for _ in range(65536):
            port = next(_next)
            if port == 0:
                with socket.socket() as s:
                    s.bind((host, 0))
                    return int(s.getsockname()[1])
            if port in _given or not _bindable(host, port):
                continue
            _given.add(port)
            return port
    raise RuntimeError(f"no free port on {host} outside the ephemeral range")
