"""``load_config(..., cache=RouteCache())``: the same Config as a whole read, reading only the
route items it has not read before."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from titanium_gateway.twp import load
from titanium_gateway.twp.load import ConfigError, RouteCache, load_config

GOLDEN = sorted((Path(__file__).resolve().parents[1] / "render" / "testdata").glob("**/twp*.yaml"))
ROOTS = [p for p in GOLDEN if p.name == "twp.yaml"]


def _route_item(name: str, order: int, extra: str = "", path: str = "/") -> str:
    return (f"- id: httproute/apps/{name}/r0m0\n  order: {order}\n"
            f"  match: {{host: {name}.example.com, path: {path}, pathKind: Prefix}}\n  clusterId: be\n{extra}")


def _document(names: list[str], extra: dict[str, str] | None = None, paths: dict[str, str] | None = None) -> bytes:
    items = "".join(_route_item(n, i, (extra or {}).get(n, ""), (paths or {}).get(n, "/"))
                    for i, n in enumerate(names, start=1))
    return ("schemaVersion: \"7.1\"\nlisteners:\n- {host: 0.0.0.0, port: 8080, type: transparent, decryptSsl: false}\n"
            "certificates:\n  items: []\nroutes:\n" + items +
            "clusters:\n- id: be\n  destinations:\n  - {id: d, address: 127.0.0.1, port: 9}\n").encode()


def _count_route_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = load._route

    def counting(ctx, raw, where, **kw):
        seen.append(raw.get("id") if isinstance(raw, dict) else "?")
        return real(ctx, raw, where, **kw)

    monkeypatch.setattr(load, "_route", counting)
    return seen


@pytest.mark.parametrize("path", ROOTS, ids=lambda p: p.parent.name)
def test_every_rendered_document_reads_the_same_with_a_cache(path: Path) -> None:
    root = path.read_bytes()
    parts = {p.name: p.read_bytes() for p in path.parent.glob("twp.part-*.yaml")}
    cache = RouteCache()
    plain = load_config(root, parts)
    assert load_config(root, parts, cache=cache) == plain
    assert load_config(root, parts, cache=cache) == plain  # warm


def test_only_new_route_texts_are_read_when_orders_move(monkeypatch: pytest.MonkeyPatch) -> None:
    names = [f"r{i}" for i in range(50)]
    cache = RouteCache()
    load_config(_document(names), cache=cache)
    seen = _count_route_reads(monkeypatch)
    # a route inserted first: every other order moves, only the new item is read
    inserted = _document(["new", *names])
    got = load_config(inserted, cache=cache)
    assert seen == ["httproute/apps/new/r0m0"]
    assert got == load_config(inserted)
    seen.clear()
    # a route changed and one deleted: the changed one is read again
    changed = _document([n for n in ["new", *names] if n != "r7"], paths={"r3": "/v2"})
    got = load_config(changed, cache=cache)
    assert seen == ["httproute/apps/r3/r0m0"]
    assert got == load_config(changed)


def test_a_bad_item_gives_the_message_of_a_whole_read() -> None:
    names = [f"r{i}" for i in range(5)]
    cache = RouteCache()
    load_config(_document(names), cache=cache)
    bad = _document(names, {"r2": "  unknown: 1\n"})
    with pytest.raises(ConfigError) as whole:
        load_config(bad)
    with pytest.raises(ConfigError) as cached:
        load_config(bad, cache=cache)
    assert str(cached.value) == str(whole.value) and "routes[2]" in str(whole.value)
    broken = bad.replace(b"  unknown: 1\n", b"  match: {host: [\n")
    with pytest.raises(ConfigError) as whole:
        load_config(broken)
    with pytest.raises(ConfigError) as cached:
        load_config(broken, cache=cache)
    assert str(cached.value) == str(whole.value)


def test_a_document_in_another_layout_is_read_whole() -> None:
    doc = yaml.safe_load(_document(["a", "b"]))
    other = yaml.safe_dump(doc, sort_keys=False, indent=4).encode()  # items indented, block style
    commented = re.sub(rb"(?m)^(- id: httproute/apps/b)", rb"# b\n\1", _document(["a", "b"]))
    for data in (other, commented):
        cache = RouteCache()
        assert load_config(data, cache=cache) == load_config(data)
        assert load_config(data, cache=cache) == load_config(data)
