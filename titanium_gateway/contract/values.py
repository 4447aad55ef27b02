"""How the data plane reads the values of a document (:mod:`titanium_gateway.twp.model`).

A document keeps its own text: a TimeSpan, a CIDR prefix, a regular expression are strings,
an absent cluster algorithm or HTTP client is None. These give what they mean to the data
plane (seconds, networks, the default algorithm), computed once per distinct text.
"""

from __future__ import annotations

import functools
import ipaddress

from titanium_gateway.twp import model as m
from titanium_gateway.twp.load import timespan_seconds
from titanium_gateway.twp.regex import compiled

__all__ = ["algorithm", "client_tls", "compiled", "networks", "route_timeout", "seconds", "upstream_timeout"]

#: the algorithm of a cluster that names none
DEFAULT_ALGORITHM = "RoundRobin"
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def seconds(timespan: str) -> float:
    """A TimeSpan in seconds."""
    return timespan_seconds(timespan)


@functools.lru_cache(maxsize=4096)
def networks(allow: tuple[str, ...]) -> tuple[Network, ...]:
    """The prefixes of an ``IpAllowDeny`` policy (an address is a /32 or /128)."""
    return tuple(ipaddress.ip_network(text.strip(), strict=False) for text in allow)


def route_timeout(route: m.Route) -> float | None:
    """``limits.requestTimeout`` in seconds (None: no limit)."""
    limits = route.behavior.limits
    return None if limits is None else timespan_seconds(limits.request_timeout)


def upstream_timeout(cluster: m.Cluster) -> float | None:
    """``httpClient.requestTimeout`` in seconds: the wait for the response headers (None: none)."""
    client = cluster.http_client
    return None if client is None or client.request_timeout is None else timespan_seconds(client.request_timeout)


def client_tls(cluster: m.Cluster) -> m.UpstreamTls | None:
    client = cluster.http_client
    return None if client is None else client.tls


def tls_server_name(cluster: m.Cluster) -> str | None:
    """The name a ``useHttps`` destination of the cluster is connected as: the SNI sent and, unless
    ``subjectAltNames`` is given, the name its certificate must match (None: the destination
    address)."""
    tls = client_tls(cluster)
    return None if tls is None else tls.server_name


def algorithm(cluster: m.Cluster) -> str:
    return cluster.algorithm or DEFAULT_ALGORITHM
