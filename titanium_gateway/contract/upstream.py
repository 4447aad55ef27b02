"""How a ``useHttps`` destination's certificate is checked (``httpClient.tls``).

The chain must lead to ``caFile`` (alone) or, without it, to the data plane's system CA store
(``systemRoots: true`` says so explicitly). The name: with ``subjectAltNames``, the certificate
must carry one of them (a ``Hostname`` entry against its DNS names, where a ``*.`` name covers
one label; a ``URI`` entry against its URIs, exactly); else ``serverName`` (also the SNI sent),
else the destination address. A failure answers 502; the request is never sent in plaintext.
"""

from __future__ import annotations

from collections.abc import Iterable

from titanium_gateway.contract.certificates import wildcard_covers
from titanium_gateway.twp import model as m

#: A certificate's subject alternative names as OpenSSL reports them: (``DNS`` | ``URI`` | ..., value)
PeerNames = Iterable[tuple[str, str]]


def dns_name_matches(certificate_name: str, wanted: str) -> bool:
    """A DNS name of a certificate against a wanted host name (case-insensitive, RFC 6125)."""
    pattern, name = certificate_name.lower().rstrip("."), wanted.lower().rstrip(".")
    return pattern == name or wildcard_covers(pattern, name)


def names_match(peer: PeerNames, wanted: Iterable[m.SubjectAltName]) -> bool:
    """Does a certificate with the names ``peer`` carry one of ``wanted``?"""
    peer = tuple(peer)
    for want in wanted:
        for kind, value in peer:
            if want.type == "Hostname" and kind == "DNS" and dns_name_matches(value, want.value):
                return True
            if want.type == "URI" and kind == "URI" and value == want.value:
                return True
    return False
