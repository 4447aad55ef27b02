"""The bad-input campaign's machinery: object strategies, hostile values, mutation, invariants.

:func:`check_render` is the oracle every fuzz test uses. For one list of objects it asserts:

1. ``render`` never raises and never mutates its input;
2. the root ``twp.yaml`` and every part are UTF-8 YAML valid against ``twp.schema.json``;
   ``config_hash`` and every ``include`` hash are the SHA-256 of the bytes; route ids and
   orders are unique, every referenced cluster exists, every certificate file is in the TLS
   Secret files;
3. identical input gives identical bytes, also when the objects arrive in another order
   (config, parts, statuses, events, TLS files);
4. every rejected object is reported: each ``directResponse 500`` route of an HTTPRoute has a
   False condition on that route whose message carries the route's reason text, each of an
   Ingress a Warning Event on it carrying the text; every status is JSON with condition
   messages within the API server's 32768-character limit and Event notes within 1 KiB;
5. the rendered config carries no private key material.
"""

from __future__ import annotations

import base64
import copy
import datetime
import functools
import hashlib
import json
import os
import random
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from titanium_gateway.offline.load import apply_defaults, load_objects
from titanium_gateway.offline.snapshot import assumed_namespaces
from titanium_gateway.render import render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import RenderResult
from titanium_gateway.render.snapshot import Snapshot, object_key

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "titanium_gateway" / "twp" / "schema.json"
GOLDEN = ROOT / "tests" / "render" / "testdata"
CONTROLLER = "titaniumproxy.com/gateway-controller"
INGRESS_CONTROLLER = "titanium.io/ingress-controller"
GW_API = "gateway.networking.k8s.io/v1"
#: metav1.Condition.message maxLength; events.k8s.io/v1 Event.note max bytes.
CONDITION_MESSAGE_MAX = 32768
EVENT_NOTE_MAX = 1024
#: Gateway API backendRef weight maximum; int32 for anything the data plane counts.
WEIGHT_MAX = 1_000_000
INT32_MAX = 2**31 - 1


#: The campaign tests that share FUZZ_EXAMPLES.
CAMPAIGN_TESTS = 3


def fuzz_examples(default: int) -> int:
    """Examples of one campaign test: ``FUZZ_EXAMPLES`` (the campaign's total) split evenly over the
    campaign tests when set, else ``default``."""
    raw = os.environ.get("FUZZ_EXAMPLES", "")
    return max(1, int(raw) // CAMPAIGN_TESTS) if raw.strip() else default


def fuzz_settings(default: int, **kw: Any) -> settings:
    full = bool(os.environ.get("FUZZ_EXAMPLES", "").strip())
    return settings(
        phases=[Phase.generate],  # the oracle collects findings; nothing to shrink
        max_examples=fuzz_examples(default),
        deadline=None,
        database=None,
        derandomize=not full,  # CI: the same examples every run (no flakes); campaign: random
        suppress_health_check=list(HealthCheck),
        **kw,
    )


# -- figures ---------------------------------------------------------------------------------
@dataclass
class Stats:
    renders: int = 0
    objects: Counter[str] = field(default_factory=Counter)
    rejected_routes: int = 0
    reported_rejections: int = 0
    events: int = 0
    false_conditions: int = 0
    max_render_s: float = 0.0
    total_render_s: float = 0.0
    max_config_bytes: int = 0
    split_configs: int = 0
    by_test: Counter[str] = field(default_factory=Counter)
    failures: int = 0
    max_event_message: int = 0

    def count_objects(self, objects: Iterable[Mapping[str, Any]]) -> None:
        for obj in objects:
            kind = obj.get("kind") if isinstance(obj, Mapping) else None
            self.objects[kind if isinstance(kind, str) else "<malformed>"] += 1

    def lines(self) -> list[str]:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.objects.items()))
        avg = self.total_render_s / self.renders if self.renders else 0.0
        return [
            f"renders checked: {self.renders} (x2 for determinism; tests: {dict(self.by_test)})",
            f"objects generated or mutated: {sum(self.objects.values())} ({kinds})",
            f"rejected routes (directResponse 500): {self.rejected_routes}, each reported "
            f"({self.reported_rejections} checked); Warning events {self.events}; False conditions {self.false_conditions}",
            f"render time: mean {avg * 1000:.1f} ms, max {self.max_render_s * 1000:.0f} ms; "
            f"largest config {self.max_config_bytes} bytes; split configs {self.split_configs}",
            f"longest Event message {self.max_event_message} chars (the event writer truncates to 1 KiB)",
            f"failing examples: {self.failures} in {len(FINDINGS)} classes",
        ] + [f"  [{f.known or 'NEW'}] x{f.count}: {f.signature}" for f in sorted(FINDINGS.values(), key=lambda f: -f.count)]

    def dump(self, path: str) -> None:
        data = {
            "renders": self.renders, "objects": dict(self.objects), "rejected_routes": self.rejected_routes,
            "reported_rejections": self.reported_rejections, "events": self.events,
            "false_conditions": self.false_conditions, "max_render_s": self.max_render_s,
            "mean_render_s": self.total_render_s / max(1, self.renders), "max_config_bytes": self.max_config_bytes,
            "split_configs": self.split_configs, "by_test": dict(self.by_test), "failures": self.failures,
            "findings": [f.__dict__ for f in FINDINGS.values()],
        }
        Path(path).write_text(json.dumps(data, indent=2, sort_keys=True))


STATS = Stats()


