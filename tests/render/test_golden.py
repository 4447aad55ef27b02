"""Golden tests of the pure render: ``tests/render/testdata/<case>/``.

Each case holds ``in.yaml`` (manifests, loaded like ``titanium-gateway render -f``), optional
``options.yaml`` (render options, see conftest.case_options), a ``README.md`` saying what the
spec requires, and the expected output exactly as ``render --out`` writes it: ``twp.yaml``
(+ ``twp.part-<n>.yaml``), ``status.yaml``, ``events.yaml`` (only when there are events) and
``certificates.yaml``. ``UPDATE_GOLDEN=1`` (``make golden``) rewrites them: review the diff!

Two independent checks per case:

* ``test_golden``: the bytes equal the committed files, and every twp document validates
  against ``titanium_gateway/twp/schema.json``;
* ``test_spec``: the hand-written ``expect.yaml`` (what the spec requires, written from the
  spec, not from the output) holds. A case with a known render bug has an ``XFAIL`` file naming
  its entry in ``tests/render/DISCREPANCIES.md``: its spec test is a strict xfail and no golden
  output is committed (nor written by UPDATE_GOLDEN) until the render is fixed.

expect.yaml (every key optional; a condition is ``"True"``, ``"False"``, or ``"<status>/<Reason>"``;
``observedGeneration: N`` in a conditions mapping requires it on every condition there)::

    gatewayclasses: {<name>: {<CondType>: "True/Accepted"}}
    gateways:
      <ns>/<name>:
        conditions: {Accepted: "True/Accepted", Programmed: "False/Pending"}
        addresses: [{type: IPAddress, value: 192.0.2.10}]     # subset match
        listeners: {<listener>: {attachedRoutes: 1, conditions: {...}, supportedKinds: [...]}}
        attachedListenerSets: 2                                # (or "<absent>")
    listenersets:                         # like gateways: conditions, listeners, listener_count
      <ns>/<name>: {conditions: {Accepted: ...}, listeners: {<listener>: {...}}}
    httproutes:                           # (also grpcroutes, tlsroutes, tcproutes, udproutes)
      <ns>/<name>:
        parents: {<gwns>/<gw>[/<section>][:<port>]: {Accepted: ..., ResolvedRefs: ...}}
        no_parents: true                  # this controller writes no parent entry at all
    policies:                             # BackendTLSPolicy status.ancestors of ours
      <ns>/<name>: {ancestors: {<gwns>/<gw>: {Accepted: ..., ResolvedRefs: ...}}, no_ancestors: true}
    tls_files: [<file>, ...]              # each in the TLS Secret
    absent_tls_files: [<file>, ...]       # none of these in the TLS Secret
    not_owned: [<Kind> <ns>/<name>]       # no status document for these
    listeners: [{port: 8080, decryptSsl: false}]               # exact count, subset match
    routes: [{id: ..., match: {...}, clusterId: ...}]          # ordered subsequence, subset match
    routes_any: [{match: {...}, redirect: {...}}]              # each matches some route, any order
    route_count: 3
    absent_routes: [{match: {...}}]                            # no route matches these
    clusters: [{id: ..., destinations: [...]}]                 # each present, subset match
    cluster_count: 2
    certificates: [{file: ..., hosts: [...], source: ...}]     # exact list
    events: [{reason: ..., kind: ...}]                         # each present, subset match
    event_count: 3
    plane_count: 3                        # data planes of the render (the shared one included)
    planes:                               # a data plane by key (a Gateway's: <ns>/<name>), with
      <ns>/<name>: {listeners: ..., routes: ..., certificates: ..., tls_files: ...}  # the keys above

Outside ``planes``, ``tls_files``, ``absent_tls_files`` and the keys from ``listeners`` to
``certificates`` are the shared data plane's.

In subset matching a dict matches when each expected key matches (the value ``"<absent>"``
requires the key to be missing), a list when it has the same length and each item matches.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from titanium_gateway.offline.outputs import certificate_list, event_list, output_files, status_documents
from titanium_gateway.render.result import Plane, RenderResult

from .conftest import INPUT_FILES, TESTDATA, case_names, parse_twp, render_case, update_golden, validate_twp

CASES = case_names()
ABSENT = "<absent>"


def _xfail_reason(case: str) -> str | None:
    path = TESTDATA / case / "XFAIL"
    return path.read_text().strip() if path.exists() else None


def _expected_files(case_dir: Path) -> dict[str, bytes]:
    """The committed output, by its path in the case (a Gateway's own data plane's files in
    ``gateways/<namespace>/<name>/``)."""
    return {p.relative_to(case_dir).as_posix(): p.read_bytes() for p in sorted(case_dir.rglob("*"))
            if p.is_file() and p.relative_to(case_dir).as_posix() not in INPUT_FILES}


def golden_files(result: RenderResult) -> dict[str, bytes]:
    files = output_files(result)
    if not result.events:
        del files["events.yaml"]
    return files


def test_there_are_cases() -> None:
    gateway_cases = [c for c in CASES if not c.startswith("ingress-")]
    assert len(gateway_cases) >= 40, gateway_cases
    for case in CASES:
        if case.startswith("ingress-"):
            continue
        assert (TESTDATA / case / "README.md").exists(), f"{case} has no README.md"
        assert (TESTDATA / case / "expect.yaml").exists(), f"{case} has no expect.yaml"


@pytest.mark.parametrize("case", CASES)
def test_golden(case: str) -> None:
    case_dir = TESTDATA / case
    xfail = _xfail_reason(case)
    result = render_case(case)
    produced = golden_files(result)
    for name, data in produced.items():
        if name.rpartition("/")[2].startswith("twp"):
            validate_twp(data, f"{case}/{name}")
    include = (parse_twp(result.config) or {}).get("include") or []
    assert [(i["file"], i["sha256"]) for i in include] == [
        (name, hashlib.sha256(data).hexdigest()) for name, data in result.parts
    ], "twp.yaml include must list every part with its sha256, in order"
    assert result.config_hash == hashlib.sha256(result.config).hexdigest()
    if xfail is not None:
        pytest.xfail(f"known render discrepancy, no golden output committed: {xfail}")
    if update_golden():
        for stale in set(_expected_files(case_dir)) - set(produced):
            (case_dir / stale).unlink()
        for name, data in produced.items():
            (case_dir / name).parent.mkdir(parents=True, exist_ok=True)
            (case_dir / name).write_bytes(data)
        return
    expected = _expected_files(case_dir)
    assert sorted(produced) == sorted(expected), f"{case}: produced files differ from the committed ones"
    for name, data in produced.items():
        assert data.decode() == expected[name].decode(), f"{case}/{name} differs (UPDATE_GOLDEN=1 to regenerate)"


# --- expect.yaml -----------------------------------------------------------------------


def subset_match(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Differences between ``expected`` and ``actual`` (empty when it matches)."""
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{path or '<root>'}: expected a mapping, got {actual!r}"]
        errors: list[str] = []
        for key, value in expected.items():
            sub = f"{path}.{key}" if path else str(key)
            if value == ABSENT:
                if key in actual:
                    errors.append(f"{sub}: expected absent, got {actual[key]!r}")
            elif key not in actual:
                errors.append(f"{sub}: missing (expected {value!r})")
            else:
                errors.extend(subset_match(value, actual[key], sub))
        return errors
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {len(expected)} item(s) {expected!r}, got {actual!r}"]
        errors = []
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            errors.extend(subset_match(e, a, f"{path}[{i}]"))
        return errors
    if expected != actual:
        return [f"{path}: expected {expected!r}, got {actual!r}"]
    return []


