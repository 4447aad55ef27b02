"""kubernetes.io/tls Secret -> password-less PKCS#12 (PFX) for the data plane.

Public API:

* :func:`pfx_file_name` ``(namespace, name) -> "<namespace>.<name>.pfx"``
* :func:`convert_tls_secret` ``(secret) -> CertificateConversion`` — ``pfx`` bytes, or an
  ``error`` (a human message for InvalidCertificateRef: wrong type, missing keys, garbage,
  encrypted key, key not matching the certificate, a key type PKCS#12 cannot hold). Never
  raises. The Secret is validated at once; the PFX bytes are made when ``pfx`` is first read.
* :class:`TLSFiles`: the files of the generated TLS Secret, name -> bytes; a certificate's PFX
  is made when its entry is first read (a render whose files nobody writes makes none).

OpenSSL salts the PKCS#12 MAC at random; the rest of a password-less PFX is deterministic. The
conversion replaces the salt with one derived from the Secret's content and recomputes the MAC
(RFC 7292 key derivation, verified by loading the result with OpenSSL), so the same Secret gives
the same bytes in any process. Should that ever fail, OpenSSL's bytes are kept; conversions are
also memoized by the SHA-256 of (tls.crt, tls.key), so they stay stable within a process. Key material is never
logged, put in messages, or kept beyond that cache.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import threading
import typing
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import timezone
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

TLS_SECRET_TYPE = "kubernetes.io/tls"
_CACHE_SIZE = 4096
_cache: OrderedDict[str, CertificateConversion] = OrderedDict()


#: The private keys ``pkcs12.serialize_key_and_certificates`` accepts (it raises TypeError for
#: any other, e.g. an X25519 key), as the library itself lists them: naming a deprecated key
#: class here (``dsa.DSAPrivateKey``) would print a CryptographyDeprecationWarning at import.
_PKCS12_KEY_TYPES = typing.get_args(pkcs12.PKCS12PrivateKeyTypes)
_build_lock = threading.Lock()


class CertificateConversion:
    """A validated Secret (``ok``) and its PFX, or why it cannot be used (``error``).

    ``CertificateConversion(pfx, error, names)`` as before; a conversion made by
    :func:`convert_tls_secret` holds a ``build`` instead of the bytes and makes them (once, under
    a lock) when ``pfx`` is first read."""

    __slots__ = ("_pfx", "_build", "error", "names", "not_after")

    def __init__(self, pfx: bytes | None, error: str = "", names: tuple[str, ...] = (), *,
                 build: Callable[[], bytes] | None = None, not_after: int | None = None) -> None:
        self._pfx = pfx
        self._build = build if pfx is None else None
        self.error = error
        #: DNS names of the leaf certificate (SAN, else CN): informational only.
        self.names = names
        #: The leaf certificate's notAfter as Unix seconds (None when not known).
        self.not_after = not_after

    @property
    def ok(self) -> bool:
        return self._pfx is not None or self._build is not None

    @property
    def pfx(self) -> bytes | None:
        if self._pfx is None and self._build is not None:
            with _build_lock:
                if self._build is not None:
                    self._pfx, self._build = self._build(), None
        return self._pfx

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CertificateConversion):
            return NotImplemented
        return ((self.pfx, self.error, self.names, self.not_after)
                == (other.pfx, other.error, other.names, other.not_after))

    def __hash__(self) -> int:
        return hash((self.error, self.names))

    def __repr__(self) -> str:
        state = "ok" if self.ok else f"error={self.error!r}"
        return f"CertificateConversion({state}, names={self.names!r})"


class TLSFiles(Mapping[str, bytes]):
    """The files of the generated TLS Secret in insertion order, name -> bytes. An entry set
    with :meth:`set_certificate` reads as that conversion's PFX, made on first read."""

    __slots__ = ("_files",)

    def __init__(self, files: Iterable[tuple[str, bytes]] = ()) -> None:
        self._files: dict[str, bytes | CertificateConversion] = dict(files)

    def __getitem__(self, name: str) -> bytes:
        value = self._files[name]
        if type(value) is bytes:
            return value
        assert isinstance(value, CertificateConversion)
        pfx = value.pfx
        assert pfx is not None  # only conversions that are ok are set
        return pfx

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def __contains__(self, name: object) -> bool:
        return name in self._files

    def __setitem__(self, name: str, data: bytes) -> None:
        self._files[name] = data

    def set_certificate(self, name: str, conversion: CertificateConversion) -> None:
        assert conversion.ok
        self._files[name] = conversion

    def sorted(self) -> TLSFiles:
        """A copy with the names in order (nothing is made)."""
        out = TLSFiles()
        out._files = dict(sorted(self._files.items()))
        return out

    @classmethod
    def of(cls, files: TLSFiles, names: Iterable[str]) -> TLSFiles:
        """The files ``names`` of ``files``, in that order (nothing is made)."""
        out = cls()
        out._files = {name: files._files[name] for name in names}
        return out

    def __repr__(self) -> str:
        return f"TLSFiles({sorted(self._files)!r})"


