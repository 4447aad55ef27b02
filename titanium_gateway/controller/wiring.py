"""Building the controller from its options.

:func:`wire` makes the whole of one replica: with ``--leader-election`` the Lease elector, and the
:class:`~titanium_gateway.controller.reconciler.Controller` over its parts (:func:`build_controller`):
one informer per watched kind (:func:`informers`), the coalescing trigger, the leader-only writers
sharing one :class:`LeaderGuard`, the prober, the render with its translation memo and the
reconcile back-off. Everything a test replaces (the clock, the render, the prober, the
registry, time-outs and back-offs) is a keyword argument.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from titanium_gateway.controller.gatewayapi import GatewayApiWatch
from titanium_gateway.controller.logging import register_secret
from titanium_gateway.controller.options import ControllerOptions
from titanium_gateway.controller.reconciler import (
    PLANE_WATCHED,
    RECONCILE_KEY,
    RECONCILE_MIN_IDLE,
    SLICE_SERVICE_INDEX,
    WATCHED,
    Controller,
    Parts,
    PlaneWriters,
    RenderFn,
    cached_object,
)
from titanium_gateway.controller.transform import transform_for
from titanium_gateway.kube.api import KubeApi, Resource
from titanium_gateway.kube.clock import REAL_CLOCK, Clock
from titanium_gateway.kube.informer import InformerSet, SharedInformer
from titanium_gateway.kube.leaderelection import LeaderElectionConfig, LeaderElector
from titanium_gateway.kube.ratelimit import default_controller_rate_limiter
from titanium_gateway.kube.reflector import Backoff
from titanium_gateway.kube.workqueue import CoalescingTrigger
from titanium_gateway.metrics import REGISTRY, PrometheusWorkqueueMetrics, Registry
from titanium_gateway.prober.prober import Prober, slice_service_key
from titanium_gateway.render.planes import managed_selector, plane_names
from titanium_gateway.render.result import Plane
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.writers.base import LeaderGuard
from titanium_gateway.writers.configmap import ConfigMapWriter
from titanium_gateway.writers.deployment import DeploymentStamper
from titanium_gateway.writers.events import EventWriter
from titanium_gateway.writers.plane_objects import (
    DataPlaneTemplate,
    config_meta,
    gateway_token,
    load_template,
    tls_meta,
)
from titanium_gateway.writers.pods import PodPoker
from titanium_gateway.writers.provisioner import Provisioner
from titanium_gateway.writers.secret import SecretWriter
from titanium_gateway.writers.status import StatusWriter

#: The Secrets the controller reads: TLS Secrets only (a field selector, so others never arrive).
TLS_SELECTOR = "type=kubernetes.io/tls"
#: ConfigMaps (the CA certificates of BackendTLSPolicies) are watched without the data plane's
#: own config ConfigMaps (the chart labels them): their writes would echo back megabytes
CONFIG_MAP_SELECTOR = "app.kubernetes.io/component!=data-plane-config"


def make_informer(opts: ControllerOptions, api: KubeApi, name: str, res: Resource, *, watch_timeout: int = 300,
                  reflector_backoff: Callable[[], Backoff] | None = None) -> SharedInformer:
    """The informer of one kind (not subscribed, not started): its scope and cache transform; it
    lists with a streaming list where the API server serves one."""
    kw: dict[str, Any] = {"watch_timeout": watch_timeout, "backoff_factory": reflector_backoff,
                          "transform": transform_for(name, opts.to_render_options().data_plane_service),
                          "watch_list": True}
    if name == "Secret":
        return SharedInformer(api, res, namespaces=list(opts.secret_namespaces) or None,
                              field_selector=TLS_SELECTOR, name="secrets", **kw)
    if name == "ConfigMap":  # the namespaces the Secrets are read in (docs/install.md, RBAC)
        return SharedInformer(api, res, namespaces=list(opts.secret_namespaces) or None,
                              label_selector=CONFIG_MAP_SELECTOR, name="configmaps", **kw)
    if name == "Pod":
        # Every Pod of the data-plane namespace (the one namespace RBAC grants pods in), whatever
        # its labels: which are the data plane's is decided from the data-plane Service at each
        # reconcile (``data_plane``), so a Service whose selector changes, or a data plane
        # installed without the chart's labels, is followed. The transform keeps a few fields.
        return SharedInformer(api, res, opts.data_plane_namespace, name="pods", **kw)
    if name == "EndpointSlice":
        return SharedInformer(api, res, name=res.plural, indexers={SLICE_SERVICE_INDEX: slice_service_key}, **kw)
    if name in PLANE_WATCHED:
        # the objects of Gateways' own data planes: only those this controller labelled, in the
        # namespaces it may create them in (RBAC: --gateway-namespaces)
        return SharedInformer(api, res, namespaces=list(opts.gateway_namespaces) or None,
                              label_selector=managed_selector(opts.controller_name),
                              name=f"data-plane-{res.plural}", **kw)
    return SharedInformer(api, res, name=res.plural, **kw)


def informers(opts: ControllerOptions, api: KubeApi, *, watch_timeout: int = 300,
              reflector_backoff: Callable[[], Backoff] | None = None) -> InformerSet:
    """One informer per ``WATCHED`` kind (not started), each with its cache transform (the
    Gateway API kinds join where installed: controller/gatewayapi.py), and in per-gateway mode
    one per ``PLANE_WATCHED`` kind."""
    out = InformerSet()
    for name, (res, _field) in WATCHED.items():
        out.add(name, make_informer(opts, api, name, res, watch_timeout=watch_timeout,
                                    reflector_backoff=reflector_backoff))
    if opts.per_gateway:
        for name, res in PLANE_WATCHED.items():
            out.add(name, make_informer(opts, api, name, res, watch_timeout=watch_timeout,
                                        reflector_backoff=reflector_backoff))
    return out


def _memoized_render() -> tuple[RenderFn, Any]:
    """The pure render with a translation memo of its own (render/memo.py): a reconcile
    re-translates only what changed since the last one; the output is the same."""
    from titanium_gateway.render import RenderCache, render

    cache = RenderCache()

    def render_with_cache(snap: Snapshot, options: Any) -> Any:
        return render(snap, options, cache)

    return render_with_cache, cache


def plane_writers_factory(opts: ControllerOptions, api: KubeApi, template: DataPlaneTemplate, guard: LeaderGuard,
                          clock: Clock, registry: Registry) -> Callable[[Plane], PlaneWriters]:
    """The writers of one Gateway's own data plane: its ConfigMaps and TLS Secret (created when
    missing, owned by the Gateway), its pods' poker, its admin token."""

    def make(plane: Plane) -> PlaneWriters:
        gw = plane.gateway  # (the writers keep the Gateway, never the plane: its document and bytes)
        assert gw is not None
        names = plane_names(gw.name, gw.class_name)
        name = opts.controller_name
        token = gateway_token(opts.admin_token, gw)
        if token:
            register_secret(token)  # (never logged)
        return PlaneWriters(
            ConfigMapWriter(api, gw.namespace, names.config_map, max_parts=template.config_parts, guard=guard,
                            registry=registry, create=lambda n: config_meta(gw, n, name, template)),
            SecretWriter(api, gw.namespace, names.tls_secret, guard=guard, registry=registry,
                         create=lambda n: tls_meta(gw, n, name, template)),
            PodPoker(api, gw.namespace, guard=guard, clock=clock, registry=registry),
            token)

    return make


