"""The pure-render figures: render time vs the serialization floor, config size/parts, PFX cost."""

from __future__ import annotations

import gc
import math
import os
import time
from collections.abc import Callable
from typing import Any

import yaml

from benchmarks import workload
from benchmarks.common import Row, error_row, not_measured, render_function, repeat, seconds, timed

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def floor_dumper() -> tuple[str, Callable[[Any], Any]]:
    """``(description, serialize(document))`` with the render's own writer and settings.

    The floor is "serialize this very document again, the way the render does": routes and
    clusters item by item through ``emit._fragment`` (the render's item writer, PyYAML
    fallback), everything else through ``emit.dump`` (PyYAML ``CSafeDumper``). Without those
    (an older emit), the whole document goes through ``emit.dump`` / ``yaml.dump``.
    """
    try:
        from titanium_gateway.twp import emit
    except ImportError:
        emit = None  # type: ignore[assignment]
    dump = getattr(emit, "dump", None)
    if not callable(dump):
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

        def dump(doc: Any) -> str:
            return yaml.dump(doc, Dumper=dumper, sort_keys=False, default_flow_style=False,
                             allow_unicode=True, width=1 << 20)

        return f"yaml.dump(Dumper={dumper.__name__})", dump
    fragment = getattr(emit, "_fragment", None)
    if not callable(fragment):
        return "emit.dump (whole document)", dump

    def serialize(doc: Any) -> str:
        head = {k: v for k, v in doc.items() if k not in ("routes", "clusters")}
        out = [dump(head)] if head else []
        for key in ("routes", "clusters"):
            if key in doc:
                items = doc[key] or []
                out.append(f"{key}:\n" + "".join(fragment(x) for x in items) if items else f"{key}: []\n")
        return "".join(out)

    return "emit._fragment per route/cluster + emit.dump for the rest", serialize


def pyyaml_dump(doc: Any) -> str:
    """The reference point: the whole document through PyYAML's CSafeDumper."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(doc, Dumper=dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 20)


def parse_config(result: Any) -> list[Any]:
    """The parsed documents of the rendered config: the root and each part, of every data plane."""
    return [doc for p in result.data_planes()
            for doc in [yaml.load(p.config, Loader=_LOADER)] + [yaml.load(d, Loader=_LOADER) for _, d in p.parts]]  # noqa: S506


def _cert_module() -> Any:
    from titanium_gateway.render import certificates

    return certificates


def clear_pfx_cache() -> None:
    cache = getattr(_cert_module(), "_cache", None)
    if hasattr(cache, "clear"):
        cache.clear()


class ConversionCounter:
    """Counts real PKCS#12 conversions (cache misses) by wrapping ``certificates._convert``."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0
        self._mod = _cert_module()
        self._orig = getattr(self._mod, "_convert", None)

    def __enter__(self) -> ConversionCounter:
        orig = self._orig
        if orig is None:
            raise RuntimeError("certificates._convert not found: cannot count conversions")

        def counting(*a: Any, **kw: Any) -> Any:
            self.calls += 1
            t0 = time.perf_counter()
            try:
                return orig(*a, **kw)
            finally:
                self.seconds += time.perf_counter() - t0

        self._mod._convert = counting
        return self

    def __exit__(self, *exc: Any) -> None:
        self._mod._convert = self._orig


#: The data-plane mode of the figures (run.py --data-plane-mode; children inherit it)
MODE_ENV = "TITANIUM_BENCH_DATA_PLANE_MODE"


def data_plane_mode() -> str:
    """``shared`` (one data plane) or ``per-gateway`` (a data plane for each of the 20 Gateways)."""
    return os.environ.get(MODE_ENV, "") or "shared"


def render_options() -> Any:
    from titanium_gateway.render.options import RenderOptions

    return RenderOptions(data_plane_service=(workload.DATA_PLANE_NAMESPACE, workload.DATA_PLANE_SERVICE),
                         data_plane_mode=data_plane_mode())


def _nlogn(n: int) -> float:
    return n * math.log(n)