# -- certificates ------------------------------------------------------------------------------
@dataclass(frozen=True)
class CertPool:
    key_pem: bytes
    cert_pem: bytes
    other_key_pem: bytes
    expired_cert_pem: bytes
    encrypted_key_pem: bytes
    rsa_key_pem: bytes
    rsa_cert_pem: bytes

    def private_keys(self) -> list[bytes]:
        return [self.key_pem, self.other_key_pem, self.rsa_key_pem, self.encrypted_key_pem]


@functools.lru_cache(maxsize=1)
def certs() -> CertPool:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import NameOID

    def make(key: Any, cn: str, days: int, start_days: int = -1) -> bytes:
        now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1000 + days).not_valid_before(now + datetime.timedelta(days=start_days))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(cn), x509.DNSName("*." + cn)]), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cert.public_bytes(serialization.Encoding.PEM)

    def pem(key: Any, enc: Any = None) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 enc or serialization.NoEncryption())

    key, other = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return CertPool(
        key_pem=pem(key),
        cert_pem=make(key, "example.com", 3650),
        other_key_pem=pem(other),
        expired_cert_pem=make(key, "expired.example.com", -10, start_days=-400),
        encrypted_key_pem=pem(key, serialization.BestAvailableEncryption(b"secret-pass")),
        rsa_key_pem=pem(rsa_key),
        rsa_cert_pem=make(rsa_key, "rsa.example.com", 365),
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def tls_secret(name: str, ns: str, variant: str) -> dict[str, Any]:
    """A Secret of one variant: valid, rsa, expired, mismatched, encrypted, garbage, ..."""
    p = certs()
    data: dict[str, str]
    stype = "kubernetes.io/tls"
    if variant == "valid":
        data = {"tls.crt": b64(p.cert_pem), "tls.key": b64(p.key_pem)}
    elif variant == "rsa":
        data = {"tls.crt": b64(p.rsa_cert_pem), "tls.key": b64(p.rsa_key_pem)}
    elif variant == "chain":
        data = {"tls.crt": b64(p.cert_pem + p.rsa_cert_pem), "tls.key": b64(p.key_pem)}
    elif variant == "expired":
        data = {"tls.crt": b64(p.expired_cert_pem), "tls.key": b64(p.key_pem)}
    elif variant == "mismatched":
        data = {"tls.crt": b64(p.cert_pem), "tls.key": b64(p.other_key_pem)}
    elif variant == "encrypted":
        data = {"tls.crt": b64(p.cert_pem), "tls.key": b64(p.encrypted_key_pem)}
    elif variant == "garbage":
        data = {"tls.crt": b64(b"-----BEGIN CERTIFICATE-----\nZm9vYmFy\n-----END CERTIFICATE-----\n"),
                "tls.key": b64(b"\x00\xff garbage \xfe")}
    elif variant == "not-base64":
        data = {"tls.crt": "%%%not base64%%%", "tls.key": "@@"}
    elif variant == "swapped":
        data = {"tls.crt": b64(p.key_pem), "tls.key": b64(p.cert_pem)}
    elif variant == "missing-key":
        data = {"tls.crt": b64(p.cert_pem)}
    elif variant == "truncated":
        data = {"tls.crt": b64(p.cert_pem[: len(p.cert_pem) // 2]), "tls.key": b64(p.key_pem[:60])}
    elif variant == "opaque":
        data, stype = {"tls.crt": b64(p.cert_pem), "tls.key": b64(p.key_pem)}, "Opaque"
    else:  # pragma: no cover - programming error
        raise ValueError(variant)
    return {"apiVersion": "v1", "kind": "Secret", "type": stype,
            "metadata": {"name": name, "namespace": ns}, "data": data}


SECRET_VARIANTS = ("valid", "rsa", "chain", "expired", "mismatched", "encrypted", "garbage", "not-base64",
                   "swapped", "missing-key", "truncated", "opaque")


# -- hostile values ---------------------------------------------------------------------------------
PATHOLOGICAL_REGEXES = (
    "(a+)+$", "(a*)*b", "(a|aa)*$", "(a|a?)+$", "(.*a){20}", "([a-zA-Z]+)*$", "(\\w+\\s?)*$",
    "^(a+)+$", "(x+x+)+y", "((a{1,10}){1,10}){1,10}", "(?:a|b|ab)*c", "(.*)*", "a{1000000}",
    "(?=a)*", "(a)\\1", "\\k<n>", "(?<n>a)\\k<n>", "[", "(", "*", "a**", "(?P<x>", "\\", "[z-a]",
    "a{2,1}", "(?<!a+)b", "\\p{L}+", "[[:alpha:]]", "(?i)abc", "^/api/v[0-9]+/.*$", ".*", "",
    "x" * 1025, "(" * 500 + ")" * 500, "a|" * 2000,
)
STRANGE_STRINGS = (
    "", " ", "\x00", "\ud800", "a\udfffb", "\ufeff", "\u202e/evil", "é", "日本語", "🙂",
    "a\nb", "a\r\nb: c", "{}", "[]", "'", '"', "- x", "? x", "&a", "*a", "!tag", "%", "@", "`",
    "null", "~", "yes", "no", "on", "0x1F", "1e3", ".inf", "NaN", "-", "--- ", "...", "#x",
    "/", "//", "/a/../b", "/%2e%2e/", "/a b", "a" * 300, "*.", "*", "*.*.com", "a..b", ".a",
    "xn--nxasmq6b", "EXAMPLE.COM", "-a.com", "a_b.com", "1.2.3.4", "[::1]", "::1", "host:80",
    "x" * 70_000,
)
INTS_AT_LIMITS = (-(2**63), -(2**31), -1, 0, 1, 79, 80, 443, 8080, 8443, 65534, 65535, 65536,
                  999_999, 1_000_000, 1_000_001, 2**31 - 1, 2**31, 2**53 + 1, 2**64)


def deep(depth: int, leaf: Any = "x") -> Any:
    value: Any = leaf
    for i in range(depth):
        value = {"a": value} if i % 2 else [value]
    return value


def hostile_values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(), st.booleans(), st.sampled_from(INTS_AT_LIMITS), st.floats(allow_nan=True),
        st.sampled_from(STRANGE_STRINGS), st.sampled_from(PATHOLOGICAL_REGEXES),
        st.text(max_size=40), st.integers(),
    )
    return st.one_of(
        scalars,
        st.lists(scalars, max_size=4),
        st.dictionaries(st.sampled_from(["name", "value", "type", "port", "x", ""]), scalars, max_size=3),
        st.sampled_from([5, 50, 400]).map(deep),
        st.just([{"name": f"h{i}", "value": "v"} for i in range(2000)]),
    )


# -- object strategies --------------------------------------------------------------------------------
NAMESPACES = ("apps", "other", "default")
SERVICES = ("api", "web", "shadow", "gone")


def names() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(("web", "shop", "api", "a", "x-1")), st.sampled_from(STRANGE_STRINGS[:12]))


def hostnames() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(("example.com", "shop.example.com", "*.example.com", "foo.bar.example.com",
                         "*.bar.example.com", "other.org")),
        st.sampled_from(STRANGE_STRINGS), st.integers(),
    )


def maybe(strategy: st.SearchStrategy[Any], value: st.SearchStrategy[Any] | None = None) -> st.SearchStrategy[Any]:
    return st.one_of(strategy, value if value is not None else hostile_values())


@st.composite
def path_matches(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(("Exact", "PathPrefix", "RegularExpression", "Bogus", None)))
    if kind == "RegularExpression":
        value = draw(st.one_of(st.sampled_from(PATHOLOGICAL_REGEXES), st.text(max_size=30)))
    else:
        value = draw(st.one_of(st.sampled_from(("/", "/api", "/api/", "/a/b", "/%", "api", "/x" * 600)),
                               st.sampled_from(STRANGE_STRINGS), st.text(max_size=20).map(lambda s: "/" + s)))
    out: dict[str, Any] = {"value": value}
    if kind is not None:
        out["type"] = kind
    return out


@st.composite
def http_matches(draw: st.DrawFn) -> dict[str, Any]:
    m: dict[str, Any] = {}
    if draw(st.booleans()):
        m["path"] = draw(maybe(path_matches()))
    if draw(st.integers(0, 3)) == 0:
        m["method"] = draw(maybe(st.sampled_from(("GET", "POST", "get", "BREW"))))
    if draw(st.booleans()):
        m["headers"] = draw(st.lists(st.fixed_dictionaries({
            "name": maybe(st.sampled_from(("x-env", "X-Env", "host", ":authority"))),
            "value": maybe(st.text(max_size=10)),
            "type": st.sampled_from(("Exact", "RegularExpression", "Weird")),
        }), max_size=3))
    if draw(st.booleans()):
        m["queryParams"] = draw(st.lists(st.fixed_dictionaries({
            "name": maybe(st.sampled_from(("q", "id", "Q"))),
            "value": st.one_of(st.sampled_from(PATHOLOGICAL_REGEXES), st.text(max_size=10)),
            "type": st.sampled_from(("Exact", "RegularExpression", "Weird")),
        }), max_size=3))
    return m


def backend_refs() -> st.SearchStrategy[list[dict[str, Any]]]:
    ref = st.fixed_dictionaries(
        {"name": maybe(st.sampled_from(SERVICES)), "port": maybe(st.sampled_from((8080, 9090, 80)))},
        optional={
            "weight": st.one_of(st.sampled_from(INTS_AT_LIMITS), hostile_values()),
            "namespace": st.sampled_from(NAMESPACES),
            "kind": st.sampled_from(("Service", "ServiceImport", "")),
            "group": st.sampled_from(("", "core", "multicluster.x-k8s.io")),
            "filters": st.just([{"type": "RequestHeaderModifier"}]),
        },
    )
    return st.lists(ref, max_size=4)


@st.composite
def filters(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for _ in range(draw(st.integers(0, 3))):
        ftype = draw(st.sampled_from(("RequestHeaderModifier", "ResponseHeaderModifier", "URLRewrite",
                                      "RequestRedirect", "RequestMirror", "ExtensionRef", "")))
        hv = st.fixed_dictionaries({"name": maybe(st.sampled_from(("x-a", "Set-Cookie"))), "value": maybe(st.text(max_size=8))})
        spec: Any
        if ftype.endswith("HeaderModifier"):
            spec = {"set": draw(st.lists(hv, max_size=2)), "add": draw(st.lists(hv, max_size=2)),
                    "remove": draw(st.lists(maybe(st.just("x-b")), max_size=2))}
            key = ftype[0].lower() + ftype[1:]
        elif ftype == "URLRewrite":
            spec = {"hostname": draw(maybe(hostnames())),
                    "path": draw(maybe(st.fixed_dictionaries({
                        "type": st.sampled_from(("ReplaceFullPath", "ReplacePrefixMatch", "X")),
                        "replaceFullPath": maybe(st.sampled_from(("/new", "/", "x"))),
                        "replacePrefixMatch": maybe(st.sampled_from(("/new", "/", "/a/"))),
                    })))}
            key = "urlRewrite"
        elif ftype == "RequestRedirect":
            spec = draw(st.fixed_dictionaries({}, optional={
                "scheme": maybe(st.sampled_from(("http", "https", "ftp"))),
                "hostname": hostnames(),
                "port": st.sampled_from(INTS_AT_LIMITS),
                "statusCode": maybe(st.sampled_from((301, 302, 303, 308))),
                "path": maybe(st.fixed_dictionaries({"type": st.sampled_from(("ReplaceFullPath", "ReplacePrefixMatch")),
                                                     "replaceFullPath": st.sampled_from(("/x", "x"))})),
            }))
            key = "requestRedirect"
        elif ftype == "RequestMirror":
            spec = draw(st.fixed_dictionaries(
                {"backendRef": maybe(st.fixed_dictionaries({"name": st.sampled_from(SERVICES), "port": st.just(8080)}))},
                optional={"percent": st.sampled_from((-1, 0, 50, 100, 101)),
                          "fraction": st.fixed_dictionaries({"numerator": st.sampled_from((0, 1, 5, -1)),
                                                             "denominator": st.sampled_from((0, 1, 100, -3))})},
            ))
            key = "requestMirror"
        else:
            spec, key = draw(hostile_values()), "extensionRef"
        out.append({"type": ftype, key: spec})
    return out


@st.composite
def httproutes(draw: st.DrawFn, index: int = 0) -> dict[str, Any]:
    rules = []
    n_rules = draw(st.integers(0, 3))
    for _ in range(n_rules):
        rule: dict[str, Any] = {}
        if draw(st.booleans()):
            rule["matches"] = draw(st.lists(http_matches(), max_size=3))
        if draw(st.booleans()):
            rule["filters"] = draw(filters())
        rule["backendRefs"] = draw(backend_refs())
        if draw(st.integers(0, 4)) == 0:
            rule["timeouts"] = draw(st.fixed_dictionaries({}, optional={
                "request": maybe(st.sampled_from(("10s", "500ms", "0s", "1h30m", "99999h", "1s1s", "-1s", "1d"))),
                "backendRequest": maybe(st.sampled_from(("1s", "20s", "0s", "100000h"))),
            }))
        rules.append(rule)
    parent = draw(st.fixed_dictionaries({"name": st.sampled_from(("web", "web2", "missing"))}, optional={
        "sectionName": maybe(st.sampled_from(("http", "https", "nope"))),
        "port": st.sampled_from(INTS_AT_LIMITS),
        "namespace": st.sampled_from(NAMESPACES),
        "kind": st.sampled_from(("Gateway", "Service")),
    }))
    spec: dict[str, Any] = {"parentRefs": [parent], "rules": rules}
    if draw(st.booleans()):
        spec["hostnames"] = draw(st.lists(hostnames(), max_size=3))
    return {"apiVersion": GW_API, "kind": "HTTPRoute",
            "metadata": {"name": f"r{index}-" + draw(st.sampled_from(("a", "b", "shop"))),
                         "namespace": draw(st.sampled_from(NAMESPACES)),
                         "generation": draw(maybe(st.integers(1, 5))),
                         "creationTimestamp": draw(maybe(st.sampled_from(("2024-01-01T00:00:00Z", "2023-05-05T00:00:00Z"))))},
            "spec": spec}


@st.composite
def gateways(draw: st.DrawFn, name: str = "web") -> dict[str, Any]:
    listeners = []
    for i in range(draw(st.integers(0, 4))):
        protocol = draw(maybe(st.sampled_from(("HTTP", "HTTPS", "TLS", "TCP", "http")), st.sampled_from((None, 1, ""))))
        li: dict[str, Any] = {"name": draw(maybe(st.sampled_from((f"l{i}", "http", "https")), st.sampled_from(("", None)))),
                              "port": draw(st.one_of(st.sampled_from(INTS_AT_LIMITS), hostile_values())),
                              "protocol": protocol}
        if draw(st.booleans()):
            li["hostname"] = draw(hostnames())
        if protocol == "HTTPS" or draw(st.integers(0, 5)) == 0:
            li["tls"] = draw(st.fixed_dictionaries({}, optional={
                "mode": st.sampled_from(("Terminate", "Passthrough", "x")),
                "certificateRefs": st.lists(st.fixed_dictionaries(
                    {"name": st.sampled_from([f"tls-{v}" for v in SECRET_VARIANTS] + ["tls-absent"])},
                    optional={"namespace": st.sampled_from(NAMESPACES), "kind": st.sampled_from(("Secret", "ConfigMap")),
                              "group": st.sampled_from(("", "v1"))}), max_size=3),
            }))
        if draw(st.booleans()):
            li["allowedRoutes"] = draw(maybe(st.fixed_dictionaries({}, optional={
                "namespaces": st.fixed_dictionaries({"from": st.sampled_from(("All", "Same", "Selector", "Bogus"))},
                                                    optional={"selector": hostile_values()}),
                "kinds": st.lists(st.fixed_dictionaries({"kind": st.sampled_from(("HTTPRoute", "GRPCRoute"))}), max_size=2),
            })))
        listeners.append(li)
    spec: dict[str, Any] = {"gatewayClassName": draw(st.sampled_from(("titanium", "titanium", "other"))),
                            "listeners": listeners}
    if draw(st.integers(0, 8)) == 0:
        spec["addresses"] = [{"type": "IPAddress", "value": "1.2.3.4"}]
    return {"apiVersion": GW_API, "kind": "Gateway",
            "metadata": {"name": name, "namespace": draw(st.sampled_from(("apps", "apps", "other"))),
                         "creationTimestamp": draw(st.sampled_from(("2024-01-01T00:00:00Z", "2022-01-01T00:00:00Z")))},
            "spec": spec}


@st.composite
def services(draw: st.DrawFn, name: str) -> list[dict[str, Any]]:
    ns = draw(st.sampled_from(NAMESPACES))
    ports = draw(st.lists(st.fixed_dictionaries(
        {"port": st.one_of(st.sampled_from((8080, 9090, 80)), st.sampled_from(INTS_AT_LIMITS))},
        optional={"name": st.sampled_from(("http", "", "grpc")), "targetPort": maybe(st.sampled_from((9000, "http")))}),
        max_size=3))
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
           "spec": {"ports": ports, "clusterIP": draw(st.sampled_from(("10.96.0.1", "None", "")))}}
    eps = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": f"{name}-x", "namespace": ns, "labels": {"kubernetes.io/service-name": name}},
           "addressType": "IPv4",
           "ports": draw(st.lists(st.fixed_dictionaries({"port": st.sampled_from((9000, 0, 65536, 8080))},
                                                        optional={"name": st.sampled_from(("http", ""))}), max_size=2)),
           "endpoints": draw(st.lists(st.fixed_dictionaries({
               "addresses": st.lists(st.sampled_from(("10.0.0.1", "10.0.0.2", "fd00::1", "", "not an ip", "1.2.3.4:80")), max_size=3),
               "conditions": st.fixed_dictionaries({}, optional={"ready": st.sampled_from((True, False, None, "yes"))}),
           }), max_size=3))}
    return [svc, eps]


