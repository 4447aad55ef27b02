"""``titanium-gateway render``: the offline render, fed from manifest files instead of informers.

The interface is specified in ``docs/render-cli.md``: read the files (:mod:`.load`), build the
snapshot the controller's informers would hold (:mod:`.snapshot`), render with the options of
the command line (:mod:`.args`), then print twp.yaml on stdout or write every file into
``--out`` (:mod:`.outputs`), and the summary on stderr (:mod:`.summary`). Exit 0 rendered, 2
bad input or usage, 1 internal error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from titanium_gateway.offline.args import CommandLineParser, add_render_arguments, options_from_args
from titanium_gateway.offline.load import LoadReport, load_manifests
from titanium_gateway.offline.manifests import InputError
from titanium_gateway.offline.outputs import write_outputs
from titanium_gateway.offline.snapshot import prepare
from titanium_gateway.offline.summary import plane_file, summary
from titanium_gateway.render import gc_paused
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import Plane, RenderResult
from titanium_gateway.render.snapshot import Snapshot

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = CommandLineParser(
        prog="titanium-gateway render",
        description="Render Gateway API / Ingress manifests offline into the data plane's twp.yaml, "
        "with the statuses, events and certificates the controller would write.",
    )
    p.add_argument("-f", "--filename", dest="paths", action="append", required=True, metavar="PATH",
                   help="a YAML/JSON file (multi-document, Lists unwrapped), a directory of them, or - for stdin; repeatable")
    p.add_argument("--out", metavar="DIR", type=Path,
                   help="write twp.yaml (+ parts), status.yaml, events.yaml, certificates.yaml into DIR")
    add_render_arguments(p)
    return p


def _render_function() -> Callable[[Snapshot, RenderOptions], RenderResult]:
    """The pure render, or an ImportError with a clear message while it is not available."""
    from titanium_gateway import render as render_pkg

    fn = getattr(render_pkg, "render", None)
    if not callable(fn):
        raise ImportError("titanium_gateway.render has no render() function yet")
    return fn  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse(argv)
    if isinstance(args, int):
        return args
    options = options_from_args(args)
    report = LoadReport()
    with gc_paused():  # a short-lived process that builds no reference cycles
        return _run(args, options, report)


def _run(args: argparse.Namespace, options: RenderOptions, report: LoadReport) -> int:
    try:
        manifests = load_manifests(args.paths, report)
    except InputError as exc:
        print(f"titanium-gateway render: error: {exc}", file=sys.stderr)
        return 2
    try:
        render = _render_function()
    except ImportError as exc:
        print(f"titanium-gateway render: the render core is not available in this build: {exc}", file=sys.stderr)
        return 1
    prepared = prepare([m.obj for m in manifests], secret_namespaces=args.secret_namespaces, defaulted=True)
    del manifests
    result = render(prepared.snapshot, options)
    if args.out is not None:
        try:
            names = write_outputs(result, args.out, prepared.snapshot, options.controller_name)
        except OSError as exc:
            print(f"titanium-gateway render: error: cannot write {args.out}: {exc}", file=sys.stderr)
            return 2
        sys.stderr.write(summary(result, report, prepared, options))
        parts = [n for n in names if n.rpartition("/")[2].startswith("twp.part-")]
        listed = [n for n in names if n not in parts]
        for i, name in enumerate(listed):
            mine = [p for p in parts if p.rpartition("/")[0] == name.rpartition("/")[0]]
            if name.endswith("twp.yaml") and mine:
                listed[i] += f" (+ {len(mine)} part(s) twp.part-1.yaml ... twp.part-{len(mine)}.yaml)"
        print(f"wrote {args.out}/: {', '.join(listed)}", file=sys.stderr)
    else:
        shown = _shown_planes(result)
        for n, plane in enumerate(shown):
            if len(shown) > 1:  # one YAML stream, a document per data plane
                whose = f"the data plane of Gateway {plane.gateway.namespace}/{plane.gateway.name}" \
                    if plane.gateway is not None else "the shared data plane (Ingresses)"
                sys.stdout.buffer.write(f"{'---' + chr(10) if n else ''}# {plane_file(plane)}: {whose}\n".encode())
            sys.stdout.buffer.write(plane.config)
        sys.stdout.flush()
        sys.stderr.write(summary(result, report, prepared, options))
        for plane in shown:
            if plane.parts:
                print(f"{plane_file(plane)} is split into {len(plane.parts)} part(s); only its root is shown: "
                      "use --out DIR to get them", file=sys.stderr)
    return 0


def _shown_planes(result: RenderResult) -> list[Plane]:
    """The data planes whose twp.yaml goes to stdout: every Gateway's own, and the shared one
    when it serves something or there is no other."""
    planes = result.data_planes()
    shown = [p for p in planes if p.gateway is not None or (p.document is not None and (
        p.document.listeners or p.document.routes))]
    return shown or [planes[0]]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