def _one_size(render: Callable[..., Any], options: Any, dump: Callable[[Any], Any], n: int, repeats: int,
              ingresses: bool) -> tuple[float, float, float, float, Any, Any]:
    """``(cold, warm best-of, floor, PyYAML whole-document dump, workload, result)``: the render
    of the objects as the controller's informer caches hold them (:func:`workload.informer_objects`)."""
    wl = workload.build(n, ingresses=ingresses)
    snap = workload.snapshot(workload.informer_objects(wl.objects, options.data_plane_service)[0])
    clear_pfx_cache()
    gc.collect()
    cold, result = timed(lambda: render(snap, options))
    warm = min(repeat(lambda: render(snap, options), repeats))
    docs = parse_config(result)
    floor_repeats = 1 if n >= 10_000 else repeats
    floor = min(repeat(lambda: [dump(d) for d in docs], floor_repeats))
    # PyYAML's own dumper as a reference (slow: only up to 5k)
    pyyaml = min(repeat(lambda: [pyyaml_dump(d) for d in docs], 1)) if n <= 5000 else float("nan")
    return cold, warm, floor, pyyaml, wl, result


def converged_objects(objects: list[Any], options: Any, render: Callable[..., Any]) -> list[Any]:
    """The objects with the statuses the controller writes (a new resourceVersion each), as the
    informers hold them once the controller has converged."""
    import copy

    result = render(workload.snapshot(objects, now="2026-01-01T00:00:00Z"), options)
    wanted = {(st.kind, st.namespace, st.name): st.status for st in result.statuses}
    out = []
    for o in objects:
        meta = o["metadata"]
        status = wanted.get((o["kind"], meta.get("namespace", ""), meta["name"]))
        if status is not None:
            o = {**o, "status": copy.deepcopy(dict(status)),
                 "metadata": {**meta, "resourceVersion": meta["resourceVersion"] + "0"}}
        out.append(o)
    return out


def _changed(objects: list[Any], kind: str, index: int, edit: Callable[[Any], None]) -> list[Any]:
    import copy

    target = [o for o in objects if o["kind"] == kind][index]
    new = copy.deepcopy(target)
    edit(new)
    new["metadata"]["resourceVersion"] += "1"
    return [new if o is target else o for o in objects]


def figure_incremental(n: int, repeats: int, ingresses: bool = True) -> list[Row]:
    """The controller's render: with its RenderCache (render/memo.py), after one change, on a
    converged cluster (statuses written). Same bytes as a full render (tests/render/test_memo.py)."""
    label = f"N={n} routes + {n} ingresses" if ingresses else f"N={n} routes only"
    try:
        from titanium_gateway.render import RenderCache, render
    except ImportError as exc:
        return [not_measured("render", f"{label}, re-render after one change", str(exc))]
    rows: list[Row] = []
    try:
        options = render_options()
        objects = converged_objects(workload.build(n, ingresses=ingresses).objects, options, render)
        cache = RenderCache()
        first, _ = timed(lambda: render(workload.snapshot(objects, now="2026-01-01T00:01:00Z"), options, cache))
        times: dict[str, list[float]] = {"EndpointSlice": [], "HTTPRoute": [], "Ingress": []}
        for i in range(max(2, repeats)):
            def slice_edit(o: Any, i: int = i) -> None:
                o["endpoints"][0]["addresses"] = [f"172.16.{i // 250}.{i % 250 + 1}"]

            def route_edit(o: Any, i: int = i) -> None:
                o["spec"]["rules"][0]["matches"][0]["path"]["value"] = f"/changed-{i}"

            def ingress_edit(o: Any, i: int = i) -> None:
                o["spec"]["rules"][0]["http"]["paths"][0]["path"] = f"/changed-{i}"

            edits = [("EndpointSlice", slice_edit), ("HTTPRoute", route_edit)]
            if ingresses:
                edits.append(("Ingress", ingress_edit))
            for kind, edit in edits:
                objects = _changed(objects, kind, (i * 37) % 50, edit)
                snap = workload.snapshot(objects, now="2026-01-01T00:01:00Z")
                t, _ = timed(lambda snap=snap: render(snap, options, cache))
                times[kind].append(t)
        parts = [f"first {seconds(first)} (empty cache)"]
        for kind, ts in times.items():
            if ts:
                parts.append(f"1 {kind} changed {seconds(min(ts))}")
        best = max(min(ts) for ts in times.values() if ts)  # the slowest kind of change
        goal, met = ("", None)
        if n == 10_000:
            goal, met = "< 1.0 s (the controller's render per change)", best < 1.0
        rows.append(Row("render", f"{label}, controller re-render (RenderCache)", "; ".join(parts), goal, met))
    except Exception as exc:  # noqa: BLE001
        rows.append(error_row("render", exc, f"{label}, re-render"))
    return rows


