"""A prototype block-YAML writer for twp.yaml list items, byte-identical to ``emit.dump([item])``.

PyYAML spends most of a dump in its pure-Python representer/serializer (even with the C
emitter). The twp items are plain dicts/lists of str/int/bool, so they can be written directly
as text. Any scalar that is not trivially plain is delegated to PyYAML (cached), so quoting
rules stay PyYAML's. Any other shape (nested lists, floats, multi-line strings) makes the whole
item fall back to PyYAML. ``python3 -m benchmarks.prototypes.fast_emit N`` checks the bytes
against the real render and prints both timings.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_PLAIN = re.compile(r"(?:[A-Za-z_/][A-Za-z0-9_./-]*|[0-9]{1,3}(?:\.[0-9]{1,3}){3})\Z")
_RESERVED = frozenset(
    w for base in ("yes", "no", "true", "false", "on", "off", "null", "y", "n") for w in (base, base.title(), base.upper())
)
_scalars: dict[str, str] = {}


class _Fallback(Exception):
    pass


def _yaml_scalar(s: str) -> str:
    out = _scalars.get(s)
    if out is None:
        if "\n" in s or "\r" in s or len(s) > 1000:
            raise _Fallback
        text = yaml.dump([s], Dumper=_Dumper, default_flow_style=False, allow_unicode=True, width=1 << 20)
        if not text.startswith("- ") or text.count("\n") != 1:
            raise _Fallback
        out = _scalars[s] = text[2:-1]
    return out


def _scalar(v: Any) -> str:
    if isinstance(v, str):
        if _PLAIN.match(v) and v not in _RESERVED:
            return v
        return _yaml_scalar(v)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        return str(v)
    raise _Fallback


def _mapping(d: dict, indent: str, out: list[str], first_prefix: str) -> None:
    """Writes mapping ``d``; the first key goes after ``first_prefix`` (e.g. "- ")."""
    prefix = first_prefix
    for k, v in d.items():
        key = _scalar(k)
        if isinstance(v, dict):
            if not v:
                out.append(f"{prefix}{key}: {{}}\n")
            else:
                out.append(f"{prefix}{key}:\n")
                _mapping(v, indent + "  ", out, indent + "  ")
        elif isinstance(v, list):
            if not v:
                out.append(f"{prefix}{key}: []\n")
            else:
                out.append(f"{prefix}{key}:\n")
                _sequence(v, indent, out)
        else:
            out.append(f"{prefix}{key}: {_scalar(v)}\n")
        prefix = indent


def _sequence(items: list, indent: str, out: list[str]) -> None:
    for item in items:
        if isinstance(item, dict):
            if not item:
                out.append(f"{indent}- {{}}\n")
            else:
                _mapping(item, indent + "  ", out, indent + "- ")
        elif isinstance(item, list):
            raise _Fallback
        else:
            out.append(f"{indent}- {_scalar(item)}\n")


def dump_item(item: Any) -> str:
    """The same text as ``yaml.dump([item], Dumper=CSafeDumper, sort_keys=False, ...)``."""
    out: list[str] = []
    try:
        _sequence([item], "", out)
    except _Fallback:
        return yaml.dump([item], Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                         allow_unicode=True, width=1 << 20)
    return "".join(out)


def _main() -> int:
    import sys
    import time
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from benchmarks import bench_render, workload
    from titanium_gateway.render import emit, render

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    result = render(workload.snapshot(workload.build(n).objects), bench_render.render_options())
    docs = bench_render.parse_config(result)
    items = [x for d in docs for k in ("routes", "clusters") for x in (d.get(k) or [])]
    t0 = time.perf_counter()
    slow = [emit.dump([x]) for x in items]
    t1 = time.perf_counter()
    fast = [dump_item(x) for x in items]
    t2 = time.perf_counter()
    same = slow == fast
    print(f"{len(items)} items, {sum(map(len, slow)) / 1e6:.1f} MB: emit.dump per item {t1 - t0:.2f} s, "
          f"prototype {t2 - t1:.2f} s ({(t1 - t0) / (t2 - t1):.1f}x), byte-identical: {same}")
    if not same:
        bad = next(i for i, (a, b) in enumerate(zip(slow, fast, strict=True)) if a != b)
        print("first difference:\n", slow[bad], "\n---\n", fast[bad])
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(_main())