def build_controller(opts: ControllerOptions, api: KubeApi, *, is_leader: Callable[[], bool] | None = None,
                     render_fn: RenderFn | None = None, clock: Clock = REAL_CLOCK,
                     registry: Registry | None = None, prober: Prober | None = None, watch_timeout: int = 300,
                     reflector_backoff: Callable[[], Backoff] | None = None,
                     retry_backoff: tuple[float, float] = (0.5, 60.0), stuck_after: float = 300.0,
                     gc_tuning: bool = False, sync_timeout: float = 120.0,
                     template: DataPlaneTemplate | None = None) -> Controller:
    """A controller over ``api`` (``is_leader``: None writes always, as without leader election;
    ``render_fn``: the memoized pure render by default; ``retry_backoff``: the reconcile's
    failure back-off, first and cap, in seconds; ``sync_timeout``: seconds a cache a reconcile
    needs may take to list before /healthz fails; ``template``: per-gateway, the data-plane
    template, else read from ``--data-plane-template``)."""
    reg = registry or REGISTRY
    if opts.per_gateway and template is None:
        assert opts.data_plane_template is not None
        template = load_template(opts.data_plane_template)
    ns = opts.data_plane_namespace
    guard = LeaderGuard(is_leader)
    cache: Any = None
    if render_fn is None:
        render_fn, cache = _memoized_render()
    window = opts.min_reconcile_ms / 1000.0
    informer_set = informers(opts, api, watch_timeout=watch_timeout, reflector_backoff=reflector_backoff)
    parts = Parts(
        informers=informer_set,
        # one key, "reconcile": /metrics exports the client-go workqueue figures for it
        trigger=CoalescingTrigger(window, clock=clock, name=RECONCILE_KEY, metrics=PrometheusWorkqueueMetrics(reg),
                                  min_idle=min(window, RECONCILE_MIN_IDLE)),
        guard=guard,
        config_writer=ConfigMapWriter(api, ns, opts.config_map, max_parts=opts.config_parts, guard=guard,
                                      registry=reg),
        secret_writer=SecretWriter(api, ns, opts.tls_secret, guard=guard, registry=reg),
        status_writer=StatusWriter(api, controller_name=opts.controller_name, guard=guard,
                                   current=functools.partial(cached_object, informer_set), registry=reg),
        event_writer=EventWriter(api, controller_name=opts.controller_name, identity=opts.identity, guard=guard,
                                 clock=clock, default_namespace=ns),
        poker=PodPoker(api, ns, guard=guard, clock=clock, registry=reg),
        stamper=DeploymentStamper(api, ns, opts.data_plane_deployment, guard=guard),
        prober=prober or Prober(opts.admin_port, opts.admin_token, registry=reg),
        render_fn=render_fn,
        render_cache=cache,
        # client-go's default controller limiter: per-item exponential from retry_backoff[0],
        # capped at retry_backoff[1], max with the overall bucket
        rate_limiter=default_controller_rate_limiter(clock, base_delay=retry_backoff[0],
                                                     max_delay=retry_backoff[1]),
        max_retry_delay=retry_backoff[1],
        registry=reg,
        make_informer=functools.partial(make_informer, opts, api, watch_timeout=watch_timeout,
                                        reflector_backoff=reflector_backoff),
        gateway_api=lambda informer_set, make, on_change: GatewayApiWatch(
            api, informer_set, make, on_change=on_change, clock=clock, watch_timeout=watch_timeout,
            backoff_factory=reflector_backoff, sync_timeout=sync_timeout),
        provisioner=None if template is None else Provisioner(
            api, guard=guard, controller_name=opts.controller_name, template=template, admin_token=opts.admin_token,
            registry=reg),
        plane_writers=None if template is None else plane_writers_factory(opts, api, template, guard, clock, reg),
    )
    return Controller(opts, parts, clock=clock, stuck_after=stuck_after, gc_tuning=gc_tuning,
                      service_type=template.service_type if template is not None else "LoadBalancer")


