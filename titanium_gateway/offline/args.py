"""The offline commands' command lines: a parser that reports usage errors with exit code 2
instead of exiting (:class:`CommandLineParser`), and the controller options that change what
the render produces (:func:`add_render_arguments`, :func:`options_from_args`), named and
defaulted as the chart sets the controller's flags."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from titanium_gateway.render.options import (
    DEFAULT_CONTROLLER_NAME,
    DEFAULT_DATA_PLANE_PORTS,
    DEFAULT_INGRESS_CONTROLLER_NAME,
    DEFAULT_MAX_PARTS,
    DEFAULT_PORT_MAP,
    RenderOptions,
    parse_networks,
    parse_port_map,
    parse_ports,
)
from titanium_gateway.render.planes import MODES, PER_GATEWAY

__all__ = [
    "CHART_DATA_PLANE_SERVICE", "CHART_NAMESPACE", "CommandLineParser", "UsageError", "add_render_arguments",
    "options_from_args",
]

#: Where ``helm install titanium-gateway ./charts/titanium-gateway -n gateway-system`` puts the
#: data plane: the controller's ``--data-plane-namespace`` and ``--data-plane-service``.
CHART_NAMESPACE = "gateway-system"
CHART_DATA_PLANE_SERVICE = "titanium-gateway-data-plane"


class UsageError(Exception):
    """A bad command line of an offline command: exit code 2."""


class CommandLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that raises :class:`UsageError` instead of exiting; :meth:`parse`
    turns that into the usage and the error on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def parse(self, argv: Sequence[str] | None) -> argparse.Namespace | int:
        """The parsed arguments (of ``sys.argv[1:]`` when ``argv`` is None), or the exit code once
        it is told: 2 for a bad command line, 0 after ``--help``."""
        try:
            return self.parse_args(argv)
        except UsageError as exc:
            return self.usage_error(str(exc))
        except SystemExit as exc:  # --help
            return int(exc.code or 0)

    def usage_error(self, message: str) -> int:
        """Prints the usage and ``PROG: error: message`` on stderr; returns 2."""
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        return 2


def _port_map_arg(text: str) -> dict[int, int]:
    try:
        return parse_port_map(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc) or f"invalid port map {text!r}") from None


def _ports_arg(text: str) -> tuple[int, ...]:
    try:
        ports = parse_ports(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc) or f"invalid port list {text!r}") from None
    if not ports:
        raise argparse.ArgumentTypeError("the port list is empty")
    return ports


def _service_arg(text: str) -> str:
    if text.count("/") > 1 or text.startswith("/") or text.endswith("/") or not text.strip():
        raise argparse.ArgumentTypeError(f"expected NAMESPACE/NAME or NAME, got {text!r}")
    return text


def _nonempty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _parts_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"{value} is outside 0-1000")
    return value


def _networks_arg(text: str) -> tuple[str, ...]:
    try:
        return parse_networks(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _namespaces_arg(text: str) -> tuple[str, ...]:
    return tuple(sorted({x.strip() for x in text.split(",") if x.strip()}))


def add_render_arguments(p: argparse.ArgumentParser) -> None:
    """The controller options that change what the render produces, named and defaulted as the
    controller's flags are set by the chart (``charts/titanium-gateway``, default values,
    ``helm install titanium-gateway ... -n gateway-system``), plus ``--assume-programmed``."""
    p.add_argument("--assume-programmed", action="store_true",
                   help="report Programmed as it will be once every data-plane pod confirmed the config")
    p.add_argument("--controller-name", default=DEFAULT_CONTROLLER_NAME, type=_nonempty,
                   help="GatewayClass.spec.controllerName to own (default %(default)s)")
    p.add_argument("--ingress-controller-name", default=DEFAULT_INGRESS_CONTROLLER_NAME, type=_nonempty,
                   help="IngressClass.spec.controller to own (default %(default)s)")
    p.add_argument("--watch-legacy-annotation", action="store_true",
                   help="also own Ingresses with the kubernetes.io/ingress.class annotation")
    p.add_argument("--port-map", type=_port_map_arg, default=dict(DEFAULT_PORT_MAP),
                   help="Gateway port to data-plane port (default 80=8080,443=8443)")
    p.add_argument("--data-plane-ports", type=_ports_arg, default=DEFAULT_DATA_PLANE_PORTS,
                   help="ports the data plane can bind, the chart's dataPlane.ports (default 8080,8443)")
    p.add_argument("--data-plane-namespace", default=CHART_NAMESPACE, type=_nonempty,
                   help="namespace of the data plane: the release namespace (default %(default)s)")
    p.add_argument("--data-plane-service", type=_service_arg, default=CHART_DATA_PLANE_SERVICE,
                   help="the data-plane Service, NAME (in --data-plane-namespace) or NAMESPACE/NAME: the "
                   "source of Gateway and Ingress addresses (default %(default)s, the chart's)")
    p.add_argument("--config-parts", type=_parts_arg, default=DEFAULT_MAX_PARTS,
                   help="number of part ConfigMaps the data-plane pods mount, the chart's "
                   "dataPlane.configParts (default %(default)s)")
    p.add_argument("--secret-namespaces", type=_namespaces_arg, default=(), metavar="NS,NS",
                   help="only Secrets of these namespaces are read, the chart's controller.secretNamespaces "
                   "(default: all)")
    p.add_argument("--data-plane-mode", choices=MODES, default=PER_GATEWAY,
                   help="per-gateway: each Gateway has a data plane of its own (its twp.yaml in "
                   "gateways/NAMESPACE/NAME/ with --out), Ingresses stay on the shared one; shared: one data "
                   "plane for every Gateway and Ingress (the chart's dataPlane.mode; default %(default)s)")
    p.add_argument("--gateway-namespaces", type=_namespaces_arg, default=(), metavar="NS,NS",
                   help="per-gateway: the namespaces the controller creates data planes in, the chart's "
                   "dataPlane.gatewayNamespaces (default: all)")
    p.add_argument("--gateway-service-type", choices=("LoadBalancer", "ClusterIP", "NodePort"),
                   default="LoadBalancer", help="per-gateway: the type of each Gateway's data-plane Service, the "
                   "chart's dataPlane.service.type (default %(default)s)")
    p.add_argument("--gateway-address-ranges", type=_networks_arg, default=(), metavar="CIDR,CIDR",
                   help="per-gateway: the networks the load balancer gives addresses from, the chart's "
                   "dataPlane.service.addressRanges; a Gateway's spec.addresses outside them is AddressNotUsable "
                   "(default: any)")


def options_from_args(args: argparse.Namespace) -> RenderOptions:
    """The render options of :func:`add_render_arguments`' arguments."""
    ns, _, name = args.data_plane_service.rpartition("/")
    return RenderOptions(
        controller_name=args.controller_name,
        ingress_controller_name=args.ingress_controller_name,
        watch_legacy_annotation=args.watch_legacy_annotation,
        port_map=dict(args.port_map),
        data_plane_ports=tuple(args.data_plane_ports),
        data_plane_service=(ns or args.data_plane_namespace, name),
        assume_programmed=args.assume_programmed,
        max_parts=args.config_parts,
        secret_namespaces=tuple(args.secret_namespaces),
        data_plane_mode=args.data_plane_mode,
        gateway_namespaces=tuple(args.gateway_namespaces),
        gateway_service_type=args.gateway_service_type,
        gateway_address_ranges=tuple(args.gateway_address_ranges),
    )