def _conditions(conds: Any, expected: Mapping[str, str], where: str) -> list[str]:
    by_type = {c.get("type"): c for c in conds or [] if isinstance(c, Mapping)}
    errors = []
    expected = dict(expected)
    gen = expected.pop("observedGeneration", None)
    if gen is not None:
        for c in by_type.values():
            if c.get("observedGeneration") != gen:
                errors.append(f"{where}: {c.get('type')} has observedGeneration {c.get('observedGeneration')}, expected {gen}")
    for ctype, want in expected.items():
        status, _, reason = str(want).partition("/")
        got = by_type.get(ctype)
        if got is None:
            errors.append(f"{where}: no {ctype} condition (have {sorted(map(str, by_type))})")
            continue
        if got.get("status") != status or (reason and got.get("reason") != reason):
            errors.append(
                f"{where}: {ctype} is {got.get('status')}/{got.get('reason')} ({got.get('message')!r}), expected {want}"
            )
        for fld in ("observedGeneration", "lastTransitionTime", "message"):
            if fld not in got:
                errors.append(f"{where}: {ctype} has no {fld}")
    return errors


def _parent_key(route_ns: str, ref: Mapping[str, Any]) -> str:
    key = f"{ref.get('namespace') or route_ns}/{ref.get('name')}"
    if ref.get("sectionName"):
        key += f"/{ref['sectionName']}"
    if ref.get("port"):
        key += f":{ref['port']}"
    return key


