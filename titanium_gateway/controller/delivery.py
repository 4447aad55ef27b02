"""Delivering a result to every data plane: what the controller knows of each data plane
(:class:`PlaneState`), their writers, and one pass's writes, in order, per plane.

A pass writes each data plane of the result (``RenderResult.planes``, render/planes.py): the
shared one with the writers of the controller's :class:`~titanium_gateway.controller.reconciler.Parts`;
with ``--data-plane-mode per-gateway`` each Gateway's own with writers of its own
(:class:`PlaneWriters`, made when the plane appears), after the provisioner made its Deployment,
Service and admin-token Secret. Per plane, in this order: TLS Secret, part ConfigMaps, root
ConfigMap, pod pokes, and the shared Deployment's stamp. A change of one Gateway's routes writes
only that Gateway's ConfigMaps (the writers write only what changed).

:meth:`Delivery.deliver` returns a :class:`DeliveryReport`: the planes delivered with their pods
(to probe) and the result with the part bytes released that were written; whether a result can
be delivered again (its released parts still written) is :meth:`Delivery.still_written`, from
what each plane's last delivery left written (``PlaneState.written``). The controller reads the
report and asks the delivery, never the writers.

A Gateway's data-plane write that the API server's admission refuses (controller/admission.py)
is recorded on its state (``PlaneState.refused``, its Programmed message) and the pass goes on
with the other data planes.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.controller.admission import refused_by_admission
from titanium_gateway.controller.informers import data_plane_in
from titanium_gateway.kube import api as k
from titanium_gateway.kube.informer import InformerSet
from titanium_gateway.kube.workqueue import CoalescingTrigger
from titanium_gateway.prober.prober import DataPlane
from titanium_gateway.render import planes as _planes
from titanium_gateway.render.result import Plane, RenderResult
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.writers.base import Refused
from titanium_gateway.writers.configmap import ConfigMapWriter
from titanium_gateway.writers.deployment import DeploymentStamper
from titanium_gateway.writers.pods import PodPoker
from titanium_gateway.writers.provisioner import Provisioner
from titanium_gateway.writers.secret import SecretWriter

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class PlaneWriters:
    """The writers of one Gateway's own data plane (``Parts.plane_writers``)."""

    config_writer: ConfigMapWriter
    secret_writer: SecretWriter
    poker: PodPoker
    #: its pods' admin token
    token: str


@dataclasses.dataclass
class PlaneState:
    """What the controller knows of one data plane: where it is, its writers, what its pods
    confirmed and why not."""

    key: str
    namespace: str
    service: str
    config_writer: ConfigMapWriter
    secret_writer: SecretWriter
    poker: PodPoker
    #: its pods' admin token (None: the controller's own, the shared data plane's)
    token: str | None = None
    #: the Gateway's uid (a Gateway made again under the same name gets new writers)
    uid: str = ""
    confirmed: str | None = None
    message: str = ""
    #: why its objects could not be made (the provisioner's answer; "" when they are)
    problem: str = ""
    #: why the API server's admission refused its config or certificate write ("" when it did not)
    refused: str = ""
    #: the result's plane holds its parts' names only (their bytes were written and released)
    parts_released: bool = False
    #: the config hash whose every file the last delivery left written (None: none)
    written: str | None = None


@dataclasses.dataclass(frozen=True)
class DeliveredPlane:
    """One data plane a pass delivered: its state, the plane (its part bytes released once
    written), its pods as the caches showed them."""

    state: PlaneState
    plane: Plane
    pods: DataPlane


@dataclasses.dataclass(frozen=True)
class DeliveryReport:
    """What one pass delivered."""

    #: the planes written (not those with a delivery error, nor those whose objects could not be made)
    delivered: tuple[DeliveredPlane, ...]
    #: the result delivered, with the part bytes that were written released
    result: RenderResult