def leader_elector(opts: ControllerOptions, api: KubeApi, *, clock: Clock = REAL_CLOCK,
                   registry: Registry | None = None) -> LeaderElector:
    """The Lease elector of ``--lease-*``; it never creates the Lease (the chart does) and
    releases it on a clean stop."""
    cfg = LeaderElectionConfig(
        lease_name=opts.lease_name, lease_namespace=opts.lease_namespace, identity=opts.identity,
        lease_duration=opts.lease.lease_duration, renew_deadline=opts.lease.renew_deadline,
        retry_period=opts.lease.retry_period, release_on_cancel=True)
    return LeaderElector(api, cfg, clock=clock, registry=registry)


@dataclass
class Replica:
    """One replica, wired: the controller and, with leader election, its elector."""

    controller: Controller
    elector: LeaderElector | None


def wire(opts: ControllerOptions, api: KubeApi, *, clock: Clock = REAL_CLOCK, registry: Registry | None = None,
         **controller_kwargs: Any) -> Replica:
    """The controller of ``opts`` and, with ``--leader-election``, the elector it writes under:
    the writers act only while the elector leads, and each new term starts the controller's
    ``on_started_leading``. ``controller_kwargs`` go to :func:`build_controller`."""
    elector = leader_elector(opts, api, clock=clock, registry=registry) if opts.leader_election else None
    controller = build_controller(opts, api, is_leader=elector.is_leader if elector is not None else None,
                                  clock=clock, registry=registry, **controller_kwargs)
    if elector is not None:
        elector.on_started_leading = controller.on_started_leading
    return Replica(controller, elector)
