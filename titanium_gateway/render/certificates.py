"""kubernetes.io/tls Secret -> password-less PKCS#12 (PFX) for the data plane.

Public API:

* :func:`pfx_file_name` ``(namespace, name) -> "<namespace>.<name>.pfx"``
* :func:`convert_tls_secret` ``(secret) -> CertificateConversion`` — ``pfx`` bytes, or an
  ``error`` (a human message for InvalidCertificateRef: wrong type, missing keys, garbage,
  encrypted key, key not matching the certificate). Never raises.

OpenSSL salts the PKCS#12 MAC, so the bytes of two conversions differ. To keep the TLS Secret
stable across reconciles, conversions are memoized by the SHA-256 of (tls.crt, tls.key): the
same Secret content always yields the same PFX bytes within a process. Key material is never
logged, put in messages, or kept beyond that cache.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

TLS_SECRET_TYPE = "kubernetes.io/tls"
_CACHE_SIZE = 4096
_cache: OrderedDict[str, CertificateConversion] = OrderedDict()


@dataclass(frozen=True)
class CertificateConversion:
    pfx: bytes | None
    error: str = ""
    #: DNS names of the leaf certificate (SAN, else CN): informational only.
    names: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.pfx is not None


def pfx_file_name(namespace: str, name: str) -> str:
    return f"{namespace}.{name}.pfx"


def _field(secret: Mapping[str, Any], key: str) -> bytes | None:
    data = secret.get("data")
    if isinstance(data, Mapping) and isinstance(data.get(key), str):
        try:
            return base64.b64decode(data[key], validate=True)
        except (binascii.Error, ValueError):
            return None
    string_data = secret.get("stringData")
    if isinstance(string_data, Mapping) and isinstance(string_data.get(key), str):
        return string_data[key].encode()
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
    try:
        pfx = pkcs12.serialize_key_and_certificates(
            None, key, leaf, certs[1:] or None, serialization.NoEncryption()  # type: ignore[arg-type]
        )
    except Exception:  # noqa: BLE001 - unsupported key type etc.
        return CertificateConversion(None, "the key type cannot be stored in a PKCS#12 file")
    return CertificateConversion(pfx, "", tuple(sorted(set(names))))


def convert_tls_secret(secret: Any) -> CertificateConversion:
    """Convert one kubernetes.io/tls Secret (raw dict); memoized by content hash."""
    if not isinstance(secret, Mapping):
        return CertificateConversion(None, "the Secret is malformed")
    stype = secret.get("type")
    if stype != TLS_SECRET_TYPE:
        return CertificateConversion(None, f"the Secret is of type {stype!r}, not {TLS_SECRET_TYPE}")
    crt = _field(secret, "tls.crt")
    key = _field(secret, "tls.key")
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
