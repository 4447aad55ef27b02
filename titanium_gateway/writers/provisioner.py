"""The objects of Gateways' own data planes (``--data-plane-mode per-gateway``): created,
updated and deleted by the leader.

For each data plane of the render that belongs to a Gateway (``RenderResult.gateway_planes``)
:meth:`Provisioner.ensure` makes its Deployment, Service and admin-token Secret what
``writers/plane_objects.py`` says they should be: created when missing, patched when the hash of
what was last applied (an annotation the objects carry) differs, left alone otherwise (a
restart with nothing changed writes nothing). The plane's ConfigMaps and TLS Secret are
written, and created when missing, by their own writers. :meth:`Provisioner.remove` deletes the
data planes of Gateways that have none any more (no longer ours, or rejected): a deleted Gateway's
are deleted by the garbage collector (owner references), never by the controller.

An object of that name that this controller did not create (another owner, no labels of ours)
is never taken over: :meth:`ensure` returns why, which becomes the Gateway's Programmed message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from titanium_gateway.kube.api import CONFIG_MAPS, DEPLOYMENTS, SECRETS, SERVICES, ApiError, KubeApi
from titanium_gateway.metrics import REGISTRY, Registry
from titanium_gateway.render import planes
from titanium_gateway.render.result import Plane
from titanium_gateway.writers import plane_objects as tpl
from titanium_gateway.writers.base import LeaderGuard, is_admission_refusal

log = logging.getLogger(__name__)

#: (namespace, Gateway name)
GatewayKey = tuple[str, str]


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    md = (obj or {}).get("metadata")
    return md if isinstance(md, Mapping) else {}


def owned_by(obj: Mapping[str, Any] | None, controller_name: str) -> GatewayKey | None:
    """The Gateway an object of a data plane this controller created serves (None: not one)."""
    md = _meta(obj)
    labels = md.get("labels")
    if not planes.is_managed(labels) or labels.get(planes.CONTROLLER_LABEL) != planes.controller_label(controller_name):
        return None
    return (str(md.get("namespace") or ""), str(labels[planes.GATEWAY_NAME_LABEL]))


class Provisioner:
    def __init__(self, api: KubeApi, *, guard: LeaderGuard, controller_name: str, template: tpl.DataPlaneTemplate,
                 admin_token: str, registry: Registry | None = None) -> None:
        self.api = api
        self.guard = guard
        self.controller_name = controller_name
        self.template = template
        self.admin_token = admin_token
        #: (namespace, Secret name) -> the data and owner references written in this term
        self._secrets: dict[tuple[str, str], Any] = {}
        self._writes = (registry or REGISTRY).counter(
            "titanium_data_plane_objects_total",
            "Writes of the objects of Gateways' own data planes (Deployment, Service, admin-token Secret).",
            ["kind", "verb"])

    def reset(self) -> None:
        """A new term: what was written before is read again."""
        self._secrets.clear()

    # -- create and update ---------------------------------------------------------------------
    def ensure(self, plane: Plane, current: Callable[[str, str, str], Mapping[str, Any] | None]) -> str:
        """Make the Deployment, Service and admin-token Secret of ``plane`` (a Gateway's) what
        they should be; ``current(kind, namespace, name)``: the cached object. Returns "" when
        they are, else why not (a problem the Gateway's status names)."""
        gw = plane.gateway
        assert gw is not None
        names = planes.plane_names(gw.name, gw.class_name)
        try:
            self._secret(tpl.admin_secret(plane, self.controller_name, self.admin_token))
            self._apply(DEPLOYMENTS, tpl.deployment(plane, self.template, self.controller_name, self.admin_token),
                        current("Deployment", gw.namespace, names.deployment))
            self._apply(SERVICES, tpl.service(plane, self.template, self.controller_name),
                        current("Service", gw.namespace, names.service))
        except _Taken as e:
            return str(e)
        except ApiError as e:
            if e.status in (401, 403, 404, 409, 422):  # lasting until someone acts: told, not retried in a loop
                log.warning("cannot create the data plane of a Gateway", extra={
                    "namespace": gw.namespace, "gateway": gw.name, "error": str(e)})
                return f"the controller cannot create this Gateway's data plane: {e.status} {e.reason}: {e.message}"
            raise
        return ""

    def _taken(self, obj: Mapping[str, Any], kind: str, wanted: Mapping[str, Any]) -> _Taken | None:
        """Why an existing object may not be taken over (None: it is ours)."""
        if owned_by(obj, self.controller_name) is None:
            return self._foreign(kind, _meta(obj))
        del wanted
        return None

    def _apply(self, res: Any, desired: dict[str, Any], cur: Mapping[str, Any] | None) -> None:
        md = desired["metadata"]
        ns, name = md["namespace"], md["name"]
        if cur is not None:
            taken = self._taken(cur, res.kind, desired)
            if taken is not None:
                raise taken
            if tpl.applied_hash(cur) == tpl.applied_hash(desired) and \
                    _meta(cur).get("ownerReferences") == md["ownerReferences"]:
                return
            self._patch(res, desired, cur)
            return
        self.guard.check(f"create {res.kind} {ns}/{name}")
        try:
            if res is DEPLOYMENTS:  # (each call names its resource: tests/chart/test_rbac_vs_code.py)
                self.api.create(DEPLOYMENTS, ns, desired)
            else:
                self.api.create(SERVICES, ns, desired)
        except ApiError as e:
            if not e.is_conflict:
                raise
            # there already (the cache lags): read it, then as if it had been cached
            got = self.api.get(DEPLOYMENTS, ns, name) if res is DEPLOYMENTS else self.api.get(SERVICES, ns, name)
            taken = self._taken(got, res.kind, desired)
            if taken is not None:
                raise taken from None
            if tpl.applied_hash(got) != tpl.applied_hash(desired):
                self._patch(res, desired, got)
            return
        self._writes.labels(kind=res.kind, verb="create").inc()
        log.info("created", extra={"kind": res.kind, "namespace": ns, "object_name": name})

    def _patch(self, res: Any, desired: dict[str, Any], cur: Mapping[str, Any]) -> None:
        """A merge patch to ``desired``: metadata labels and annotations merged, the owner
        references and the spec as desired (a Service's allocated fields kept: its cluster IP and
        node ports; what the controller set and no longer wants set to null)."""
        md = desired["metadata"]
        spec = dict(desired["spec"])
        if res.kind == "Service":
            for key in ("loadBalancerIP", "loadBalancerClass", "externalTrafficPolicy"):
                spec.setdefault(key, None)
        body = {"metadata": {"labels": md["labels"], "annotations": md.get("annotations") or {},
                             "ownerReferences": md["ownerReferences"]}, "spec": spec}
        self.guard.check(f"patch {res.kind} {md['namespace']}/{md['name']}")
        if res is DEPLOYMENTS:
            self.api.patch(DEPLOYMENTS, md["namespace"], md["name"], body, patch_type="merge")
        else:
            self.api.patch(SERVICES, md["namespace"], md["name"], body, patch_type="merge")
        self._writes.labels(kind=res.kind, verb="patch").inc()
        log.info("updated", extra={"kind": res.kind, "namespace": md["namespace"], "object_name": md["name"]})
        del cur

    def _secret(self, desired: dict[str, Any]) -> None:
        """The admin-token Secret: its data is never read. Its metadata (only) is read once per
        term: a hash label of ours saying it holds the token and owner wanted leaves it alone;
        else a JSON patch that tests the labels of this controller first (so a Secret of that
        name it did not make is neither read nor changed: _Taken), or a create when missing."""
        md = desired["metadata"]
        key = (md["namespace"], md["name"])
        wanted = (desired["data"], md["ownerReferences"])
        if self._secrets.get(key) == wanted:
            return
        digest = tpl.data_hash(desired["data"], md["ownerReferences"])
        try:
            meta: Mapping[str, Any] | None = self.api.get_metadata(SECRETS, md["namespace"], md["name"])
        except ApiError:
            meta = None
        if meta is not None and tpl.held_hash(meta, md["labels"]) == digest:
            self._secrets[key] = wanted
            return
        self.guard.check(f"write Secret {key[0]}/{key[1]}")
        try:
            self.api.patch(SECRETS, md["namespace"], md["name"], [
                *tpl.ours_test(md["labels"]),
                {"op": "add", "path": "/metadata/ownerReferences", "value": md["ownerReferences"]},
                {"op": "add", "path": "/data", "value": desired["data"]}, tpl.data_hash_op(digest)],
                patch_type="json")
            self._writes.labels(kind="Secret", verb="patch").inc()
        except ApiError as e:
            if e.status in (409, 422):  # the test failed: not ours
                raise self._foreign("Secret", md) from None
            if not e.is_not_found:
                raise
            self.guard.check(f"create Secret {key[0]}/{key[1]}")
            labelled = {**desired, "metadata": {**md, "labels": {**md["labels"], tpl.DATA_HASH_LABEL: digest}}}
            self.api.create(SECRETS, md["namespace"], labelled)
            self._writes.labels(kind="Secret", verb="create").inc()
        self._secrets[key] = wanted

    @staticmethod
    def _foreign(kind: str, md: Mapping[str, Any]) -> _Taken:
        return _Taken(f"{kind} {md.get('namespace')}/{md.get('name')} exists and was not made by this controller: "
                      "it is left alone (delete or rename it, or rename the Gateway)")

    # -- delete ---------------------------------------------------------------------------------
    def remove(self, keep: Iterable[GatewayKey], present: Iterable[GatewayKey],
               deployments: Iterable[Mapping[str, Any]], services: Iterable[Mapping[str, Any]]) -> list[GatewayKey]:
        """Delete the data planes this controller made for Gateways that still exist
        (``present``) but are not in ``keep`` (no longer ours, or rejected), found among the
        cached ``deployments`` and ``services``; returns the Gateways whose data plane was
        deleted. A deleted Gateway's data plane is the garbage collector's to delete (owner
        references)."""
        kept, there = set(keep), set(present)
        gone: dict[GatewayKey, list[tuple[Any, str]]] = {}
        for res, objs in ((DEPLOYMENTS, deployments), (SERVICES, services)):
            for obj in objs:
                owner = owned_by(obj, self.controller_name)
                if owner is not None and owner not in kept and owner in there:
                    gone.setdefault(owner, []).append((res, str(_meta(obj).get("name"))))
        for (ns, gateway), objs in sorted(gone.items()):
            self.guard.check(f"delete the data plane of Gateway {ns}/{gateway}")
            for res, name in objs:
                self._delete(res, ns, name)
            selector = f"{planes.managed_selector(self.controller_name)},{planes.GATEWAY_NAME_LABEL}={gateway}"
            for cm in self.api.list(CONFIG_MAPS, ns, label_selector=selector).get("items") or []:
                self._delete(CONFIG_MAPS, ns, str(_meta(cm).get("name")))
            base = objs[0][1]
            for secret in (f"{base}-tls", f"{base}-admin"):
                self._delete(SECRETS, ns, secret)
                self._secrets.pop((ns, secret), None)
            log.info("deleted the data plane of a Gateway that has none any more",
                     extra={"namespace": ns, "gateway": gateway})
        return sorted(gone)

    def _delete(self, res: Any, ns: str, name: str) -> None:
        calls = {DEPLOYMENTS: lambda: self.api.delete(DEPLOYMENTS, ns, name),
                 SERVICES: lambda: self.api.delete(SERVICES, ns, name),
                 CONFIG_MAPS: lambda: self.api.delete(CONFIG_MAPS, ns, name),
                 SECRETS: lambda: self.api.delete(SECRETS, ns, name)}
        try:
            calls[res]()
            self._writes.labels(kind=res.kind, verb="delete").inc()
        except ApiError as e:
            if is_admission_refusal(e):  # (an object of that name it did not make: left alone)
                log.warning("delete refused by admission: left alone", extra={
                    "kind": res.kind, "namespace": ns, "object_name": name, "error": e.message})
            elif not e.is_not_found:
                raise


class _Taken(Exception):
    """An object of a data plane's name that this controller did not make."""
