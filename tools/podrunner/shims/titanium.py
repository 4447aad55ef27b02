"""The data-plane image's ``titanium`` executable for the local cluster: the reference data plane.

The chart runs ``titanium run --config /etc/titanium/twp.yaml --watch [extraArgs...]``; the pod
runner has already translated the path to the pod's projected volume directory. This starts
``python -m titanium_gateway.reference_dataplane --config-dir <that directory>`` in its place
(the reference data plane implements the data-plane contract; it always follows the directory,
so ``--watch`` needs no counterpart), bound to ``$PODRUNNER_BIND_ADDRESS`` when the pod shares
the node's network stack. The admin token comes from ``TITANIUM_ADMIN_TOKEN`` as usual.
"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="titanium")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--config", required=True)
    run.add_argument("--watch", action="store_true")
    args, extra = p.parse_known_args(argv)
    if os.path.basename(args.config) != "twp.yaml":
        print(f"titanium (local image): the reference data plane reads <dir>/twp.yaml, not {args.config}",
              file=sys.stderr)
        return 2
    cmd = [sys.executable, "-m", "titanium_gateway.reference_dataplane",
           "--config-dir", os.path.dirname(os.path.abspath(args.config))]
    if os.environ.get("PODRUNNER_BIND_ADDRESS"):
        cmd += ["--bind-address", os.environ["PODRUNNER_BIND_ADDRESS"]]
    cmd += extra
    sys.stdout.flush()
    os.execv(sys.executable, cmd)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
