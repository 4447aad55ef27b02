"""The pure-render figures: render time vs the serialization floor, config size/parts, PFX cost."""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from typing import Any

import yaml

from benchmarks import workload
from benchmarks.common import Row, error_row, median, not_measured, render_function, repeat, seconds, timed

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def floor_dumper() -> tuple[str, Callable[[Any], Any]]:
    """``(description, dump(document))`` using the same dumper and settings as the render's emit.

    The render's ``emit.py`` exposes its dump function; we call it on the parsed document so
    the floor is exactly "serialize this document again, the way the render does".
    """
    try:
        from titanium_gateway.render import emit  # type: ignore[attr-defined]
    except ImportError:
        emit = None
    if emit is not None:
        for name in ("dump_yaml", "to_yaml", "dump", "yaml_dump", "_dump"):
            fn = getattr(emit, name, None)
            if callable(fn):
                return f"emit.{name}", fn
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return f"yaml.dump(Dumper={dumper.__name__})", lambda doc: yaml.dump(
        doc, Dumper=dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=4096
    )


def parse_config(result: Any) -> list[Any]:
    """The parsed documents of the rendered config: the root and each part."""
    return [yaml.load(result.config, Loader=_LOADER)] + [yaml.load(d, Loader=_LOADER) for _, d in result.parts]  # noqa: S506


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


def render_options() -> Any:
    from titanium_gateway.render.options import RenderOptions

    return RenderOptions(data_plane_service=(workload.DATA_PLANE_NAMESPACE, workload.DATA_PLANE_SERVICE))


def _nlogn(n: int) -> float:
    return n * math.log(n)


def figure_render(sizes: list[int], repeats: int, state: dict[str, Any]) -> list[Row]:
    """Full render time per N (cold: PFX cache empty; warm: median), ratio to the floor, growth."""
    try:
        render = render_function()
    except ImportError as exc:
        return [not_measured("render", f"N={n}", str(exc), "10k: < 1.0 s, < 4x floor") for n in sizes]
    options = render_options()
    how, dump = floor_dumper()
    rows: list[Row] = []
    warm: dict[int, float] = {}
    for n in sizes:
        try:
            wl = workload.build(n)
            snap = workload.snapshot(wl.objects)
            clear_pfx_cache()
            gc.collect()
            cold, result = timed(lambda: render(snap, options))  # noqa: B023
            times = repeat(lambda: render(snap, options), repeats)  # noqa: B023
            docs = parse_config(result)
            floor = median(repeat(lambda: [dump(d) for d in docs], repeats))  # noqa: B023
            t = median(times)
            warm[n] = t
            ratio = t / floor if floor else float("inf")
            goal, met = "", None
            if n == 10_000:
                goal, met = "< 1.0 s and < 4x floor", t < 1.0 and ratio < 4
            rows.append(Row(
                "render",
                f"N={n} ({len(wl.objects)} objs)",
                f"{seconds(t)} warm (cold {seconds(cold)}); floor {seconds(floor)}; {ratio:.1f}x",
                goal, met,
            ))
            state.setdefault("results", {})[n] = (wl, result)
        except Exception as exc:  # noqa: BLE001 - each row reports its own failure
            rows.append(error_row("render", exc, f"N={n}"))
    lo, hi = min(sizes), max(sizes)
    if lo in warm and hi in warm and hi > lo:
        allowed = _nlogn(hi) / _nlogn(lo)
        got = warm[hi] / warm[lo]
        rows.append(Row("render", f"growth N={lo}->{hi}", f"x{got:.1f} (n log n: x{allowed:.1f})",
                        "<= n log n", got <= allowed))
    rows.append(Row("render", "floor", f"{how} of the parsed twp.yaml (+ parts)", "", None))
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
                wl = workload.build(n)
                result = render(workload.snapshot(wl.objects), options)
            else:
                result = cached[1]
            part_sizes = [len(d) for _, d in result.parts]
            total = len(result.config) + sum(part_sizes)
            biggest = max([len(result.config), *part_sizes])
            ok = biggest <= options.part_limit_bytes and not result.delivery_error
            tls = sum(len(v) for v in result.tls_files.values())
            value = (f"{total / 1024:.0f} KiB total; root {len(result.config) / 1024:.0f} KiB + "
                     f"{len(part_sizes)} part(s) (largest {biggest / 1024:.0f} KiB); TLS Secret {tls / 1024:.0f} KiB")
            if result.delivery_error:
                value += f"; delivery_error: {result.delivery_error}"
            rows.append(Row("config size", f"N={n}", value, "each file <= 900 KiB", ok))
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
        with ConversionCounter() as cc:
            t, _ = timed(lambda: [convert_tls_secret(s) for s in fresh])
        per = t / len(fresh)
        rows.append(Row("pfx", "conversion per certificate", f"{per * 1000:.2f} ms ({cc.calls} conversions of {len(fresh)})", "", None))
        t2, _ = timed(lambda: [convert_tls_secret(s) for s in fresh])
        rows.append(Row("pfx", "cache hit per certificate", f"{t2 / len(fresh) * 1e6:.0f} us", "", None))
    except Exception as exc:  # noqa: BLE001
        rows.append(error_row("pfx", exc, "conversion per certificate"))
    try:
        options = render_options()
        wl = workload.build(n)
        snap = workload.snapshot(wl.objects)
        clear_pfx_cache()
        with ConversionCounter() as first:
            render(snap, options)
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
            f"1st render {first.calls} conversions ({first.seconds * 1000:.0f} ms); unchanged re-render "
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