def figure_render(sizes: list[int], repeats: int, state: dict[str, Any], routes_only_at: int | None = 10_000) -> list[Row]:
    """Full render time per N (cold: PFX cache empty; warm: best of ``repeats``), ratio to the
    floor (the same output document dumped again by the render's dumper), growth.

    The workload of each N is N HTTPRoutes plus N Ingresses; one extra row renders the
    HTTPRoutes alone at ``routes_only_at``.
    """
    try:
        render = render_function()
    except ImportError as exc:
        return [not_measured("render", f"N={n}", str(exc), "10k: < 1.0 s, < 4x floor") for n in sizes]
    options = render_options()
    how, dump = floor_dumper()
    rows: list[Row] = []
    warm: dict[int, float] = {}
    cases = [(n, True) for n in sizes]
    if routes_only_at in sizes:
        cases.append((routes_only_at, False))
    for n, ingresses in cases:
        label = f"N={n} routes + {n} ingresses" if ingresses else f"N={n} routes only"
        try:
            cold, t, floor, pyyaml, wl, result = _one_size(render, options, dump, n, repeats, ingresses)
            if ingresses:
                warm[n] = t
                state.setdefault("results", {})[n] = (len(wl.objects), result)
            ratio = t / floor if floor else float("inf")
            goal, met = "", None
            if n == 10_000:
                goal, met = "< 1.0 s and < 4x floor", t < 1.0 and ratio < 4
            items = sum(p.config.count(b"\n- id: ") + sum(d.count(b"\n- id: ") for _, d in p.parts)
                        for p in result.data_planes())
            rows.append(Row(
                "render", f"{label} ({len(wl.objects)} objs, {items} twp items)",
                f"{seconds(t)} (cold {seconds(cold)}); floor {seconds(floor)} -> {ratio:.1f}x"
                + (f"; PyYAML dump {seconds(pyyaml)}" if pyyaml == pyyaml else ""),
                goal, met,
            ))
            del wl, result
        except Exception as exc:  # noqa: BLE001 - each row reports its own failure
            rows.append(error_row("render", exc, label))
    if routes_only_at in sizes:
        rows += figure_incremental(routes_only_at, repeats, ingresses=True)
        rows += figure_incremental(routes_only_at, repeats, ingresses=False)
    lo, hi = min(sizes), max(sizes)
    if lo in warm and hi in warm and hi > lo:
        allowed = _nlogn(hi) / _nlogn(lo)
        got = warm[hi] / warm[lo]
        rows.append(Row("render", f"growth N={lo}->{hi}", f"x{got:.1f} (n log n allows x{allowed:.1f})",
                        "<= n log n", got <= allowed))
    rows.append(Row("render", "floor", f"{how}, of the parsed twp.yaml + parts", "", None))
    rows.append(Row("render", "input", workload.informer_objects([], options.data_plane_service)[1], "", None))
    rows.append(Row("render", "data planes", f"{data_plane_mode()}: one render, one document per data plane "
                    f"({'the shared one and one per Gateway' if data_plane_mode() == 'per-gateway' else 'one'})",
                    "", None))
    return rows


def figure_size(sizes: list[int], state: dict[str, Any]) -> list[Row]:
    """Config bytes per N and number of parts (root + parts of <= 900 KiB)."""
    try:
        render = render_function()
    except ImportError as exc:
        return [not_measured("config size", f"N={n}", str(exc)) for n in sizes]
    rows: list[Row] = []
    options = render_options()
    for n in sizes:
        try:
            cached = state.get("results", {}).get(n)
            if cached is None:
                result = render(workload.snapshot(workload.build(n).objects), options)
            else:
                result = cached[1]
            part_sizes = [len(d) for _, d in result.parts]
            total = len(result.config) + sum(part_sizes)
            biggest = max([len(result.config), *part_sizes])
            ok = biggest <= options.part_limit_bytes and len(result.parts) <= options.max_parts
            tls = sum(len(v) for v in result.tls_files.values())
            value = (f"{total / 1024:.0f} KiB total; root {len(result.config) / 1024:.0f} KiB + "
                     f"{len(part_sizes)} part(s) (largest {biggest / 1024:.0f} KiB); TLS Secret {tls / 1024:.0f} KiB")
            own = result.gateway_planes()
            if own:  # a data plane per Gateway: the shared one's above (the Ingresses), theirs here
                sizes_of = [len(p.config) + sum(len(d) for _, d in p.parts) for p in own]
                value += (f"; {len(own)} Gateways' own: {sum(sizes_of) / 1024:.0f} KiB in all, the largest "
                          f"{max(sizes_of) / 1024:.0f} KiB in {max(len(p.parts) for p in own)} part(s)")
                ok = ok and all(max([len(p.config), *(len(d) for _, d in p.parts)]) <= options.part_limit_bytes
                                and len(p.parts) <= options.max_parts for p in own)
            if len(result.parts) > options.max_parts:
                value += f"; NOT deliverable with --config-parts={options.max_parts} (default)"
            rows.append(Row("config size", f"N={n} routes + {n} ingresses", value,
                            f"files <= 900 KiB, parts <= {options.max_parts}", ok))
        except Exception as exc:  # noqa: BLE001
            rows.append(error_row("config size", exc, f"N={n}"))
    return rows