def pfx_file_name(namespace: str, name: str) -> str:
    return f"{namespace}.{name}.pfx"


def secret_data(secret: Mapping[str, Any], key: str) -> bytes | None:
    """``data[key]`` of a Secret decoded (base64), else ``stringData[key]``; None when absent or not base64."""
    data = secret.get("data")
    if isinstance(data, Mapping) and isinstance(data.get(key), str):
        try:
            return base64.b64decode(data[key], validate=True)
        except (binascii.Error, ValueError):
            return None
    string_data = secret.get("stringData")
    if isinstance(string_data, Mapping) and isinstance(string_data.get(key), str):
        try:
            return string_data[key].encode()
        except UnicodeEncodeError:  # a lone surrogate: no PEM text
            return None
    return None


def _public_bytes(key: Any) -> bytes:
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _convert(crt: bytes, key_pem: bytes) -> CertificateConversion:
    try:
        certs = x509.load_pem_x509_certificates(crt)
    except ValueError:
        return CertificateConversion(None, "tls.crt is not a PEM certificate")
    if not certs:
        return CertificateConversion(None, "tls.crt holds no certificate")
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except TypeError:
        return CertificateConversion(None, "tls.key is encrypted; a password-less key is required")
    except (ValueError, Exception):  # noqa: BLE001 - any parse failure is "not a key"
        return CertificateConversion(None, "tls.key is not a PEM private key")
    leaf = certs[0]
    try:
        if _public_bytes(key.public_key()) != _public_bytes(leaf.public_key()):
            return CertificateConversion(None, "tls.key does not match the certificate in tls.crt")
    except Exception:  # noqa: BLE001
        return CertificateConversion(None, "tls.key does not match the certificate in tls.crt")
    names: list[str] = []
    try:
        san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        names = [str(n) for n in san.value.get_values_for_type(x509.DNSName)]
    except x509.ExtensionNotFound:
        pass
    except Exception:  # noqa: BLE001
        names = []
    if not isinstance(key, _PKCS12_KEY_TYPES):
        return CertificateConversion(None, "the key type cannot be stored in a PKCS#12 file")
    chain = certs[1:]
    return CertificateConversion(None, "", tuple(sorted(set(names))), not_after=_not_after(leaf),
                                 build=lambda: _pfx(key, leaf, chain, crt, key_pem))


def _not_after(cert: x509.Certificate) -> int:
    """notAfter as Unix seconds (a field of the certificate: no clock)."""
    when = getattr(cert, "not_valid_after_utc", None)  # cryptography >= 42
    if when is None:
        when = cert.not_valid_after.replace(tzinfo=timezone.utc)
    return int(when.timestamp())


def _pfx(key: Any, leaf: x509.Certificate, chain: list[x509.Certificate], crt: bytes, key_pem: bytes) -> bytes:
    """The password-less PFX of a validated key and certificate chain, with a MAC salt derived
    from the content (see the module doc)."""
    pfx = pkcs12.serialize_key_and_certificates(None, key, leaf, chain or None, serialization.NoEncryption())
    try:
        stable = _with_deterministic_mac(pfx, hashlib.sha256(crt + b"\0" + key_pem).digest())
        pkcs12.load_key_and_certificates(stable, None)  # OpenSSL verifies the new MAC
        return stable
    except Exception:  # noqa: BLE001 - keep OpenSSL's (salted) bytes; memoization still applies
        return pfx


_SHA1_OID = bytes.fromhex("2b0e03021a")
_SHA256_OID = bytes.fromhex("608648016503040201")


