"""``titanium-gateway controller``: parse options, set up logging, health, leader election and
the controller; run until SIGTERM/SIGINT (exit 0, Lease released), until leadership is lost, or
until a core thread (leader elector, reconcile worker, status worker, a reflector) dies (exit 1,
so the pod restarts as a fresh follower; ``/healthz`` answers 503 meanwhile)."""

from __future__ import annotations

import gc
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from titanium_gateway.controller.admission import check_policy
from titanium_gateway.controller.health import HealthServer, HealthState
from titanium_gateway.controller.logging import install_exception_hooks, register_secret, setup_logging
from titanium_gateway.controller.options import ControllerOptions, OptionsError, parse_options
from titanium_gateway.controller.reconciler import Controller
from titanium_gateway.controller.wiring import wire
from titanium_gateway.kube.api import KubeApi
from titanium_gateway.kube.clock import REAL_CLOCK, Clock
from titanium_gateway.kube.leaderelection import LeaderElector
from titanium_gateway.kube.threads import CoreThread, dead
from titanium_gateway.metrics import REGISTRY, Registry
from titanium_gateway.writers.plane_objects import TemplateError, load_template

log = logging.getLogger("titanium_gateway.controller")

EXIT_OK = 0
EXIT_LOST_LEADERSHIP = 1
EXIT_THREAD_DIED = 1
EXIT_USAGE = 2
#: HTTP connections to the API server: one per watch (up to 19 informers, and one more Secret
#: and ConfigMap informer per namespace with --secret-namespaces) plus the status writer's pool
#: and the worker.
POOL_SIZE = 96
#: The process's collector thresholds: young collections every 10k container allocations
#: instead of 700 (decoding a 500-object list page allocates ~15k containers; each collection
#: has a fixed cost), the older generations as CPython's defaults.
GC_THRESHOLD = (10_000, 10, 10)


@dataclass
class Runtime:
    """What ``run`` built (tests read it while the controller runs)."""

    controller: Controller | None = None
    elector: LeaderElector | None = None
    health: HealthServer | None = None
    started: threading.Event = field(default_factory=threading.Event)


def run(opts: ControllerOptions, api: KubeApi, stop: threading.Event, *, clock: Clock = REAL_CLOCK,
        registry: Registry | None = None, runtime: Runtime | None = None, serve_health: bool = True,
        controller_kwargs: dict[str, Any] | None = None) -> int:
    """Run until ``stop`` is set (returns 0) or leadership is lost (returns 1)."""
    rt = runtime or Runtime()
    reg = registry or REGISTRY
    lost = threading.Event()
    replica = wire(opts, api, clock=clock, registry=reg, **(controller_kwargs or {}))
    ctrl, elector = replica.controller, replica.elector
    rt.controller, rt.elector = ctrl, elector
    elector_thread: CoreThread | None = None

    def dead_threads() -> list[str]:
        """The core threads that ended although nobody stopped them."""
        gone = ctrl.dead_threads()
        if elector is not None and dead(elector_thread, elector.stopped or lost.is_set()):
            gone.append("leader-elector")
        return gone

    def problem() -> str:
        """"" while healthy, else what is wrong (the ``/healthz`` 503 body)."""
        gone = dead_threads()
        return f"core thread died: {', '.join(gone)}" if gone else ctrl.health_problem()

    health: HealthServer | None = None
    if serve_health:
        health = HealthServer(HealthState(alive=lambda: not problem(), ready=lambda: not ctrl.readiness_problem(),
                                          problem=problem, unready=ctrl.readiness_problem),
                              opts.health_port, registry=reg)
        health.start()
        rt.health = health
    log.info("starting controller", extra={"identity": opts.identity, "controller_name": opts.controller_name,
                                           "data_plane_service": opts.data_plane_service,
                                           "leader_election": opts.leader_election})
    ctrl.start()
    if elector is not None:
        el = elector

        def run_elector() -> None:
            if not el.run():  # False: leadership lost (not a clean stop)
                lost.set()

        elector_thread = CoreThread(run_elector, "leader-elector")
        elector_thread.start()
    rt.started.set()
    code = EXIT_OK
    try:
        while not stop.wait(0.1):
            if lost.is_set():
                log.error("leadership lost: stopping so a fresh replica can take over")
                code = EXIT_LOST_LEADERSHIP
                break
            gone = dead_threads()  # (a reconcile that hangs is left to the liveness probe: /healthz 503)
            if gone:
                log.error("core thread died: stopping so the pod restarts", extra={"threads": gone})
                code = EXIT_THREAD_DIED
                break
    finally:
        ctrl.stop()  # workers first: nothing writes after this
        if elector is not None:
            elector.stop()  # a clean stop releases the Lease (holder "", duration 1 s)
        if elector_thread is not None:
            elector_thread.join(5)
        if health is not None:
            health.stop()
        log.info("controller stopped", extra={"exit_code": code})
    return code


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        opts = parse_options(args)
    except OptionsError as e:
        print(f"titanium-gateway controller: {e}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as e:  # --help
        return int(e.code or 0)
    template = None
    if opts.data_plane_template and opts.per_gateway:
        try:
            template = load_template(opts.data_plane_template)
        except TemplateError as e:
            print(f"titanium-gateway controller: {e}", file=sys.stderr)
            return EXIT_USAGE
    setup_logging(opts.verbose)
    install_exception_hooks()
    register_secret(opts.admin_token)
    from titanium_gateway.kube.rest import RestApi, load_configuration

    try:
        cfg = load_configuration(opts.kubeconfig)
        cfg.connection_pool_maxsize = POOL_SIZE
        api = RestApi(cfg, qps=opts.kube_api_qps, burst=opts.kube_api_burst)
    except Exception as e:
        log.error("cannot load the Kubernetes client configuration", extra={"error": str(e)})
        return EXIT_USAGE
    problem = check_policy(api, opts)
    if problem:
        log.error("cannot start: %s", problem, extra={"policy": opts.admission_policy})
        api.close()
        return 1
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("signal received: shutting down", extra={"signal": signal.Signals(signum).name})
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        gc.set_threshold(*GC_THRESHOLD)
        return run(opts, api, stop, controller_kwargs={"gc_tuning": True, "template": template})
    except OSError as e:  # e.g. the health port is taken
        log.error("cannot start the controller", extra={"error": str(e)})
        return 1
    finally:
        api.close()
