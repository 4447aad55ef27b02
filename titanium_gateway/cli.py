"""The ``titanium-gateway`` command: ``controller`` (run the controller), the offline tools
``render``, ``explain`` and ``migrate-ingress`` (see docs/render-cli.md), and ``--version``."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

USAGE = """usage: titanium-gateway {controller,render,explain,migrate-ingress} [options]
       titanium-gateway --version
  controller       run the controller (see controller --help)
  render           render manifests offline into twp.yaml, statuses and events (see render --help)
  explain          render manifests offline and tell which route answers a request, and why (see explain --help)
  migrate-ingress  report and convert Ingresses written for ingress-nginx (see migrate-ingress --help)"""


def _render(argv: list[str]) -> int:
    from titanium_gateway.offline.render_cmd import main

    return main(argv)


def _explain(argv: list[str]) -> int:
    from titanium_gateway.offline.explain import main

    return main(argv)


def _migrate(argv: list[str]) -> int:
    from titanium_gateway.offline.migrate import main

    return main(argv)


def _controller(argv: list[str]) -> int:
    from titanium_gateway.controller.main import main

    return main(argv)


#: sub-command -> entry point (each imports its module only when chosen).
COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "controller": _controller,
    "render": _render,
    "explain": _explain,
    "migrate-ingress": _migrate,
}
#: Commands that hold nothing to clean up once they have written their output: the process
#: ends without tearing down its objects (a second or more after reading 10k routes).
OFFLINE = frozenset({"render", "explain", "migrate-ingress"})


def version() -> str:
    """The installed distribution's version, else (a source tree not installed) the package's
    ``__version__``."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as distribution_version

    try:
        return distribution_version("titanium-gateway")
    except PackageNotFoundError:
        from titanium_gateway import __version__

        return __version__


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    if args[0] == "--version":
        print(f"titanium-gateway {version()}")
        return 0
    cmd, rest = args[0], args[1:]
    entry = COMMANDS.get(cmd)
    if entry is None:
        print(f"titanium-gateway: unknown command {cmd!r}; expected one of {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    return entry(rest)


def run() -> None:
    """The ``titanium-gateway`` executable (and ``python -m titanium_gateway``)."""
    args = sys.argv[1:]
    offline = bool(args) and args[0] in OFFLINE
    if offline:
        import gc

        gc.disable()  # (see offline.render_cmd.main: no cycles to collect; from the first import on)
    code = main(args)
    if offline:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise SystemExit(code)