INGRESS_ANNOTATIONS = ("ssl-redirect", "rewrite-target", "proxy-read-timeout", "proxy-body-size", "backend-protocol",
                       "affinity", "load-balance", "whitelist-source-range", "limit-rps", "cors-allow-origin",
                       "auth-url", "canary", "canary-weight", "canary-by-header", "upstream-tls-secret", "bogus")


@st.composite
def ingresses(draw: st.DrawFn, index: int = 0) -> dict[str, Any]:
    ann = draw(st.dictionaries(st.sampled_from(INGRESS_ANNOTATIONS).map(lambda a: "titanium.io/" + a),
                               st.one_of(st.sampled_from(("true", "false", "0", "30", "8m", "10.0.0.0/8", "*", "HTTPS",
                                                          "cookie", "ewma", "http://auth/x", "/new", "$1", "101",
                                                          "tls-valid", "apps/tls-garbage", "-1", "99999999999")),
                                         st.sampled_from(STRANGE_STRINGS)), max_size=4))
    backend = st.fixed_dictionaries({"service": maybe(st.fixed_dictionaries({
        "name": maybe(st.sampled_from(SERVICES)),
        "port": maybe(st.one_of(st.fixed_dictionaries({"number": st.sampled_from(INTS_AT_LIMITS)}),
                                st.fixed_dictionaries({"name": st.sampled_from(("http", "grpc", ""))}))),
    }))})
    paths = st.lists(st.fixed_dictionaries({
        "path": maybe(st.sampled_from(("/", "/api", "api", "/a//b", "/x/"))),
        "pathType": maybe(st.sampled_from(("Prefix", "Exact", "ImplementationSpecific", "Regex"))),
        "backend": maybe(backend),
    }), max_size=3)
    spec: dict[str, Any] = {
        "ingressClassName": draw(st.sampled_from(("titanium", "titanium", "nginx", None))),
        "rules": draw(st.lists(st.fixed_dictionaries({"http": st.fixed_dictionaries({"paths": paths})},
                                                     optional={"host": hostnames()}), max_size=3)),
    }
    if draw(st.booleans()):
        spec["tls"] = draw(st.lists(st.fixed_dictionaries({"secretName": st.sampled_from([f"tls-{v}" for v in SECRET_VARIANTS] + ["nope"])},
                                                          optional={"hosts": st.lists(hostnames(), max_size=2)}), max_size=2))
    if draw(st.integers(0, 3)) == 0:
        spec["defaultBackend"] = draw(backend)
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": f"i{index}", "namespace": draw(st.sampled_from(NAMESPACES)), "annotations": ann},
            "spec": spec}


