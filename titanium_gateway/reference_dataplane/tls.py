"""TLS for the reference data plane: PFX -> server contexts, SNI selection, upstream contexts.

Python's ``ssl`` loads certificate chains from files only. A private key never touches the
file system: the PEM chain and key are written to an anonymous in-memory file
(``os.memfd_create``) and loaded through ``/proc/self/fd/N``, which is closed right after.
"""

from __future__ import annotations

import contextlib
import os
import ssl
from collections.abc import Callable

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from titanium_gateway.contract.certificates import select_certificate
from titanium_gateway.contract.upstream import names_match
from titanium_gateway.twp import model as m

#: What a decrypting listener offers: HTTP/2 first, so a client that can picks it.
SERVER_ALPN = ["h2", "http/1.1"]
#: What the HTTP/1.1 client (aiohttp) offers a ``useHttps`` destination, and what the HTTP/2 one does.
ALPN = ["http/1.1"]
H2_ALPN = ["h2", "http/1.1"]


class CertificateError(Exception):
    """A PFX (or PEM file) the data plane cannot use."""


def load_chain_from_memory(ctx: ssl.SSLContext, pem: bytes) -> None:
    fd = os.memfd_create("titanium-tls", os.MFD_CLOEXEC)
    try:
        view = memoryview(pem)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        ctx.load_cert_chain(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


def _server_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(SERVER_ALPN)
    return ctx


def server_context_from_pfx(data: bytes, name: str = "") -> ssl.SSLContext:
    """An SSLContext serving the certificate chain and key of a password-less PKCS#12."""
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, None)
    except (ValueError, TypeError) as exc:
        raise CertificateError(f"{name}: not a password-less PKCS#12 file ({exc})") from None
    if key is None or cert is None:
        raise CertificateError(f"{name}: the PKCS#12 file holds no key and certificate")
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    pem += cert.public_bytes(serialization.Encoding.PEM)
    for c in extra or ():
        pem += c.public_bytes(serialization.Encoding.PEM)
    ctx = _server_context()
    try:
        load_chain_from_memory(ctx, pem)
    except ssl.SSLError as exc:
        raise CertificateError(f"{name}: OpenSSL rejected the certificate or key ({exc.reason})") from None
    finally:
        del pem
    return ctx


def listener_context(current: Callable[[], tuple[tuple[m.Certificate, ...], dict[str, ssl.SSLContext]] | None],
                     on_reject: Callable[[str | None], None] | None = None) -> ssl.SSLContext:
    """The context of a decrypting listener: its SNI callback picks the context of the item
    :func:`~titanium_gateway.contract.certificates.select_certificate` chooses among the
    certificates of the config loaded at handshake time (``current()``); no item: the
    handshake fails (unrecognized_name)."""
    base = _server_context()

    def sni(sslobj: ssl.SSLObject, server_name: str | None, _ctx: ssl.SSLContext) -> int | None:
        loaded = current()
        if loaded is not None:
            items, contexts = loaded
            item = select_certificate(items, server_name)
            if item is not None and item.file in contexts:
                sslobj.context = contexts[item.file]
                return None
        if on_reject is not None:
            with contextlib.suppress(Exception):
                on_reject(server_name)
        return ssl.ALERT_DESCRIPTION_UNRECOGNIZED_NAME

    base.sni_callback = sni
    return base


def client_context(files: dict[str, bytes], tls: m.UpstreamTls | None, alpn: list[str] = ALPN) -> ssl.SSLContext:
    """The context for ``useHttps`` destinations. The certificate chain is validated against
    ``caFile`` alone when given, else the system's trust store (``systemRoots: true`` says so
    explicitly). The name checked: ``serverName`` (also the SNI sent: the caller passes it as
    the connection's server name), or, with ``subjectAltNames``, any one of those (a Hostname
    entry against the certificate's DNS names, a URI entry against its URIs), checked once the
    handshake is done and before any request byte is sent; without either, the name connected
    to (the destination address). ``certFile``/``keyFile`` are the client certificate.
    ``alpn``: the protocols offered (the HTTP/2 client's context offers ``h2`` too). ``files`` holds the bytes of the named files (read by the config source)."""
    if tls is not None and tls.ca_file:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # (verifies the chain and the name; no default anchors)
        try:
            ctx.load_verify_locations(cadata=files[tls.ca_file].decode("ascii", "replace"))
        except (ssl.SSLError, ValueError) as exc:
            raise CertificateError(f"{tls.ca_file}: not PEM certificates ({exc})") from None
    else:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    ctx.set_alpn_protocols(alpn)
    if tls is not None and tls.subject_alt_names:
        ctx.check_hostname = False  # (the names are checked after the handshake instead)
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.sslobject_class = _names_checked(tls.subject_alt_names)
    if tls is not None and tls.cert_file and tls.key_file:
        pem = files[tls.key_file].rstrip(b"\n") + b"\n" + files[tls.cert_file]
        try:
            load_chain_from_memory(ctx, pem)
        except ssl.SSLError as exc:
            raise CertificateError(f"{tls.cert_file}/{tls.key_file}: OpenSSL rejected the client certificate "
                                   f"or key ({exc.reason})") from None
        finally:
            del pem
    return ctx


def _names_checked(wanted: tuple[m.SubjectAltName, ...]) -> type[ssl.SSLObject]:
    """An ``SSLObject`` class whose handshake fails unless the validated certificate carries one
    of ``wanted`` (asyncio's TLS transport completes the handshake through ``do_handshake``)."""

    class NamesChecked(ssl.SSLObject):
        def do_handshake(self) -> None:
            super().do_handshake()
            if not names_match((self.getpeercert() or {}).get("subjectAltName", ()), wanted):
                names = ", ".join(f"{n.type} {n.value}" for n in wanted)
                raise ssl.SSLCertVerificationError(1, f"certificate verify failed: none of the subject "
                                                      f"alternative names {names} matches")

    return NamesChecked
