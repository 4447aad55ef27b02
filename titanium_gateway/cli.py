"""The ``titanium-gateway`` command: ``controller`` (run the controller) and ``render`` (offline)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: titanium-gateway {controller,render} [options]\n"
              "  controller  run the controller (see --help)\n"
              "  render      render manifests offline into twp.yaml (see render --help)")
        return 0 if args else 2
    cmd, rest = args[0], args[1:]
    if cmd == "render":
        from titanium_gateway.offline import main as render_main

        return render_main(rest)
    if cmd == "controller":
        from titanium_gateway.controller.main import main as controller_main

        return controller_main(rest)
    print(f"titanium-gateway: unknown command {cmd!r}; expected controller or render", file=sys.stderr)
    return 2
