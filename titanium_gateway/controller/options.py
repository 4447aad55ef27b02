"""Controller options: every flag of the Configuration table, also read from
``TITANIUM_GATEWAY_<FLAG>`` (flag without ``--``, upper case, ``-`` -> ``_``).

Precedence: a flag on the command line wins over its environment variable, which wins over
the default. An unknown flag or an unknown ``TITANIUM_GATEWAY_*`` variable is an error
(``OptionsError``; ``main`` exits 2 with the message).
"""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

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
from titanium_gateway.render.planes import MODES, SHARED_MODE, per_gateway

ENV_PREFIX = "TITANIUM_GATEWAY_"
ADMIN_TOKEN_ENV = "TITANIUM_ADMIN_TOKEN"  # not an option: the data plane's bearer token


class OptionsError(ValueError):
    """A bad command line or environment (exit code 2)."""


@dataclass(frozen=True)
class LeaseTimings:
    """Leader-election timings (client-go defaults; tests shorten them)."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def validate(self) -> None:
        if not self.lease_duration > self.renew_deadline > 1.2 * self.retry_period > 0:
            raise OptionsError("leader election needs lease-duration > renew-deadline > 1.2 x retry-period > 0")


@dataclass(frozen=True)
class ControllerOptions:
    data_plane_service: str
    data_plane_namespace: str = "default"
    controller_name: str = DEFAULT_CONTROLLER_NAME
    data_plane_deployment: str | None = None
    config_map: str = ""
    tls_secret: str = ""
    config_parts: int = DEFAULT_MAX_PARTS
    port_map: Mapping[int, int] = field(default_factory=lambda: DEFAULT_PORT_MAP)
    data_plane_ports: tuple[int, ...] = DEFAULT_DATA_PLANE_PORTS
    secret_namespaces: tuple[str, ...] = ()  # empty: all namespaces
    ingress_controller_name: str = DEFAULT_INGRESS_CONTROLLER_NAME
    watch_legacy_annotation: bool = False
    admin_port: int = 9901
    admin_token: str = field(default="", repr=False)
    lease_name: str = "titanium-gateway"
    lease_namespace: str = ""
    identity: str = ""
    leader_election: bool = True
    min_reconcile_ms: int = 500
    health_port: int = 8081
    kube_api_qps: float = 200.0
    kube_api_burst: int = 1000
    kubeconfig: str | None = None
    verbose: bool = False
    lease: LeaseTimings = LeaseTimings()
    #: Seconds between probes while the config is not confirmed (the seed's 5 s).
    probe_interval: float = 5.0
    #: ``shared`` or ``per-gateway`` (render/planes.py)
    data_plane_mode: str = SHARED_MODE
    #: ``per-gateway``: the namespaces the controller may create data planes in (empty: all)
    gateway_namespaces: tuple[str, ...] = ()
    #: ``per-gateway``: the file of the settings of the data planes it creates (writers/plane_objects.py)
    data_plane_template: str | None = None
    #: the ValidatingAdmissionPolicy that must fence the controller's writes ("": none checked;
    #: controller/admission.py checks it at start)
    admission_policy: str = ""
    #: ``per-gateway``: the networks the load balancer gives addresses from (empty: any)
    gateway_address_ranges: tuple[str, ...] = ()

    @property
    def per_gateway(self) -> bool:
        """Each Gateway has a data plane of its own (render/planes.py decides what the mode means;
        the controller's modules ask this)."""
        return per_gateway(self.data_plane_mode)

    @property
    def service_namespace(self) -> str:
        ns, _, name = self.data_plane_service.rpartition("/")
        return ns or self.data_plane_namespace

    @property
    def service_name(self) -> str:
        return self.data_plane_service.rpartition("/")[2]

    def to_render_options(self, service_type: str = "LoadBalancer") -> RenderOptions:
        """The render's options (``service_type``: of the Gateways' own data-plane Services,
        from the data-plane template)."""
        return RenderOptions(
            controller_name=self.controller_name,
            ingress_controller_name=self.ingress_controller_name,
            watch_legacy_annotation=self.watch_legacy_annotation,
            port_map=MappingProxyType(dict(self.port_map)),
            data_plane_ports=self.data_plane_ports,
            data_plane_service=(self.service_namespace, self.service_name),
            max_parts=self.config_parts,
            secret_namespaces=self.secret_namespaces,
            data_plane_mode=self.data_plane_mode,
            gateway_namespaces=self.gateway_namespaces,
            gateway_service_type=service_type,
            data_plane_admin_port=self.admin_port,
            gateway_address_ranges=self.gateway_address_ranges,
        )


_BOOL_TRUE = {"true", "1", "yes", "on"}
_BOOL_FALSE = {"false", "0", "no", "off"}


def _parse_bool(name: str, text: str) -> bool:
    v = text.strip().lower()
    if v in _BOOL_TRUE:
        return True
    if v in _BOOL_FALSE:
        return False
    raise OptionsError(f"{name}: {text!r} is not a boolean (true/false/1/0)")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise OptionsError(message)


#: flag -> (kind, help). kind: str | int | float | bool.
FLAGS: dict[str, tuple[str, str]] = {
    "controller-name": ("str", "GatewayClass.spec.controllerName to own"),
    "data-plane-service": ("str", "the data-plane Service, NAME or NAMESPACE/NAME (required)"),
    "data-plane-namespace": ("str", "namespace of the data plane, its ConfigMap and Secret ($POD_NAMESPACE)"),
    "data-plane-deployment": ("str", "Deployment stamped when the listener set changes (none: no stamping)"),
    "config-map": ("str", "root ConfigMap (default: the Service name)"),
    "tls-secret": ("str", "generated TLS Secret (default: the Service name + -tls)"),
    "config-parts": ("int", "number of part ConfigMaps the pods mount (64)"),
    "port-map": ("str", "Gateway port to data-plane port (80=8080,443=8443)"),
    "data-plane-ports": ("str", "ports the data-plane pods expose (8080,8443)"),
    "secret-namespaces": ("str", "comma-separated namespaces whose TLS Secrets and CA ConfigMaps are read (all)"),
    "data-plane-mode": ("str", "shared: one data plane for every Gateway (the one of --data-plane-service); "
                               "per-gateway: the controller creates a data plane for each Gateway (shared)"),
    "gateway-namespaces": ("str", "per-gateway: comma-separated namespaces the controller creates data planes in "
                                  "(all)"),
    "data-plane-template": ("str", "per-gateway: the YAML file of the settings of the data planes it creates"),
    "admission-policy": ("str", "per-gateway: the ValidatingAdmissionPolicy that must refuse the controller's "
                                "writes outside its data planes, checked at start (none)"),
    "gateway-address-ranges": ("str", "per-gateway: comma-separated networks (CIDRs) the load balancer gives "
                                      "addresses from; a Gateway's spec.addresses outside them is AddressNotUsable "
                                      "(any)"),
    "ingress-controller-name": ("str", "IngressClass.spec.controller to own"),
    "watch-legacy-annotation": ("bool", "also own Ingresses with the kubernetes.io/ingress.class annotation"),
    "admin-port": ("int", "data-plane admin port (9901); token from $TITANIUM_ADMIN_TOKEN"),
    "lease-name": ("str", "leader-election Lease name (titanium-gateway)"),
    "lease-namespace": ("str", "Lease namespace (the data-plane namespace)"),
    "identity": ("str", "leader-election identity ($POD_NAME, else the host name)"),
    "no-leader-election": ("bool", "run without leader election (a single replica)"),
    "min-reconcile-ms": ("int", "smallest time between the starts of two reconciles in ms (500)"),
    "health-port": ("int", "port of /healthz, /readyz, /metrics (8081; 0: an ephemeral port)"),
    "kube-api-qps": ("float", "client-side API rate (200)"),
    "kube-api-burst": ("int", "client-side API burst (1000)"),
    "kubeconfig": ("str", "kubeconfig file (default: in-cluster, else $KUBECONFIG or ~/.kube/config)"),
    "verbose": ("bool", "debug logging"),
    "lease-duration": ("float", "seconds a Lease is valid without renewal (15)"),
    "renew-deadline": ("float", "seconds the leader keeps trying to renew before giving up (10)"),
    "retry-period": ("float", "seconds between leader-election attempts (2)"),
}


def env_name(flag: str) -> str:
    return ENV_PREFIX + flag.upper().replace("-", "_")


def _build_parser() -> _Parser:
    p = _Parser(prog="titanium-gateway controller", allow_abbrev=False,
                description="Gateway API and Ingress controller for the Titanium data plane. "
                            f"Every flag also reads {ENV_PREFIX}<FLAG>.")
    for flag, (kind, help_text) in FLAGS.items():
        if kind == "bool":
            p.add_argument(f"--{flag}", nargs="?", const="true", default=None, metavar="BOOL", help=help_text)
        else:
            p.add_argument(f"--{flag}", default=None, help=help_text)
    return p


def _int(flag: str, text: str, lo: int, hi: int) -> int:
    try:
        v = int(text)
    except ValueError:
        raise OptionsError(f"--{flag}: {text!r} is not an integer") from None
    if not lo <= v <= hi:
        raise OptionsError(f"--{flag}: {v} is outside {lo}-{hi}")
    return v


def _float(flag: str, text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise OptionsError(f"--{flag}: {text!r} is not a number") from None
    if not v > 0:
        raise OptionsError(f"--{flag}: must be > 0")
    return v


def parse_options(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> ControllerOptions:
    """Flags + environment -> validated options; raises OptionsError with a clear message."""
    env = dict(os.environ if environ is None else environ)
    known_env = {env_name(f): f for f in FLAGS}
    unknown = sorted(k for k in env if k.startswith(ENV_PREFIX) and k not in known_env)
    if unknown:
        raise OptionsError(f"unknown environment variable(s) {', '.join(unknown)}; "
                           f"known: {', '.join(sorted(known_env))}")
    ns = _build_parser().parse_args(list(argv))
    raw: dict[str, str] = {}
    for flag in FLAGS:
        ev = env.get(env_name(flag))
        if ev is not None:
            raw[flag] = ev
        fv = getattr(ns, flag.replace("-", "_"))
        if fv is not None:
            raw[flag] = fv

    def s(flag: str) -> str | None:
        v = raw.get(flag)
        return v.strip() if v is not None and v.strip() else None

    def b(flag: str) -> bool:
        v = raw.get(flag)
        return False if v is None else _parse_bool(f"--{flag}", v)

    service = s("data-plane-service")
    if not service:
        raise OptionsError(f"--data-plane-service (or {env_name('data-plane-service')}) is required")
    if service.count("/") > 1 or service.startswith("/") or service.endswith("/"):
        raise OptionsError(f"--data-plane-service: {service!r} is not NAME or NAMESPACE/NAME")
    dp_ns = s("data-plane-namespace") or env.get("POD_NAMESPACE") or "default"
    svc_name = service.rpartition("/")[2]
    try:
        port_map = parse_port_map(s("port-map") or "80=8080,443=8443")
    except ValueError as e:
        raise OptionsError(f"--port-map: {e}") from None
    try:
        dp_ports = parse_ports(s("data-plane-ports") or "8080,8443")
    except ValueError as e:
        raise OptionsError(f"--data-plane-ports: {e}") from None
    if not dp_ports:
        raise OptionsError("--data-plane-ports: at least one port is needed")
    secret_ns = tuple(sorted({x.strip() for x in (s("secret-namespaces") or "").split(",") if x.strip()}))
    mode = s("data-plane-mode") or SHARED_MODE
    if mode not in MODES:
        raise OptionsError(f"--data-plane-mode: {mode!r} is not one of {', '.join(MODES)}")
    gateway_ns = tuple(sorted({x.strip() for x in (s("gateway-namespaces") or "").split(",") if x.strip()}))
    template = s("data-plane-template")
    try:
        address_ranges = parse_networks(s("gateway-address-ranges") or "")
    except ValueError as e:
        raise OptionsError(f"--gateway-address-ranges: {e}") from None
    if per_gateway(mode) and not template:
        raise OptionsError("--data-plane-mode per-gateway needs --data-plane-template (the chart sets it)")
    timings = LeaseTimings(
        lease_duration=_float("lease-duration", s("lease-duration") or "15"),
        renew_deadline=_float("renew-deadline", s("renew-deadline") or "10"),
        retry_period=_float("retry-period", s("retry-period") or "2"),
    )
    timings.validate()
    return ControllerOptions(
        data_plane_service=service,
        data_plane_namespace=dp_ns,
        controller_name=s("controller-name") or DEFAULT_CONTROLLER_NAME,
        data_plane_deployment=s("data-plane-deployment"),
        config_map=s("config-map") or svc_name,
        tls_secret=s("tls-secret") or f"{svc_name}-tls",
        config_parts=_int("config-parts", s("config-parts") or str(DEFAULT_MAX_PARTS), 0, 1000),
        port_map=MappingProxyType(port_map),
        data_plane_ports=dp_ports,
        secret_namespaces=secret_ns,
        ingress_controller_name=s("ingress-controller-name") or DEFAULT_INGRESS_CONTROLLER_NAME,
        watch_legacy_annotation=b("watch-legacy-annotation"),
        admin_port=_int("admin-port", s("admin-port") or "9901", 1, 65535),
        admin_token=env.get("TITANIUM_ADMIN_TOKEN", ""),
        lease_name=s("lease-name") or "titanium-gateway",
        lease_namespace=s("lease-namespace") or dp_ns,
        identity=s("identity") or env.get("POD_NAME") or socket.gethostname(),
        leader_election=not b("no-leader-election"),
        min_reconcile_ms=_int("min-reconcile-ms", s("min-reconcile-ms") or "500", 0, 3_600_000),
        health_port=_int("health-port", s("health-port") or "8081", 0, 65535),
        kube_api_qps=_float("kube-api-qps", s("kube-api-qps") or "200"),
        kube_api_burst=_int("kube-api-burst", s("kube-api-burst") or "1000", 1, 100_000),
        kubeconfig=s("kubeconfig"),
        verbose=b("verbose"),
        lease=timings,
        data_plane_mode=mode,
        gateway_namespaces=gateway_ns,
        data_plane_template=template,
        admission_policy=s("admission-policy") or "",
        gateway_address_ranges=address_ranges,
    )