def base_objects() -> list[dict[str, Any]]:
    return [
        {"apiVersion": GW_API, "kind": "GatewayClass", "metadata": {"name": "titanium"},
         "spec": {"controllerName": CONTROLLER}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "titanium"},
         "spec": {"controller": INGRESS_CONTROLLER}},
        {"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
         "metadata": {"name": "g", "namespace": "other"},
         "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "apps"},
                           {"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "apps"}],
                  "to": [{"group": "", "kind": "Service"}, {"group": "", "kind": "Secret"}]}},
    ]


@st.composite
def worlds(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A whole cluster: Gateways, HTTPRoutes, Ingresses, Services, EndpointSlices, Secrets."""
    objects = base_objects()
    objects.append(draw(gateways("web")))
    if draw(st.booleans()):
        objects.append(draw(gateways("web2")))
    for i in range(draw(st.integers(0, 4))):
        objects.append(draw(httproutes(i)))
    for i in range(draw(st.integers(0, 2))):
        objects.append(draw(ingresses(i)))
    for name in draw(st.lists(st.sampled_from(SERVICES[:3]), max_size=3, unique=True)):
        objects += draw(services(name))
    for variant in draw(st.lists(st.sampled_from(SECRET_VARIANTS), max_size=4, unique=True)):
        objects.append(tls_secret(f"tls-{variant}", draw(st.sampled_from(("apps", "other"))), variant))
    return objects


# -- mutation of existing objects -------------------------------------------------------------------
def _paths(value: Any, prefix: tuple[Any, ...] = (), limit: int = 4000) -> list[tuple[Any, ...]]:
    """Every path (keys / indexes) inside ``value`` (iterative, bounded)."""
    out: list[tuple[Any, ...]] = []
    stack = [(prefix, value)]
    while stack and len(out) < limit:
        path, v = stack.pop()
        if isinstance(v, Mapping):
            for k in sorted(v, key=str):
                out.append(path + (k,))
                stack.append((path + (k,), v[k]))
        elif isinstance(v, list):
            for i, item in enumerate(v):
                out.append(path + (i,))
                stack.append((path + (i,), item))
    out.sort(key=lambda p: [str(x) for x in p])
    return out


def _set(root: Any, path: tuple[Any, ...], value: Any) -> None:
    cur = root
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value


def _get(root: Any, path: tuple[Any, ...]) -> Any:
    cur = root
    for p in path:
        cur = cur[p]
    return cur


@st.composite
def mutated(draw: st.DrawFn, objects: Sequence[Mapping[str, Any]], max_mutations: int = 4) -> list[dict[str, Any]]:
    """A deep copy of ``objects`` with 1..n mutations: replace, delete, duplicate, amplify a value."""
    objs = copy.deepcopy([dict(o) for o in objects])
    for _ in range(draw(st.integers(1, max_mutations))):
        i = draw(st.integers(0, len(objs) - 1))
        paths = [p for p in _paths(objs[i]) if p[0] not in ("apiVersion", "kind")]
        op = draw(st.sampled_from(("replace", "replace", "replace", "delete", "duplicate", "amplify", "metadata")))
        if op == "metadata":
            objs[i].setdefault("metadata", {})
            if isinstance(objs[i]["metadata"], dict):
                key = draw(st.sampled_from(("name", "namespace", "generation", "creationTimestamp", "annotations", "labels")))
                objs[i]["metadata"][key] = draw(hostile_values())
            continue
        if not paths:
            continue
        path = draw(st.sampled_from(paths))
        parent = _get(objs[i], path[:-1])
        if op == "replace":
            _set(objs[i], path, draw(hostile_values()))
        elif op == "delete":
            if isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent.pop(path[-1])
        elif op == "duplicate" and isinstance(parent, list):
            parent.insert(path[-1], copy.deepcopy(parent[path[-1]]))
        elif op == "amplify" and isinstance(parent, list):
            parent.extend(copy.deepcopy(parent[path[-1]]) for _ in range(draw(st.sampled_from((10, 300)))))
        else:
            _set(objs[i], path, draw(hostile_values()))
    STATS.count_objects(objs)
    return objs


@functools.lru_cache(maxsize=1)
def golden_cases() -> tuple[tuple[str, tuple[Mapping[str, Any], ...], RenderOptions], ...]:
    from tests.render.conftest import case_options

    out = []
    for path in sorted(GOLDEN.glob("*/in.yaml")):
        case = path.parent.name
        options, _ = case_options(case)
        out.append((case, tuple(load_objects([path])), options))
    return tuple(out)


# -- the oracle ---------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.validators.validator_for(schema)(schema)


def fingerprint(value: Any) -> str:
    """SHA-256 of a canonical walk of ``value`` (iterative: survives any nesting depth)."""
    h = hashlib.sha256()
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            h.update(b"{%d" % len(v))
            for k in sorted(v, key=repr):
                h.update(repr(k).encode("utf-8", "surrogatepass"))
                stack.append(v[k])
        elif isinstance(v, (list, tuple)):
            h.update(b"[%d" % len(v))
            stack.extend(reversed(v))
        else:
            h.update(repr(v).encode("utf-8", "surrogatepass") + b"|")
    return h.hexdigest()


def snapshot_of(objects: Sequence[Mapping[str, Any]], *, order_seed: int | None = None, **kwargs: Any) -> Snapshot:
    """A render snapshot (defaults applied where the iterative walk allows; order optionally shuffled)."""
    objs = list(objects)
    try:
        objs = apply_defaults(objs)
        extra = assumed_namespaces(objs)
    except RecursionError:  # deeply nested input: the controller's informers would not apply defaults either
        extra = []
    objs = objs + extra
    # a cluster holds one object per kind and key: a mutation that makes two collide keeps the first
    # (otherwise the input order would decide which one the snapshot holds)
    unique: dict[tuple[Any, str], Mapping[str, Any]] = {}
    for o in objs:
        meta = o.get("metadata")
        key = object_key(o) if isinstance(meta, Mapping) else repr(meta)
        unique.setdefault((o.get("kind"), key), o)
    objs = list(unique.values())
    if order_seed is not None:
        random.Random(order_seed).shuffle(objs)
    return Snapshot.from_objects(objs, now="2026-01-01T00:00:00Z", **kwargs)


def _load_yaml(data: bytes, what: str) -> Any:
    """The document as libyaml (the data plane's kind of parser: strict) and the pure-Python
    loader (lenient: it accepts escaped lone surrogates) read it: the same."""
    text = data.decode("utf-8")  # raises on invalid UTF-8: the data plane reads UTF-8
    doc = yaml.load(text, Loader=yaml.CSafeLoader)  # noqa: S506 - a safe loader
    assert doc == yaml.safe_load(text), f"{what}: libyaml and the pure-Python loader read it differently"
    return doc


def _schema_errors(doc: Any) -> list[str]:
    """The deepest schema errors first (inside oneOf branches), so the failure names the field."""
    leaves = []
    stack = list(_validator().iter_errors(doc))
    while stack:
        e = stack.pop()
        if e.context:
            stack.extend(e.context)
        else:
            leaves.append(e)
    leaves.sort(key=lambda e: (-len(e.absolute_path), [str(p) for p in e.absolute_path]))
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:300]}" for e in leaves[:5]]


def _result_digest(r: RenderResult) -> tuple[Any, ...]:
    return (r.config, r.parts, tuple(sorted(r.tls_files.items())), r.certificates, fingerprint([s.__dict__ for s in r.statuses]),
            r.events, sorted(r.listeners), r.delivery_error)


def _owner(route_id: str) -> tuple[str, str, str] | None:
    parts = route_id.split("/")
    if len(parts) >= 3 and parts[0] == "httproute":
        return ("HTTPRoute", parts[1], parts[2])
    if len(parts) >= 3 and parts[0] == "ingress":
        return ("Ingress", parts[1], parts[2])
    return None


#: directResponse bodies that are a valid configuration's answer, not a rejection.
_NOT_REJECTIONS = ("NoBackends",)
_REASON_CODE = re.compile(r"[A-Z][A-Za-z]+")


@dataclass
class Finding:
    signature: str
    count: int
    example: str
    known: str  # "" when not a known (xfail-tracked) bug
    message: str = ""


#: Known render bugs (each has a strict xfail reproduction in test_hostile_inputs.py): pattern -> bug id.
KNOWN_BUGS: dict[str, str] = {
    # R1-R10 are fixed in the render: a finding of their classes is a regression.
    # A status past the 1.5 MB object limit needs input past the CRDs' admission limits
    # (parentRefs <= 32, listeners <= 64, hostnames <= 253 chars), which the API server refuses.
    r"status of .* is N bytes": "oversize-input",
}
FINDINGS: dict[str, Finding] = {}


def signature(exc: BaseException) -> str:
    """A failure's class: exception type + first message line with literals and numbers blurred."""
    lines = str(exc).strip().splitlines()
    text = " ".join(lines[:2]) if lines and lines[0].endswith(":") else (lines[0] if lines else "")
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"[0-9]+", "N", text)
    text = re.sub(r"httproute/\S+|ingress/\S+", "<route>", text)
    text = re.sub(r"\b(Ingress|HTTPRoute|Gateway) [^\s:]+", r"\1 <obj>", text)
    return f"{type(exc).__name__}: {text[:160]}"


def known_bug(sig: str) -> str:
    for pattern, bug in KNOWN_BUGS.items():
        if re.search(pattern, sig):
            return bug
    return ""


def record(exc: BaseException, objects: Any) -> None:
    sig = signature(exc)
    out_dir = os.environ.get("FUZZ_FINDINGS_DIR")
    f = FINDINGS.get(sig)
    if out_dir and (f is None or f.count < 3):
        # the whole failing input, to turn into a reproduction (json escapes lone surrogates)
        n = f.count if f else 0
        name = hashlib.sha256(sig.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        Path(out_dir, f"{name}-{n}.json").write_text(json.dumps(
            {"signature": sig, "message": str(exc)[:4000], "objects": objects, "test": STATS_TEST[0]},
            default=repr))
    if f is None:
        example = json.dumps(objects, default=repr)[:3000]
        FINDINGS[sig] = Finding(sig, 1, example, known_bug(sig), str(exc)[:2000])
    else:
        f.count += 1


STATS_TEST = [""]


def check_render_collecting(objects: Sequence[Mapping[str, Any]], options: RenderOptions | None = None,
                            **kw: Any) -> None:
    """check_render, but a failure is recorded as a Finding (the campaign keeps going)."""
    STATS_TEST[0] = repr(options)
    try:
        check_render(objects, options, **kw)
    except (AssertionError, Exception) as exc:  # noqa: BLE001 - every failure is a finding
        STATS.failures += 1
        record(exc, list(objects))


def unknown_findings() -> list[Finding]:
    return [f for f in FINDINGS.values() if not f.known]


def check_render(objects: Sequence[Mapping[str, Any]], options: RenderOptions | None = None, *,
                 test: str = "", secrets: Sequence[bytes] = (), determinism: bool = True) -> RenderResult:
    """Render ``objects`` and assert every campaign invariant (see the module doc)."""
    options = options or RenderOptions()
    STATS.by_test[test or "other"] += 1
    before = fingerprint(list(objects))
    snap = snapshot_of(objects)
    start = time.perf_counter()
    result = render(snap, options)  # invariant 1: never raises (the exception fails the test)
    elapsed = time.perf_counter() - start
    assert fingerprint(list(objects)) == before, "render mutated its input"
    STATS.renders += 1
    STATS.total_render_s += elapsed
    STATS.max_render_s = max(STATS.max_render_s, elapsed)
    STATS.max_config_bytes = max(STATS.max_config_bytes, len(result.config) + sum(len(b) for _, b in result.parts))
    STATS.split_configs += bool(result.parts)

    # 2. schema, hashes, references
    assert hashlib.sha256(result.config).hexdigest() == result.config_hash
    root = _load_yaml(result.config, "twp.yaml")
    # a config with a delivery error is never written (Programmed False names the error)
    errs = [] if result.delivery_error else _schema_errors(root)
    assert not errs, "twp.yaml does not validate:\n" + "\n".join(errs)
    routes: list[Mapping[str, Any]] = list(root.get("routes") or [])
    clusters: list[Mapping[str, Any]] = list(root.get("clusters") or [])
    includes = root.get("include") or []
    assert [i["file"] for i in includes] == [name for name, _ in result.parts]
    for inc, (name, body) in zip(includes, result.parts, strict=True):
        assert inc["sha256"] == hashlib.sha256(body).hexdigest(), f"{name}: include hash mismatch"
        part = _load_yaml(body, name)
        errs = [] if result.delivery_error else _schema_errors(part)
        assert not errs, f"{name} does not validate:\n" + "\n".join(errs)
        routes += part.get("routes") or []
        clusters += part.get("clusters") or []
    ids = [r["id"] for r in routes]
    assert len(ids) == len(set(ids)), "duplicate route ids"
    orders = [r["order"] for r in routes]
    assert orders == sorted(orders) and len(set(orders)) == len(orders), "route orders not unique/ascending"
    cluster_ids = {c["id"] for c in clusters}
    assert len(cluster_ids) == len(clusters), "duplicate cluster ids"
    for r in routes:
        refs = ([r["clusterId"]] if "clusterId" in r else []) + [c["clusterId"] for c in r.get("clusters", [])]
        refs += [r["mirror"]["clusterId"]] if "mirror" in r else []
        missing = [c for c in refs if c not in cluster_ids]
        assert not missing, f"route {r['id']} references missing clusters {missing}"
        for c in r.get("clusters", []):
            assert c["weight"] <= INT32_MAX, f"route {r['id']}: weight {c['weight']} overflows int32"
    for item in (root.get("certificates") or {}).get("items", []):
        assert item["file"] in result.tls_files, f"certificate file {item['file']} is not in the TLS Secret"
    assert sum(1 for item in (root.get("certificates") or {}).get("items", []) if item.get("default")) <= 1

    # 3. determinism: again, and with the objects in another order
    if determinism:
        digest = _result_digest(result)
        again = render(snapshot_of(objects), options)
        assert _result_digest(again) == digest, "the same input gave different output"
        shuffled = render(snapshot_of(objects, order_seed=len(objects) + 7), options)
        assert _result_digest(shuffled) == digest, "the same objects in another order gave different output"

    # 4. rejections are reported; statuses and events are writable
    statuses = {s.key: s for s in result.statuses}
    for s in result.statuses:
        text = json.dumps(s.status)  # what the client sends (ensure_ascii)
        assert len(text) < 1_500_000, f"status of {s.key} is {len(text)} bytes"
        for cond in _all_conditions(s.status):
            assert isinstance(cond.get("message"), str)
            assert len(cond["message"]) <= CONDITION_MESSAGE_MAX, \
                f"{s.key} condition {cond.get('type')} message is {len(cond['message'])} chars (API limit {CONDITION_MESSAGE_MAX})"
            STATS.false_conditions += cond.get("status") == "False"
    for ev in result.events:
        # the note limit (1 KiB) is the event writer's to enforce (it truncates); measured here
        STATS.events += 1
        STATS.max_event_message = max(STATS.max_event_message, len(ev.message))
        assert ev.reason and ev.message, f"event on {ev.kind} {ev.namespace}/{ev.name} has no reason or message"
    for r in routes:
        body = (r.get("directResponse") or {}).get("body")
        if body is None or body in _NOT_REJECTIONS:
            continue
        STATS.rejected_routes += 1
        # any client reads the body: the reason code only, the why is in status and Events
        assert _REASON_CODE.fullmatch(body), f"route {r['id']}: 500 body {body[:200]!r} says more than a reason"
        owner = _owner(r["id"])
        assert owner is not None, f"rejected route {r['id']} has no owner"
        if owner[0] == "HTTPRoute":
            st_ = statuses.get(owner)
            assert st_ is not None, f"rejected route {r['id']}: no status on {owner}"
            conds = [c for c in _all_conditions(st_.status) if c.get("status") == "False"]
            assert conds, f"rejected route {r['id']} ({body}): no False condition on {owner}"
            # a backend reason: ResolvedRefs False lists every backend problem under the route's first reason
            assert any(c.get("reason") == body or c.get("type") == "ResolvedRefs" for c in conds), \
                f"rejected route {r['id']}: reason {body!r} not given by any condition"
        else:
            evs = [e for e in result.events if (e.kind, e.namespace, e.name) == owner and e.type == "Warning"]
            assert evs, f"rejected route {r['id']} ({body}): no Warning event on {owner}"
            assert any(e.reason == body for e in evs), f"rejected route {r['id']}: no Warning event of reason {body!r}"
        STATS.reported_rejections += 1

    # 5. no key material in the config
    for blob in [result.config, *(b for _, b in result.parts)]:
        assert b"PRIVATE KEY" not in blob
        for key in secrets:
            for line in _pem_body_lines(key):
                assert line not in blob, "a private key line appears in the config"
    return result


def _all_conditions(status: Any) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    stack = [status]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            conds = v.get("conditions")
            if isinstance(conds, list):
                out += [c for c in conds if isinstance(c, Mapping)]
            stack += [x for k, x in v.items() if k != "conditions"]
        elif isinstance(v, list):
            stack += v
    return out


def _pem_body_lines(pem: bytes) -> list[bytes]:
    return [ln for ln in pem.splitlines() if ln and not ln.startswith(b"-----") and len(ln) >= 32]
