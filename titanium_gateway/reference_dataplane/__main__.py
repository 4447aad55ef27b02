"""``python3 -m titanium_gateway.reference_dataplane --config-dir DIR [--admin-port 9901]
[--bind-address ADDR] [--access-log]``; the admin token comes from ``TITANIUM_ADMIN_TOKEN``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from titanium_gateway.reference_dataplane.server import TOKEN_ENV, DataPlane


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m titanium_gateway.reference_dataplane",
        description="Reference data plane: serves twp.yaml from a config directory as the data-plane "
                    f"contract says (a test and development tool). Admin bearer token: ${TOKEN_ENV}.")
    p.add_argument("--config-dir", required=True, help="directory holding twp.yaml, its parts and the PFX files")
    p.add_argument("--admin-port", type=int, default=9901, help="port of /readyz, /version, /metrics (9901)")
    p.add_argument("--bind-address", default=None,
                   help="address that replaces the listeners' 0.0.0.0 (and the admin port's); default: the config's")
    p.add_argument("--admin-address", default=None, help="address of the admin port (default: --bind-address, "
                   "else 0.0.0.0)")
    p.add_argument("--access-log", action="store_true", help="one line per request on stdout")
    p.add_argument("--poll-interval", type=float, default=0.05, help="seconds between config directory checks")
    p.add_argument("--verbose", action="store_true", help="debug logging")
    return p


async def _main(args: argparse.Namespace) -> int:
    dp = DataPlane(args.config_dir, admin_port=args.admin_port, bind_address=args.bind_address,
                   admin_address=args.admin_address,
                   access_log=args.access_log, poll_interval=args.poll_interval)
    loop = asyncio.get_running_loop()

    def stop() -> None:
        if dp.stopped is not None:
            dp.stopped.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    return await dp.serve()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    try:
        return asyncio.run(_main(args))
    except OSError as exc:  # the admin port cannot be bound
        logging.getLogger("titanium.reference_dataplane").error("%s", exc)
        return 1


if __name__ == "__main__":
    sys.exit(main())
