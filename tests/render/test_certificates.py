from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12

from tests.render.core_fixtures import key_and_cert, tls_secret
from titanium_gateway.render.certificates import convert_tls_secret, pfx_file_name


def test_valid_pair_converts_to_passwordless_pkcs12_and_is_stable() -> None:
    secret = tls_secret(cn="shop.example.com")
    a = convert_tls_secret(secret)
    assert a.ok and a.error == ""
    key, cert, _ = pkcs12.load_key_and_certificates(a.pfx, None)
    assert key is not None and cert is not None
    assert a.names == ("shop.example.com",)
    assert convert_tls_secret(dict(secret)).pfx == a.pfx  # memoized by content


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