def _twp(result: RenderResult | Plane) -> dict[str, Any]:
    """The whole config of a data plane (the result's: the shared one's) as one document (parts
    merged in include order)."""
    doc = dict(parse_twp(result.config) or {})
    for _, data in result.parts:
        part = parse_twp(data) or {}
        for key in ("routes", "clusters"):
            doc[key] = list(doc.get(key) or []) + list(part.get(key) or [])
    return doc


def _listener_checks(st: Mapping[str, Any], want: Mapping[str, Any], what: str) -> list[str]:
    """A Gateway's or ListenerSet's ``listeners`` and ``listener_count`` expectations."""
    errors: list[str] = []
    listeners = {ls.get("name"): ls for ls in st.get("listeners") or []}
    for lname, lwant in (want.get("listeners") or {}).items():
        got = listeners.get(lname)
        where = f"{what} listener {lname}"
        if got is None:
            errors.append(f"{where}: missing")
            continue
        errors.extend(_conditions(got.get("conditions"), lwant.get("conditions") or {}, where))
        for fld in ("attachedRoutes", "supportedKinds"):
            if fld in lwant:
                errors.extend(subset_match(lwant[fld], got.get(fld), f"{where} {fld}"))
    if "listener_count" in want and len(listeners) != want["listener_count"]:
        errors.append(f"{what}: {len(listeners)} listener statuses, expected {want['listener_count']}")
    return errors


#: (expect.yaml key, kind) of the route kinds whose parent statuses a case may expect
_ROUTE_KINDS = (("httproutes", "HTTPRoute"), ("grpcroutes", "GRPCRoute"), ("tlsroutes", "TLSRoute"),
                ("tcproutes", "TCPRoute"), ("udproutes", "UDPRoute"))


