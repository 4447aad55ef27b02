from __future__ import annotations

import datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, x25519
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from tests.render.core_fixtures import key_and_cert, tls_secret
from titanium_gateway.render import certificates
from titanium_gateway.render.certificates import TLSFiles, convert_tls_secret, pfx_file_name


def test_valid_pair_converts_to_passwordless_pkcs12_and_is_stable() -> None:
    secret = tls_secret(cn="shop.example.com")
    a = convert_tls_secret(secret)
    assert a.ok and a.error == ""
    key, cert, _ = pkcs12.load_key_and_certificates(a.pfx, None)
    assert key is not None and cert is not None
    assert a.names == ("shop.example.com",)
    assert convert_tls_secret(dict(secret)).pfx == a.pfx  # memoized by content
    # notAfter of the leaf (core_fixtures: 2040-01-01), read from the certificate, not a clock
    assert a.not_after == int(datetime.datetime(2040, 1, 1, tzinfo=datetime.timezone.utc).timestamp())
    assert convert_tls_secret({"type": "kubernetes.io/tls", "data": {}}).not_after is None


def test_mismatched_key_rejected() -> None:
    crt, _ = key_and_cert("a.example.com")
    _, other_key = key_and_cert("b.example.com")
    res = convert_tls_secret(tls_secret(crt=crt, key=other_key))
    assert not res.ok and "does not match" in res.error


def test_garbage_and_missing_fields_rejected_without_leaking() -> None:
    res = convert_tls_secret(tls_secret(crt=b"not a cert"))
    assert not res.ok and "PEM certificate" in res.error
    _, key = key_and_cert("a.example.com")
    res = convert_tls_secret(tls_secret(key=b"-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n"))
    assert not res.ok and "private key" in res.error
    secret = tls_secret()
    del secret["data"]["tls.key"]
    assert "lacks" in convert_tls_secret(secret).error
    assert "type" in convert_tls_secret({**tls_secret(), "type": "Opaque"}).error
    assert not convert_tls_secret({"type": "kubernetes.io/tls", "data": {"tls.crt": "%%%", "tls.key": "%%%"}}).ok
    assert not convert_tls_secret("nope").ok
    assert key.decode() not in res.error


def test_encrypted_key_rejected() -> None:
    crt, key_pem = key_and_cert("a.example.com")
    key = serialization.load_pem_private_key(key_pem, None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    enc = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.BestAvailableEncryption(b"pw"))
    res = convert_tls_secret(tls_secret(crt=crt, key=enc))
    assert not res.ok and "encrypted" in res.error


def test_string_data_accepted() -> None:
    crt, key = key_and_cert("a.example.com")
    secret = {"type": "kubernetes.io/tls", "stringData": {"tls.crt": crt.decode(), "tls.key": key.decode()}}
    assert convert_tls_secret(secret).ok


def test_file_name() -> None:
    assert pfx_file_name("apps", "shop-tls") == "apps.shop-tls.pfx"


def test_pfx_bytes_deterministic_across_processes_and_mac_verified() -> None:
    from titanium_gateway.render import certificates

    secret = tls_secret(cn="det.example.com")
    first = convert_tls_secret(secret).pfx
    certificates._cache.clear()  # as in a fresh process
    second = convert_tls_secret(secret).pfx
    assert first == second and first is not None
    tampered = bytearray(first)
    tampered[-20] ^= 1  # inside the MAC digest
    try:
        pkcs12.load_key_and_certificates(bytes(tampered), None)
    except ValueError:
        pass
    else:
        raise AssertionError("OpenSSL did not verify the MAC")


def test_pfx_is_made_on_first_read_and_the_same_as_at_once(monkeypatch: Any) -> None:
    secret = tls_secret(cn="lazy.example.com")
    made: list[int] = []
    real = certificates._pfx
    monkeypatch.setattr(certificates, "_pfx", lambda *a: made.append(1) or real(*a))
    certificates._cache.clear()
    conv = convert_tls_secret(secret)
    assert conv.ok and conv.names == ("lazy.example.com",) and made == []  # validated, nothing made
    first = conv.pfx
    assert first is not None and conv.pfx is first and made == [1]  # made once
    key, cert, _ = pkcs12.load_key_and_certificates(first, None)
    assert key is not None and cert is not None
    certificates._cache.clear()
    assert convert_tls_secret(dict(secret)).pfx == first  # the same bytes in a new conversion


def test_tls_files_read_as_bytes_and_make_nothing_until_read() -> None:
    certificates._cache.clear()
    conv = convert_tls_secret(tls_secret(cn="files.example.com"))
    files = TLSFiles([("z.pem", b"pem")])
    files.set_certificate("apps.shop.pfx", conv)
    ordered = files.sorted()
    assert list(ordered) == ["apps.shop.pfx", "z.pem"] and len(ordered) == 2 and "z.pem" in ordered
    assert conv._build is not None  # listing, sorting and counting made no PFX
    assert ordered == {"apps.shop.pfx": conv.pfx, "z.pem": b"pem"}
    assert ordered["apps.shop.pfx"] == conv.pfx and ordered["z.pem"] == b"pem"


def test_key_type_pkcs12_cannot_hold_is_reported_at_validation() -> None:
    ca = ec.generate_private_key(ec.SECP256R1())
    key = x25519.X25519PrivateKey.generate()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "x.example.com")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(datetime.datetime(2020, 1, 1))
            .not_valid_after(datetime.datetime(2040, 1, 1)).sign(ca, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    res = convert_tls_secret(tls_secret(crt=cert.public_bytes(serialization.Encoding.PEM), key=key_pem))
    assert not res.ok and res.pfx is None
    assert res.error == "the key type cannot be stored in a PKCS#12 file"
