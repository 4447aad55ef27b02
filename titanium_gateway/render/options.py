"""Options of the pure render (a subset of the controller's configuration)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

DEFAULT_CONTROLLER_NAME = "titaniumproxy.com/gateway-controller"
DEFAULT_INGRESS_CONTROLLER_NAME = "titanium.io/ingress-controller"
DEFAULT_PORT_MAP: Mapping[int, int] = MappingProxyType({80: 8080, 443: 8443})
DEFAULT_DATA_PLANE_PORTS: tuple[int, ...] = (8080, 8443)
#: A rendered document larger than this is split into parts (see the contract).
PART_LIMIT_BYTES = 900 * 1024
#: How many part ConfigMaps the data-plane pods mount (chart value dataPlane.configParts).
DEFAULT_MAX_PARTS = 64


def parse_port_map(text: str) -> dict[int, int]:
    """``"80=8080,443=8443"`` -> ``{80: 8080, 443: 8443}``; raises ValueError when malformed."""
    result: dict[int, int] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        src, sep, dst = item.partition("=")
        if not sep:
            raise ValueError(f"port map entry {item!r} is not PORT=PORT")
        a, b = int(src), int(dst)
        if not (1 <= a <= 65535 and 1 <= b <= 65535):
            raise ValueError(f"port map entry {item!r} has a port outside 1-65535")
        result[a] = b
    return result


def parse_networks(text: str) -> tuple[str, ...]:
    """``"198.51.100.0/24, 2001:db8::/64"`` -> the networks in their canonical form; raises
    ValueError when one is not a network (an address alone is a /32 or /128)."""
    return tuple(str(ipaddress.ip_network(part.strip(), strict=False)) for part in text.split(",") if part.strip())


def parse_ports(text: str) -> tuple[int, ...]:
    ports = tuple(sorted({int(p) for p in text.split(",") if p.strip()}))
    if any(not 1 <= p <= 65535 for p in ports):
        raise ValueError(f"port list {text!r} has a port outside 1-65535")
    return ports


@dataclass(frozen=True)
class RenderOptions:
    controller_name: str = DEFAULT_CONTROLLER_NAME
    ingress_controller_name: str = DEFAULT_INGRESS_CONTROLLER_NAME
    watch_legacy_annotation: bool = False
    port_map: Mapping[int, int] = field(default_factory=lambda: DEFAULT_PORT_MAP)
    data_plane_ports: tuple[int, ...] = DEFAULT_DATA_PLANE_PORTS
    #: (namespace, name) of the data-plane Service: the source of Gateway addresses.
    data_plane_service: tuple[str, str] = ("gateway-system", "titanium")
    #: Report Programmed as it will be once the data plane confirms (offline render).
    assume_programmed: bool = False
    part_limit_bytes: int = PART_LIMIT_BYTES
    max_parts: int = DEFAULT_MAX_PARTS
    #: The namespaces whose Secrets the controller reads (``--secret-namespaces``; empty: all).
    #: A certificate Secret elsewhere is reported as unreadable, not as missing.
    secret_namespaces: tuple[str, ...] = ()
    #: ``shared`` (one data plane for every Gateway) or ``per-gateway`` (render/planes.py).
    data_plane_mode: str = "shared"
    #: ``per-gateway``: the namespaces the controller may create data planes in
    #: (``--gateway-namespaces``; empty: all).
    gateway_namespaces: tuple[str, ...] = ()
    #: ``per-gateway``: the type of each Gateway's data-plane Service (only a LoadBalancer can
    #: carry the address a Gateway's ``spec.addresses`` asks for).
    gateway_service_type: str = "LoadBalancer"
    #: ``per-gateway``: the data plane's admin port (``--admin-port``), which no listener of a
    #: Gateway's own data plane is given (render/listenerports.py)
    data_plane_admin_port: int = 9901
    #: ``per-gateway``: the networks (CIDRs) the load balancer gives addresses from
    #: (``--gateway-address-ranges``); a Gateway's requested address outside them cannot be used
    #: (Programmed AddressNotUsable). Empty: any address may be asked for.
    gateway_address_ranges: tuple[str, ...] = ()

    def data_plane_port(self, gateway_port: int) -> int:
        """A Gateway port missing from the port map maps to the same data-plane port."""
        return self.port_map.get(gateway_port, gateway_port)