def check_expectations(result: RenderResult, expect: Mapping[str, Any]) -> list[str]:
    errors: list[str] = []
    statuses = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d["status"]
                for d in status_documents(result)}

    def status_of(kind: str, key: str) -> Any:
        ns, _, name = key.rpartition("/")
        st = statuses.get((kind, ns, name))
        if st is None:
            errors.append(f"no status for {kind} {key} (have {sorted(statuses)})")
        return st

    for name, conds in (expect.get("gatewayclasses") or {}).items():
        st = status_of("GatewayClass", name)
        if st is not None:
            errors.extend(_conditions(st.get("conditions"), conds, f"GatewayClass {name}"))
    for key, want in (expect.get("gateways") or {}).items():
        st = status_of("Gateway", key)
        if st is None:
            continue
        errors.extend(_conditions(st.get("conditions"), want.get("conditions") or {}, f"Gateway {key}"))
        if "addresses" in want:
            errors.extend(subset_match(want["addresses"], st.get("addresses", []), f"Gateway {key} addresses"))
        errors.extend(_listener_checks(st, want, f"Gateway {key}"))
        if "attachedListenerSets" in want:
            errors.extend(subset_match({"attachedListenerSets": want["attachedListenerSets"]}, st,
                                       f"Gateway {key}"))
    for key, want in (expect.get("listenersets") or {}).items():
        st = status_of("ListenerSet", key)
        if st is None:
            continue
        errors.extend(_conditions(st.get("conditions"), want.get("conditions") or {}, f"ListenerSet {key}"))
        errors.extend(_listener_checks(st, want, f"ListenerSet {key}"))
    for field, kind in _ROUTE_KINDS:
        for key, want in (expect.get(field) or {}).items():
            st = status_of(kind, key)
            if st is None:
                continue
            route_ns = key.rpartition("/")[0]
            parents = {_parent_key(route_ns, p.get("parentRef") or {}): p for p in st.get("parents") or []}
            if want.get("no_parents") and parents:
                errors.append(f"{kind} {key}: expected no parent entries, got {sorted(parents)}")
            for pkey, conds in (want.get("parents") or {}).items():
                got = parents.get(pkey)
                if got is None:
                    errors.append(f"{kind} {key}: no parent entry {pkey} (have {sorted(parents)})")
                    continue
                errors.extend(_conditions(got.get("conditions"), conds, f"{kind} {key} parent {pkey}"))
    for key, want in (expect.get("policies") or {}).items():
        st = status_of("BackendTLSPolicy", key)
        if st is None:
            continue
        ancestors = {f"{(a.get('ancestorRef') or {}).get('namespace')}/{(a.get('ancestorRef') or {}).get('name')}": a
                     for a in st.get("ancestors") or []}
        if want.get("no_ancestors") and ancestors:
            errors.append(f"BackendTLSPolicy {key}: expected no ancestor entries of ours, got {sorted(ancestors)}")
        for akey, conds in (want.get("ancestors") or {}).items():
            got = ancestors.get(akey)
            if got is None:
                errors.append(f"BackendTLSPolicy {key}: no ancestor entry {akey} (have {sorted(ancestors)})")
                continue
            errors.extend(_conditions(got.get("conditions"), conds, f"BackendTLSPolicy {key} ancestor {akey}"))
    for item in expect.get("not_owned") or []:
        kind, _, key = item.partition(" ")
        ns, _, name = key.rpartition("/")
        if (kind, ns, name) in statuses:
            errors.append(f"{item}: has a status document but is not ours")

    errors.extend(_document_checks(_twp(result), certificate_list(result), result.tls_files, expect, ""))
    for key, want in (expect.get("planes") or {}).items():
        plane = result.plane(key)
        if plane is None:
            errors.append(f"no data plane {key} (have {[p.key for p in result.planes]})")
            continue
        errors.extend(_document_checks(_twp(plane), certificate_list(plane), plane.tls_files, want, f"plane {key}: "))
    if "plane_count" in expect and len(result.planes) != expect["plane_count"]:
        errors.append(f"{len(result.planes)} data planes, expected {expect['plane_count']}: "
                      f"{[p.key for p in result.planes]}")
    events = event_list(result)
    for want in expect.get("events") or []:
        flat = [{**e, **e["involvedObject"]} for e in events]
        if not any(not subset_match(want, e) for e in flat):
            errors.append(f"no event matching {want!r} (have {events!r})")
    if "event_count" in expect and len(events) != expect["event_count"]:
        errors.append(f"{len(events)} events, expected {expect['event_count']}")
    if expect.get("no_events") and events:
        errors.append(f"expected no events, got {events!r}")
    return errors


def _document_checks(twp: Mapping[str, Any], certificates: list[dict[str, Any]], tls_files: Mapping[str, bytes],
                     expect: Mapping[str, Any], where: str) -> list[str]:
    """The expectations on one data plane's document and TLS Secret (``where``: the prefix of
    its messages)."""
    errors: list[str] = []
    for name in expect.get("tls_files") or []:
        if name not in tls_files:
            errors.append(f"no TLS Secret file {name} (have {sorted(tls_files)})")
    for name in expect.get("absent_tls_files") or []:
        if name in tls_files:
            errors.append(f"TLS Secret file {name} should not be there")
    if "listeners" in expect:
        errors.extend(subset_match(expect["listeners"], twp.get("listeners") or [], "listeners"))
    routes = list(twp.get("routes") or [])
    if "route_count" in expect and len(routes) != expect["route_count"]:
        errors.append(f"{len(routes)} routes, expected {expect['route_count']}: {[r.get('id') for r in routes]}")
    pos = 0
    for want in expect.get("routes") or []:
        for i in range(pos, len(routes)):
            if not subset_match(want, routes[i]):
                pos = i + 1
                break
        else:
            near = [r for r in routes if want.get("id") and r.get("id") == want.get("id")]
            detail = f"; route with that id: {near[0]!r} ({subset_match(want, near[0])})" if near else ""
            errors.append(f"no route matching {want!r} after position {pos}{detail}")
    for want in expect.get("routes_any") or []:
        if not any(not subset_match(want, r) for r in routes):
            near = [r for r in routes if want.get("id") and r.get("id") == want.get("id")]
            detail = f"; route with that id: {near[0]!r} ({subset_match(want, near[0])})" if near else ""
            errors.append(f"no route (anywhere) matching {want!r}{detail}")
    for want in expect.get("absent_routes") or []:
        for r in routes:
            if not subset_match(want, r):
                errors.append(f"route {r.get('id')} matches absent_routes item {want!r}")
    clusters = list(twp.get("clusters") or [])
    if "cluster_count" in expect and len(clusters) != expect["cluster_count"]:
        errors.append(f"{len(clusters)} clusters, expected {expect['cluster_count']}: {[c.get('id') for c in clusters]}")
    for want in expect.get("clusters") or []:
        if not any(not subset_match(want, c) for c in clusters):
            near = [c for c in clusters if c.get("id") == want.get("id")]
            errors.append(f"no cluster matching {want!r}" + (f"; got {near[0]!r}" if near else ""))
    if "certificates" in expect:
        errors.extend(subset_match(expect["certificates"], certificates, "certificates"))
    return [where + e for e in errors]