class Delivery:
    """The data planes' states and one pass's writes to each."""

    def __init__(self, shared: PlaneState, informers: InformerSet, stamper: DeploymentStamper,
                 trigger: CoalescingTrigger, *, pod_namespace: str, can_remove: Callable[[Snapshot], bool],
                 provisioner: Provisioner | None = None,
                 plane_writers: Callable[[Plane], PlaneWriters] | None = None) -> None:
        self.shared = shared
        self.informers = informers
        self.stamper = stamper
        self.trigger = trigger
        self.pod_namespace = pod_namespace
        #: whether the data planes of Gateways absent from the snapshot may be removed
        self.can_remove = can_remove
        self.provisioner = provisioner
        self.plane_writers = plane_writers
        #: each Gateway's own data plane (``per-gateway``) by plane key
        self.gateway_planes: dict[str, PlaneState] = {}

    # --- the states -------------------------------------------------------------------------------
    def states(self) -> list[PlaneState]:
        return [self.shared, *self.gateway_planes.values()]

    def probes(self) -> dict[str, tuple[str | None, str]]:
        """What each Gateway's own data plane confirmed, and why not (a provisioning problem first)."""
        return {key: (st.confirmed, st.problem or st.refused or st.message) for key, st in self.gateway_planes.items()}

    def reset(self) -> None:
        """A new leadership term: what the pods confirmed is unknown; Gateways' planes get fresh writers."""
        self.gateway_planes.clear()
        self.shared.confirmed = None
        self.shared.problem = ""
        self.shared.written = None

    def rendering(self) -> None:
        """A new result is being rendered: every plane's part bytes are held again."""
        for st in self.states():
            st.parts_released = False

    def still_written(self, result: RenderResult) -> bool:
        """Every data plane of ``result`` whose part bytes were released is still written (a
        reuse of the result needs them: anything else renders again)."""
        for plane in result.planes:
            st = self.shared if plane.key == _planes.SHARED else self.gateway_planes.get(plane.key)
            if st is None or (st.parts_released and st.written != plane.config_hash):
                return False
        return True

    def state(self, plane: Plane) -> PlaneState:
        """The state of a data plane of the result (a Gateway's made when it appears, and made
        again for a Gateway made again under the same name)."""
        if plane.gateway is None:
            return self.shared
        st = self.gateway_planes.get(plane.key)
        if st is None or st.uid != plane.gateway.uid:
            assert self.plane_writers is not None
            w = self.plane_writers(plane)
            names = _planes.plane_names(plane.gateway.name, plane.gateway.class_name)
            st = self.gateway_planes[plane.key] = PlaneState(
                plane.key, plane.gateway.namespace, names.service, w.config_writer, w.secret_writer, w.poker,
                w.token, plane.gateway.uid)
        return st

    def pods(self, st: PlaneState) -> DataPlane:
        """The data plane of ``st`` as the caches show it now: its pods (poked, stamped) and its
        ready endpoints (probed)."""
        if st is self.shared:
            return data_plane_in(self.informers, st.namespace, st.service, pod_namespace=self.pod_namespace)
        return data_plane_in(self.informers, st.namespace, st.service, pods="PlanePod")

    # --- one pass ---------------------------------------------------------------------------------
    def deliver(self, result: RenderResult, snap: Snapshot) -> DeliveryReport:
        """Write every data plane of ``result`` (a Gateway's after its objects are made)."""
        if self.provisioner is not None:
            self._provision(result, snap)
        out: list[DeliveredPlane] = []
        released: dict[str, Plane] = {}
        for plane in result.planes:
            st = self.state(plane)
            if plane.delivery_error:
                log.error("config not delivered", extra={"config_hash": plane.config_hash, "data_plane": plane.key,
                                                         "error": plane.delivery_error})
                continue
            if st.problem:
                continue  # (its objects could not be made: the problem is its Programmed message)
            if st.confirmed == plane.config_hash:
                st.config_writer.confirm(plane.config_hash)
                st.secret_writer.confirm(plane.config_hash)
            try:
                st.secret_writer.write(plane)
                written = st.config_writer.write(plane)
            except (k.ApiError, Refused) as e:
                if not refused_by_admission(st, plane, e, self.trigger):
                    raise
                continue
            refused_by_admission(st, plane, None, self.trigger)
            if written:
                log.info("config written", extra={"config_hash": plane.config_hash, "data_plane": plane.key,
                                                   "bytes": len(plane.config), "parts": len(plane.parts)})
            whole = st.config_writer.is_complete(plane.config_hash)
            st.written = plane.config_hash if whole else None
            own = plane.gateway is not None
            if (plane.parts or own) and not st.parts_released and whole:
                # Written: the parts' bytes (24 MB at 10k routes + 10k Ingresses), and a Gateway's
                # own root (most are not split: 20 of them hold as much as the parts), are not
                # needed again; a reuse of this result needs the writer to still hold it written,
                # and anything else renders again.
                released[plane.key] = dataclasses.replace(plane, config=b"" if own else plane.config,
                                                          parts=tuple((n, b"") for n, _ in plane.parts))
                st.parts_released = True
            dp = self.pods(st)
            st.poker.poke(dp.pods, plane.config_hash, plane.tls_files)  # a certificate change pokes too
            if not own:
                self.stamper.stamp(plane.listeners, dp.pods)
            out.append(DeliveredPlane(st, released.get(plane.key, plane), dp))
        if released:
            result = dataclasses.replace(result, planes=tuple(released.get(p.key, p) for p in result.planes))
        return DeliveryReport(tuple(out), result)

    def _provision(self, result: RenderResult, snap: Snapshot) -> None:
        """Make the objects of each Gateway's own data plane, and delete those of Gateways that
        have none any more (never while the Gateways cannot be read: the snapshot would be
        missing them)."""
        assert self.provisioner is not None
        own = result.gateway_planes()
        for plane in own:
            st = self.state(plane)
            problem = self.provisioner.ensure(plane, self._plane_object)
            if problem != st.problem:
                st.problem = problem
                self.trigger.trigger()  # (Programmed says it)
        keep = {(p.gateway.namespace, p.gateway.name) for p in own if p.gateway is not None}
        current = {p.key for p in own}
        for key in [key for key in self.gateway_planes if key not in current]:
            del self.gateway_planes[key]
        if kinds.GATEWAY.kind in snap.unreadable or not self.can_remove(snap):
            return
        services = [svc for svc in self.informers["Service"].list()
                    if _planes.is_managed((svc.get("metadata") or {}).get("labels"))]
        present = {(str((gw.get("metadata") or {}).get("namespace") or ""), str((gw.get("metadata") or {}).get("name")))
                   for gw in snap.gateways.values()}
        self.provisioner.remove(keep, present, self.informers["PlaneDeployment"].list(), services)

    def _plane_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The cached Deployment or Service of a Gateway's own data plane."""
        inf = self.informers.get("PlaneDeployment" if kind == "Deployment" else kind)
        return inf.get(namespace, name) if inf is not None else None