def figure_pfx(n: int) -> list[Row]:
    """PFX conversion cost per certificate, and no re-conversion of unchanged certificates."""
    try:
        render = render_function()
        from titanium_gateway.render.certificates import convert_tls_secret
    except ImportError as exc:
        return [not_measured("pfx", "-", str(exc))]
    rows: list[Row] = []
    try:
        # Fresh certificates (never seen by the cache): the cost of one real conversion.
        fresh = [workload.tls_secret("pfx", f"fresh-{i}", (f"fresh{i}.example.com",), 900_000 + i + int(time.time()) % 1000 * 100)
                 for i in range(20)]
        with ConversionCounter() as cc:  # (.pfx: the PFX is made when first read)
            t, _ = timed(lambda: [convert_tls_secret(s).pfx for s in fresh])
        per = t / len(fresh)
        rows.append(Row("pfx", "conversion per certificate", f"{per * 1000:.2f} ms ({cc.calls} conversions of {len(fresh)})", "", None))
        t2, _ = timed(lambda: [convert_tls_secret(s).pfx for s in fresh])
        rows.append(Row("pfx", "cache hit per certificate", f"{t2 / len(fresh) * 1e6:.0f} us", "", None))
    except Exception as exc:  # noqa: BLE001
        rows.append(error_row("pfx", exc, "conversion per certificate"))
    try:
        options = render_options()
        wl = workload.build(n)
        snap = workload.snapshot(wl.objects)
        clear_pfx_cache()
        with ConversionCounter() as first:
            first_result = render(snap, options)
        made, _ = timed(lambda: list(first_result.tls_files.values()))  # what the Secret writer reads
        with ConversionCounter() as second:
            render(snap, options)
        # One Secret changes: exactly one conversion expected.
        secrets = [o for o in wl.objects if o["kind"] == "Secret"]
        old = secrets[0]
        new = workload.tls_secret(old["metadata"]["namespace"], old["metadata"]["name"],
                                  workload.cert_hosts(0, 0), 777_777, key_index=1)
        objs = [new if o is old else o for o in wl.objects]
        with ConversionCounter() as third:
            render(workload.snapshot(objs), options)
        rows.append(Row(
            "pfx", f"re-render N={n}, {len(secrets)} certs",
            f"1st render {first.calls} conversions ({first.seconds * 1000:.0f} ms, and {made * 1000:.0f} ms to make "
            f"the PFX files when the TLS Secret is written); unchanged re-render "
            f"{second.calls}; 1 Secret changed {third.calls}",
            "0 unchanged, 1 changed", second.calls == 0 and third.calls == 1,
        ))
    except Exception as exc:  # noqa: BLE001
        rows.append(error_row("pfx", exc, "re-render"))
    return rows


def profile_render(n: int, out_html: str | None = None) -> str:
    """A pyinstrument text profile of one warm render of size ``n``."""
    from pyinstrument import Profiler

    render = render_function()
    options = render_options()
    snap = workload.snapshot(workload.build(n).objects)
    render(snap, options)
    prof = Profiler(interval=0.0005)
    prof.start()
    render(snap, options)
    prof.stop()
    if out_html:
        with open(out_html, "w", encoding="utf-8") as f:
            f.write(prof.output_html())
    return prof.output_text(unicode=False, color=False, show_all=False)