def _spec_params() -> list[Any]:
    params = []
    for case in CASES:
        reason = _xfail_reason(case)
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        params.append(pytest.param(case, marks=marks, id=case))
    return params


@pytest.mark.parametrize("case", _spec_params())
def test_spec(case: str) -> None:
    path = TESTDATA / case / "expect.yaml"
    if not path.exists():
        pytest.skip("no expect.yaml (an Ingress case checks its spec in its own tests)")
    expect = yaml.safe_load(path.read_text()) or {}
    errors = check_expectations(render_case(case), expect)
    assert not errors, f"{case} does not meet its expect.yaml:\n" + "\n".join(errors)


def test_expectations_detect_mismatches() -> None:
    """The expect.yaml checker itself: every kind of wrong expectation is reported."""
    result = render_case("seed-quickstart")
    assert check_expectations(result, yaml.safe_load((TESTDATA / "seed-quickstart" / "expect.yaml").read_text())) == []
    wrong: list[dict[str, Any]] = [
        {"gatewayclasses": {"titanium": {"Accepted": "False"}}},
        {"gateways": {"apps/web": {"conditions": {"Programmed": "True/Programmed"}}}},
        {"gateways": {"apps/web": {"conditions": {"Accepted": "True", "observedGeneration": 2}}}},
        {"gateways": {"apps/web": {"listeners": {"http": {"attachedRoutes": 2}}}}},
        {"gateways": {"apps/nope": {}}},
        {"httproutes": {"apps/shop": {"parents": {"apps/other": {"Accepted": "True"}}}}},
        {"httproutes": {"apps/shop": {"no_parents": True}}},
        {"not_owned": ["HTTPRoute apps/shop"]},
        {"route_count": 3},
        {"routes": [{"id": "httproute/apps/shop/r1m0"}, {"id": "httproute/apps/shop/r0m0"}]},
        {"routes_any": [{"match": {"host": "nope.example.com"}}]},
        {"absent_routes": [{"match": {"host": "shop.example.com"}}]},
        {"routes_any": [{"id": "httproute/apps/shop/r0m0", "mirror": {"clusterId": "x"}}]},
        {"routes_any": [{"id": "httproute/apps/shop/r0m0", "clusters": "<absent>"}]},
        {"clusters": [{"id": "svc-apps.frontend.8080", "destinations": []}]},
        {"cluster_count": 1},
        {"listeners": [{"port": 8443}]},
        {"certificates": [{"file": "x.pfx"}]},
        {"events": [{"reason": "Nope"}]},
        {"listenersets": {"apps/nope": {}}},
        {"grpcroutes": {"apps/nope": {}}},
        {"policies": {"apps/nope": {}}},
        {"tls_files": ["nope.ca.crt"]},
        {"gateways": {"apps/web": {"attachedListenerSets": 1}}},
    ]
    for expect in wrong:
        assert check_expectations(result, expect), f"not detected: {expect}"
    # a data plane's own: its TLS files (and those it must not have), its document
    planes = render_case("pergateway-listenerset")
    for expect in ({"planes": {"infra/other": {"tls_files": ["infra.secure-cert.pfx"]}}},
                   {"planes": {"infra/edge": {"absent_tls_files": ["infra.secure-cert.pfx"]}}},
                   {"planes": {"infra/edge": {"route_count": 1}}},
                   {"planes": {"infra/nope": {}}},
                   {"plane_count": 2}):
        assert check_expectations(planes, expect), f"not detected: {expect}"
