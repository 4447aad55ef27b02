"""The ports of a Gateway's own data plane (``per-gateway`` mode): which container port serves
each port its listeners name.

A Gateway's own data plane exposes whatever ports its listeners (and its ListenerSets'
listeners) name: its Service has one port per listener port, forwarded to a container port of
its pods, where the data plane binds the listener. The data plane runs as non-root, so:

* a port of 1024 or more is served on the same container port;
* a privileged port (below 1024) is served on the container port the chart's port map gives it
  (``--port-map``: 80 -> 8080, 443 -> 8443), else on the port + 8000;
* when that container port is already another listener port's (a Gateway with listeners on 80
  and 8080), or is the data plane's admin port, the next free port above it is taken.

The Gateway's own listener ports of 1024 or more are claimed first, so a privileged port never
takes the number of one of them; the others are given in the order the listeners are translated
(the Gateway's, then its ListenerSets'), so the same listeners always get the same ports. A
change of the listeners can change the container ports; a listener change rolls the Gateway's
pods anyway (they bind their listeners at start).

The shared data plane (``shared`` mode) keeps the chart's fixed ports (``--data-plane-ports``):
a listener port that maps elsewhere is PortUnavailable there (render/gateway.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: the first port a non-root process may bind
UNPRIVILEGED = 1024
MAX_PORT = 65535
#: a privileged port without a port-map entry is served this much higher (80 -> 8080)
PRIVILEGED_OFFSET = 8000


@dataclass(frozen=True, order=True)
class ServedPort:
    """A port of a Gateway's data plane: its Service's ``port`` and the container port it
    forwards to, and whether the listener there decrypts TLS."""

    port: int
    container_port: int
    https: bool

    @property
    def name(self) -> str:
        """The Service and container port name: ``http-8080``, ``https-443`` (at most 11
        characters, an IANA service name)."""
        return f"{'https' if self.https else 'http'}-{self.port}"


class ContainerPorts:
    """The container ports of one Gateway's own data plane (see the module doc)."""

    __slots__ = ("_port_map", "_taken", "_by_port", "_served")

    def __init__(self, own_ports: Iterable[int], port_map: Mapping[int, int], reserved: Iterable[int] = ()) -> None:
        self._port_map = port_map
        self._taken: set[int] = set(reserved)
        self._by_port: dict[int, int] = {}
        self._served: dict[int, ServedPort] = {}
        ports = sorted({p for p in own_ports if 1 <= p <= MAX_PORT})
        for port in ports:
            if port >= UNPRIVILEGED and port not in self._taken:
                self._claim(port, port)

    def _claim(self, port: int, container_port: int) -> int:
        self._by_port[port] = container_port
        self._taken.add(container_port)
        return container_port

    def container_port(self, port: int) -> int:
        """The container port that serves listener port ``port`` (1-65535)."""
        got = self._by_port.get(port)
        if got is not None:
            return got
        if port >= UNPRIVILEGED and port not in self._taken:
            return self._claim(port, port)
        wanted = self._port_map.get(port) or (port + PRIVILEGED_OFFSET if port < UNPRIVILEGED else port)
        candidate = min(max(wanted, UNPRIVILEGED), MAX_PORT)
        while candidate in self._taken:
            candidate = candidate + 1 if candidate < MAX_PORT else UNPRIVILEGED
        return self._claim(port, candidate)

    def serve(self, port: int, https: bool) -> None:
        """Listener port ``port`` is programmed (a usable listener): its Service exposes it."""
        self._served.setdefault(port, ServedPort(port, self.container_port(port), https))

    def served(self) -> tuple[ServedPort, ...]:
        """The ports the Gateway's Service exposes, by port."""
        return tuple(sorted(self._served.values()))