def _tlv(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at ``pos``."""
    tag = data[pos]
    length = data[pos + 1]
    pos += 2
    if length & 0x80:
        n = length & 0x7F
        if n == 0 or n > 4:
            raise ValueError("unsupported DER length")
        length = int.from_bytes(data[pos:pos + n], "big")
        pos += n
    if pos + length > len(data):
        raise ValueError("truncated DER")
    return tag, pos, pos + length


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    out = []
    pos = start
    while pos < end:
        tag, cs, ce = _tlv(data, pos)
        out.append((tag, cs, ce))
        pos = ce
    return out


def _pkcs12_kdf_mac_key(hash_name: str, salt: bytes, iterations: int) -> bytes:
    """RFC 7292 B.2 key derivation, ID 3 (MAC key), for the NULL (absent) password."""
    u, v = (32, 64) if hash_name == "sha256" else (20, 64)
    d = bytes([3]) * v
    i = (salt * ((v + len(salt) - 1) // len(salt)))[:v * ((len(salt) + v - 1) // v)] if salt else b""
    digest = getattr(hashlib, hash_name)  # (hashlib.new looks the name up on every call)
    a = digest(d + i).digest()
    for _ in range(iterations - 1):
        a = digest(a).digest()
    return a[:u]


def _with_deterministic_mac(pfx: bytes, seed: bytes) -> bytes:
    """OpenSSL salts the PKCS#12 MAC at random; everything else of a password-less PFX is
    deterministic. Replace the salt with one derived from the content and recompute the MAC,
    so the same Secret always gives the same bytes. Raises ValueError when the layout is not
    the expected one (the caller then keeps OpenSSL's bytes)."""
    _, start, end = _tlv(pfx, 0)
    version, auth_safe, mac_data = _children(pfx, start, end)
    _, ci_start, ci_end = auth_safe[0], auth_safe[1], auth_safe[2]
    content_type, explicit = _children(pfx, ci_start, ci_end)
    _, oct_start, oct_end = _children(pfx, explicit[1], explicit[2])[0]
    digest_info, salt_el, iter_el = _children(pfx, mac_data[1], mac_data[2])
    alg, digest_el = _children(pfx, digest_info[1], digest_info[2])
    oid_el = _children(pfx, alg[1], alg[2])[0]
    oid = pfx[oid_el[1]:oid_el[2]]
    hash_name = "sha256" if oid == _SHA256_OID else "sha1" if oid == _SHA1_OID else ""
    if not hash_name:
        raise ValueError("unexpected MAC algorithm")
    iterations = int.from_bytes(pfx[iter_el[1]:iter_el[2]], "big")
    salt_len = salt_el[2] - salt_el[1]
    if not 1 <= iterations <= 100_000 or salt_len < 1:
        raise ValueError("unexpected MAC parameters")
    salt = hashlib.sha256(b"titanium-pfx-salt" + seed).digest()[:salt_len]
    key = _pkcs12_kdf_mac_key(hash_name, salt, iterations)
    mac = hmac.new(key, pfx[oct_start:oct_end], hash_name).digest()
    if len(mac) != digest_el[2] - digest_el[1]:
        raise ValueError("unexpected MAC length")
    out = bytearray(pfx)
    out[salt_el[1]:salt_el[2]] = salt
    out[digest_el[1]:digest_el[2]] = mac
    return bytes(out)


def convert_tls_secret(secret: Any) -> CertificateConversion:
    """Convert one kubernetes.io/tls Secret (raw dict); memoized by content hash."""
    if not isinstance(secret, Mapping):
        return CertificateConversion(None, "the Secret is malformed")
    stype = secret.get("type")
    if stype != TLS_SECRET_TYPE:
        return CertificateConversion(None, f"the Secret is of type {str(stype)[:64]!r}, not {TLS_SECRET_TYPE}")
    crt = secret_data(secret, "tls.crt")
    key = secret_data(secret, "tls.key")
    if not crt or not key:
        return CertificateConversion(None, "the Secret lacks tls.crt or tls.key")
    digest = hashlib.sha256(len(crt).to_bytes(8, "big") + crt + key).hexdigest()
    hit = _cache.get(digest)
    if hit is not None:
        _cache.move_to_end(digest)
        return hit
    result = _convert(crt, key)
    _cache[digest] = result
    if len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return result
