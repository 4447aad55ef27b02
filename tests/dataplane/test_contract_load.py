"""Loading and validating twp.yaml and its parts (the contract library, no sockets)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest
import yaml

from tests.dataplane.docs import cluster, config, document, dump, listener, route
from tests.dataplane.rules import Row, covers, rows
from titanium_gateway.contract import ConfigError, PartNotReady, load_config, load_directory
from titanium_gateway.contract.values import algorithm, route_timeout, upstream_timeout
from titanium_gateway.twp import model as m

SCHEMA = json.loads((Path(__file__).parents[2] / "titanium_gateway/twp/schema.json").read_text())


def _with(path: str, value, doc: dict | None = None) -> dict:
    """The default document with one field replaced (``routes.0.match.host``; value DELETE removes it)."""
    doc = copy.deepcopy(doc or document())
    keys = path.split(".")
    node = doc
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    last = keys[-1]
    if value is DELETE:
        if isinstance(node, list):
            del node[int(last)]
        else:
            del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return doc


DELETE = object()

# (rule, name, document, words of the error)
INVALID_ROWS = [
    Row("doc.shape", "not a mapping", ["a"], "expected a mapping"),
    Row("doc.shape", "unknown top-level field", _with("extra", 1), "unknown field"),
    Row("doc.shape", "no schemaVersion", _with("schemaVersion", DELETE), "schemaVersion"),
    Row("doc.shape", "schema 6", _with("schemaVersion", "6.0"), "7.x"),
    Row("doc.shape", "YAML syntax error", b"routes: [\n", "invalid YAML"),
    Row("listeners.host", "not an address", _with("listeners.0.host", "example.com"), "not an IP address"),
    Row("listeners.port", "out of range", _with("listeners.0.port", 70000), "out of range"),
    Row("listeners.port", "two listeners on one port", _with("listeners", [listener(80), listener(80, True)]),
        "two listeners on one port"),
    Row("listeners.type", "not transparent", _with("listeners.0.type", "explicit"), "transparent"),
    Row("listeners.decryptSsl", "not a boolean", _with("listeners.0.decryptSsl", "yes"), "true or false"),
    Row("certs.default", "two defaults", _with("certificates.items", [
        {"file": "a.pfx", "hosts": [], "default": True}, {"file": "b.pfx", "hosts": [], "default": True}]),
        "more than one item has default"),
    Row("files.relative", "a path outside the directory", _with("certificates.items", [
        {"file": "../etc/x.pfx", "hosts": ["a.test"]}]), "not a file name in the config directory"),
    Row("routes.id", "duplicate id", _with("routes", [route("r", 1), route("r", 2)]), "duplicate route id"),
    Row("routes.order", "duplicate order", _with("routes", [route("a", 1), route("b", 1)]), "duplicate order"),
    Row("routes.order", "order not an integer", _with("routes.0.order", "1"), "expected an integer"),
    Row("action.one", "no action", _with("routes", [{"id": "r", "order": 1, "match": {}}]), "exactly one action"),
    Row("action.one", "two actions", _with("routes", [route(clusterId="be", directResponse={"status": 500, "body": ""})]),
        "exactly one action"),
    Row("c.id", "unknown cluster", _with("routes", [route(clusterId="nope")]), "does not define"),
    Row("c.id", "unknown weighted cluster", _with("routes", [route(clusters=[{"clusterId": "nope", "weight": 1}])]),
        "does not define"),
    Row("c.id", "unknown mirror cluster", _with("routes", [route(mirror={"clusterId": "nope", "percent": 5})]),
        "does not define"),
    Row("c.id", "duplicate cluster id", _with("clusters", [cluster("be"), cluster("be")]), "duplicate cluster id"),
    Row("c.algorithm", "unknown algorithm", _with("clusters", [cluster(algorithm="Fastest")]), "is not one of"),
    Row("c.destinations", "destination without port", _with("clusters", [cluster(dests=[{"id": "a", "address": "a"}])]),
        "missing required field 'port'"),
    Row("c.sessionAffinity", "not Cookie", _with("clusters", [cluster(sessionAffinity={"policy": "Header", "name": "x"})]),
        "'Cookie'"),
    Row("c.tls", "cert without key", _with("clusters", [cluster(httpClient={"tls": {"certFile": "c.pem"}})]),
        "certFile and keyFile"),
    Row("c.tls.subjectAltNames", "an unknown type", _with("clusters", [cluster(httpClient={"tls": {
        "serverName": "a.test", "subjectAltNames": [{"type": "IPAddress", "value": "10.0.0.1"}]}})]),
        "is not Hostname or URI"),
    Row("c.tls.subjectAltNames", "an empty list", _with("clusters", [cluster(httpClient={"tls": {
        "serverName": "a.test", "subjectAltNames": []}})]), "an empty list"),
    Row("c.tls.systemRoots", "with a caFile", _with("clusters", [cluster(httpClient={"tls": {
        "caFile": "ca.crt", "systemRoots": True}})]), "exclude each other"),
    Row("c.tls.serverName", "not a string", _with("clusters", [cluster(httpClient={"tls": {"serverName": 7}})]),
        "expected a string"),
    Row("match.host", "upper-case invalid characters", _with("routes", [route(match={"host": "shop_example"})]),
        "host name"),
    Row("match.path-exact", "path without pathKind", _with("routes", [route(match={"path": "/x"})]),
        "path and pathKind"),
    Row("match.path-regex", "regex that does not compile", _with("routes", [route(match={"path": "/(",
                                                                                          "pathKind": "Regex"})]),
        "does not compile"),
    Row("match.queryRegex", "regex that does not compile", _with("routes", [route(match={"queryRegex": {"a": "["}})]),
        "does not compile"),
    Row("match.method", "not a token", _with("routes", [route(match={"method": "GET POST"})]), "not an HTTP method"),
    Row("match.ports", "a port no listener has", _with("routes", [route(match={"ports": [9999]})]),
        "which no listener has"),
    Row("match.ports", "an empty list", _with("routes", [route(match={"ports": []})]), "must not be empty"),
    Row("match.ports", "a port twice", _with("routes", [route(match={"ports": [8080, 8080]})]), "lists a port twice"),
    Row("match.ports", "not a port", _with("routes", [route(match={"ports": [0]})]), "out of range"),
    Row("action.redirect", "redirect without host", _with("routes", [route(redirect={"statusCode": 301})]),
        "missing required field 'host'"),
    Row("action.redirect", "status 307", _with("routes", [route(redirect={"statusCode": 307, "host": "a"})]),
        "not 301 or 302"),
    Row("d.host", "redirect host is required", _with("routes", [route(redirect={"statusCode": 302, "path": "/"})]),
        "'host'"),
    Row("route.mirror", "percent over 100", _with("routes", [route(mirror={"clusterId": "be", "percent": 101})]),
        "0 to 100"),
    Row("route.limits", "not a TimeSpan", _with("routes", [route(limits={"requestTimeout": "5s"})]), "TimeSpan"),
    Row("d.zero", "a zero route timeout", _with("routes", [route(limits={"requestTimeout": "00:00:00"})]),
        "zero duration"),
    Row("d.zero", "a zero cluster timeout", _with("clusters", [cluster(httpClient={"requestTimeout": "00:00:00.000"})]),
        "zero duration"),
    Row("t.strings", "a number parameter", _with("routes", [route(transforms=[
        {"kind": "RequestHeaderSet", "parameters": {"name": "x", "value": 1}}])]), "expected a string"),
    Row("d.params", "a nested parameter", _with("routes", [route(policies=[
        {"kind": "MaxRequestBodySize", "parameters": {"bytes": {"n": "1"}}}])]), "expected a string"),
    Row("d.params", "a list where a string is due", _with("routes", [route(policies=[
        {"kind": "RateLimit", "parameters": {"requestsPerSecond": ["1"], "window": "00:00:01", "partition": "p"}}])]),
        "expected a string"),
    Row("d.params", "allow must be a list", _with("routes", [route(policies=[
        {"kind": "IpAllowDeny", "parameters": {"allow": "10.0.0.0/8"}}])]), "expected a list"),
    Row("d.params", "bytes in decimal", _with("routes", [route(policies=[
        {"kind": "MaxRequestBodySize", "parameters": {"bytes": "8m"}}])]), "not a decimal number"),
    Row("t.RequestHeaderSet", "unknown transform", _with("routes", [route(transforms=[
        {"kind": "RequestHeaderReplace", "parameters": {"name": "x", "value": "1"}}])]), "unknown transform kind"),
    Row("t.RequestHeaderSet", "a value with CR LF", _with("routes", [route(transforms=[
        {"kind": "RequestHeaderSet", "parameters": {"name": "x", "value": "a\r\nb: c"}}])]), "CR, LF"),
    Row("t.PathRegexReplace", "a pattern that does not compile", _with("routes", [route(transforms=[
        {"kind": "PathRegexReplace", "parameters": {"pattern": "(", "replacement": "/"}}])]), "does not compile"),
    Row("p.IpAllowDeny", "not a CIDR", _with("routes", [route(policies=[
        {"kind": "IpAllowDeny", "parameters": {"allow": ["10.0.0.0/33"]}}])]), "not an address or CIDR"),
    Row("p.RateLimit", "zero requests per second", _with("routes", [route(policies=[
        {"kind": "RateLimit", "parameters": {"requestsPerSecond": "0", "window": "00:00:01", "partition": "p"}}])]),
        "less than 1"),
    Row("p.ExtAuth", "URL with credentials", _with("routes", [route(policies=[
        {"kind": "ExtAuth", "parameters": {"url": "http://u:p@auth.test/", "timeout": "00:00:01"}}])]),
        "without credentials"),
    Row("p.Cors", "unknown policy", _with("routes", [route(policies=[
        {"kind": "Csrf", "parameters": {}}])]), "unknown policy kind"),
    Row("d.parts", "a split root with routes", {**document(), "include": [{"file": "twp.part-1.yaml",
                                                                          "sha256": "0" * 64}]}, "unknown field"),
]


@rows(*INVALID_ROWS)
def test_invalid_document(row: Row) -> None:
    doc, words = row.args
    data = doc if isinstance(doc, bytes) else dump(doc)
    with pytest.raises(ConfigError) as err:
        load_config(data)
    assert words in str(err.value)
    assert str(err.value).startswith("twp.yaml")  # names the file


@covers("doc.shape")
def test_error_names_the_position() -> None:
    doc = document([route("a", 1), route("b", 2, {"host": "Bad_Host"})])
    with pytest.raises(ConfigError) as err:
        load_config(dump(doc))
    assert err.value.where.startswith("routes[1] (b).match.host")


@covers("doc.shape")
def test_yaml_error_has_line_and_column() -> None:
    with pytest.raises(ConfigError) as err:
        load_config(b'schemaVersion: "7.1"\nroutes: [\n  {id: a\n')
    assert "line" in err.value.where and "column" in err.value.where


VALID_ROWS = [
    Row("doc.shape", "the minimal document", {"schemaVersion": "7.1"}, lambda c: c.routes == () and c.listeners == ()),
    Row("listeners.host", "host kept", document(listeners=[listener(8080)]),
        lambda c: c.listeners == (m.Listener(8080, False, "0.0.0.0"),)),
    Row("listeners.decryptSsl", "TLS listener", document(listeners=[listener(8443, True)]),
        lambda c: c.listeners[0].decrypt_ssl is True),
    Row("route.limits", "TimeSpan with milliseconds", document([route(limits={"requestTimeout": "00:00:00.500"})]),
        lambda c: route_timeout(c.routes[0]) == 0.5),
    Row("d.timeouts", "sub-second cluster timeout kept", document(clusters=[cluster(
        httpClient={"requestTimeout": "00:00:01.250"})]), lambda c: upstream_timeout(c.clusters["be"]) == 1.25),
    Row("d.timeouts", "days and hours", document([route(limits={"requestTimeout": "1.02:03:04"})]),
        lambda c: route_timeout(c.routes[0]) == 86400 + 2 * 3600 + 3 * 60 + 4),
    Row("d.timeouts", "no requestTimeout: no per-cluster limit", document(),
        lambda c: upstream_timeout(c.clusters["be"]) is None),
    Row("d.mirror-weight", "mirror percent defaults to 100", document([route(mirror={"clusterId": "be"})]),
        lambda c: c.routes[0].behavior.mirror == m.Mirror("be", 100.0)),
    Row("d.mirror-weight", "destination weight defaults to 1", document(clusters=[cluster(
        dests=[{"id": "a", "address": "127.0.0.1", "port": 1}])]), lambda c: c.clusters["be"].destinations[0].weight == 1),
    Row("c.algorithm", "RoundRobin when absent", document(), lambda c: algorithm(c.clusters["be"]) == "RoundRobin"),
    Row("c.empty", "an empty destinations list is legal", document(clusters=[cluster(dests=[])]),
        lambda c: c.clusters["be"].destinations == ()),
    Row("match.headers", "header names lower-cased, the first of equal names counts",
        document([route(match={"headers": {"X-A": "1", "x-a": "2"}})]),
        lambda c: c.routes[0].match.headers == (("x-a", "1"),)),
    Row("action.clusters", "weight 0 allowed", document([route(clusters=[{"clusterId": "be", "weight": 0}])]),
        lambda c: c.routes[0].behavior.action.clusters[0].weight == 0),
    Row("routes.first-match", "routes sorted by order", document([route("b", 5), route("a", 2)]),
        lambda c: [r.id for r in c.routes] == ["a", "b"]),
]


@rows(*VALID_ROWS)
def test_valid_document(row: Row) -> None:
    doc, check = row.args
    assert check(load_config(dump(doc)))


@covers("files.config-hash")
def test_config_hash_is_the_sha256_of_the_root_bytes() -> None:
    data = dump(document())
    assert load_config(data).config_hash == hashlib.sha256(data).hexdigest()
    assert load_config(data + b"\n# same config, other bytes\n").config_hash != hashlib.sha256(data).hexdigest()


def _split(routes: list[list[dict]], clusters: list[list[dict]]) -> tuple[bytes, dict[str, bytes]]:
    parts: dict[str, bytes] = {}
    include = []
    for i, (rs, cs) in enumerate(zip(routes, clusters, strict=True), start=1):
        data = dump({"routes": rs, "clusters": cs})
        parts[f"twp.part-{i}.yaml"] = data
        include.append({"file": f"twp.part-{i}.yaml", "sha256": hashlib.sha256(data).hexdigest()})
    root = dump({"schemaVersion": "7.1", "listeners": [listener(8080)], "certificates": {"items": []},
                 "include": include})
    return root, parts


@covers("parts.order", "d.parts")
def test_parts_are_one_list_in_include_order() -> None:
    root, parts = _split([[route("a", 3, clusterId="c2")], [route("b", 1)]], [[cluster("be")], [cluster("c2")]])
    cfg = load_config(root, parts)
    assert [r.id for r in cfg.routes] == ["b", "a"]  # one list, by order
    assert set(cfg.clusters) == {"be", "c2"}  # a route of part 1 names a cluster of part 2
    assert [i.file for i in cfg.include] == ["twp.part-1.yaml", "twp.part-2.yaml"]


@covers("parts.order")
def test_parts_are_read_in_list_order() -> None:
    root, parts = _split([[route("a", 1)], [route("b", 2)]], [[cluster("be")], []])
    read: list[str] = []
    load_config(root, lambda name: read.append(name) or parts.get(name))
    assert read == ["twp.part-1.yaml", "twp.part-2.yaml"]


@covers("parts.sha256")
def test_part_with_other_sha256_is_not_ready() -> None:
    root, parts = _split([[route("a", 1)]], [[cluster("be")]])
    parts["twp.part-1.yaml"] += b"\n"
    with pytest.raises(PartNotReady) as err:
        load_config(root, parts)
    assert "differs" in str(err.value) and err.value.source == "twp.part-1.yaml"


@covers("parts.missing")
def test_missing_part_is_not_ready() -> None:
    root, parts = _split([[route("a", 1)], [route("b", 2)]], [[cluster("be")], []])
    del parts["twp.part-2.yaml"]
    with pytest.raises(PartNotReady, match="missing"):
        load_config(root, parts)


@covers("parts.hash-covers")
def test_split_config_hash_is_the_roots_and_covers_the_parts() -> None:
    root, parts = _split([[route("a", 1)]], [[cluster("be")]])
    assert load_config(root, parts).config_hash == hashlib.sha256(root).hexdigest()
    root2, parts2 = _split([[route("a", 2)]], [[cluster("be")]])  # a part changes: so does the root
    assert hashlib.sha256(root2).hexdigest() != hashlib.sha256(root).hexdigest()
    with pytest.raises(PartNotReady):  # the old root does not accept the new part
        load_config(root, parts2)


@covers("d.parts")
def test_a_part_holds_only_routes_and_clusters() -> None:
    data = dump({"routes": [route("a", 1)], "clusters": [cluster("be")], "listeners": []})
    root = dump({"schemaVersion": "7.1", "listeners": [], "certificates": {"items": []},
                 "include": [{"file": "twp.part-1.yaml", "sha256": hashlib.sha256(data).hexdigest()}]})
    with pytest.raises(ConfigError, match="twp.part-1.yaml: listeners: unknown field"):
        load_config(root, {"twp.part-1.yaml": data})


@covers("files.root", "files.relative")
def test_load_directory_reads_twp_yaml_and_parts(tmp_path: Path) -> None:
    root, parts = _split([[route("a", 1)]], [[cluster("be")]])
    (tmp_path / "twp.yaml").write_bytes(root)
    for name, data in parts.items():
        (tmp_path / name).write_bytes(data)
    cfg, raw = load_directory(tmp_path)
    assert raw == root and [r.id for r in cfg.routes] == ["a"]
    with pytest.raises(FileNotFoundError):
        load_directory(tmp_path / "nothing")


@covers("doc.shape")
def test_the_data_plane_accepts_what_the_schema_accepts() -> None:
    """Documents valid under the render's JSON Schema load (a sample of its shapes)."""
    jsonschema = pytest.importorskip("jsonschema")
    doc = document([
        route("a", 1, {"host": "*.example.com", "path": "/api", "pathKind": "Prefix", "method": "GET",
                       "headers": {"x-env": "canary"}, "query": {"q": "v"}, "queryRegex": {"id": "^[0-9]+$"}},
              clusters=[{"clusterId": "be", "weight": 9}, {"clusterId": "c2", "weight": 1}],
              mirror={"clusterId": "c2", "percent": 50.0}, limits={"requestTimeout": "00:00:00.500"},
              transforms=[{"kind": k, "parameters": p} for k, p in [
                  ("RequestHeaderSet", {"name": "x", "value": "1"}), ("RequestHeaderAppend", {"name": "x", "value": "2"}),
                  ("RequestHeaderRemove", {"name": "y"}), ("ResponseHeaderSet", {"name": "x", "value": "1"}),
                  ("ResponseHeaderAppend", {"name": "x", "value": "1"}), ("ResponseHeaderRemove", {"name": "x"}),
                  ("HostSet", {"host": "h"}), ("PathSet", {"path": "/p"}),
                  ("PathRegexReplace", {"pattern": "^/a", "replacement": "/b"}), ("PathRemovePrefix", {"prefix": "/a"}),
                  ("PathPrefix", {"prefix": "/b"})]],
              policies=[{"kind": "MaxRequestBodySize", "parameters": {"bytes": "8388608"}},
                        {"kind": "IpAllowDeny", "parameters": {"allow": ["10.0.0.0/8", "192.0.2.1"]}},
                        {"kind": "RateLimit", "parameters": {"requestsPerSecond": "50", "window": "00:00:01",
                                                             "partition": "ingress/apps/shop"}},
                        {"kind": "Cors", "parameters": {"allowOrigins": ["*"]}},
                        {"kind": "ExtAuth", "parameters": {"url": "https://auth.test/check", "timeout": "00:00:05"}}]),
        route("b", 2, redirect={"statusCode": 301, "scheme": "https", "host": "h", "port": 8443, "path": "/n"}),
        route("c", 3, directResponse={"status": 500, "body": "x"}),
    ], [cluster("be", algorithm="PowerOfTwoChoices", sessionAffinity={"policy": "Cookie", "name": "titanium-affinity"},
                httpClient={"requestTimeout": "00:00:30", "tls": {"caFile": "ca.pem", "certFile": "c.pem",
                                                                  "keyFile": "k.pem"}}),
        cluster("c2", dests=[])],
        certificates=[{"file": "apps.shop-tls.pfx", "hosts": ["*.example.com"], "default": True}])
    jsonschema.validate(yaml.safe_load(dump(doc)), SCHEMA)
    cfg = config(doc["routes"], doc["clusters"], certificates=doc["certificates"]["items"])
    assert len(cfg.routes) == 3 and cfg.files == ("apps.shop-tls.pfx", "ca.pem", "c.pem", "k.pem")
