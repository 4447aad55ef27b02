"""The data planes the controller creates for Gateways (``--data-plane-mode per-gateway``).

The chart renders the settings of those data planes (its ``dataPlane`` values: image, replicas,
resources, ports, security context, Service type and annotations) into a file the controller
reads at start (``--data-plane-template``, a ConfigMap of the release mounted in its pod; a
change rolls the controller). :func:`load_template` reads and checks it; :func:`plane_objects`
turns it and one data plane of the render (``RenderResult.planes``) into the objects of that
Gateway's data plane, all in the Gateway's namespace (an owner reference must be
same-namespace: the garbage collector deletes them with the Gateway):

* the Deployment ``<gateway>-<class>`` (render/planes.py names them all): the chart's pod
  template, with the config volume projecting this plane's ConfigMaps and TLS Secret, the
  admin token from this plane's Secret, the container ports of the Gateway's listeners (in
  place of the chart's ``dataPlane.ports``), the listener stamp (the pods bind listeners at
  start) and the Gateway's ``spec.infrastructure`` labels and annotations;
* the Service of the same name: the chart's type and annotations, a port per listener port of
  the Gateway (to the container port of the same name, the one the render chose,
  render/listenerports.py; the chart's ports while no listener is programmed: a Service needs
  one), the Gateway's requested address as ``loadBalancerIP``;
* the admin-token Secret ``<base>-admin``: a token of this Gateway's own, derived from the
  controller's (``admin_token``), so a namespace's users who may read its Secrets learn no
  other data plane's token;
* the metadata of the plane's ConfigMaps and TLS Secret (their writers create them).

Everything carries :func:`plane_labels` (its informers watch only those) and the Gateway as
its controlling owner. Pure: no I/O but :func:`load_template`.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from titanium_gateway.render import planes
from titanium_gateway.render.result import GatewayRef, Plane
from titanium_gateway.writers.deployment import LISTENERS_ANNOTATION, canonical_listeners

#: The annotation holding the hash of what the controller last applied to a Deployment or
#: Service: a patch is sent only when the desired object changes.
APPLIED_ANNOTATION = "gateway.titaniumproxy.com/applied"
#: The pod-template annotation of the admin token's hash (a new token rolls the pods, which read
#: it from their environment at start).
TOKEN_ANNOTATION = "gateway.titaniumproxy.com/admin-token-hash"
CONFIG_VOLUME = "config"
TOKEN_ENV = "TITANIUM_ADMIN_TOKEN"
SERVICE_TYPES = ("LoadBalancer", "ClusterIP", "NodePort")


class TemplateError(ValueError):
    """A data-plane template the controller cannot use (it stops with the message)."""


@dataclass(frozen=True)
class DataPlaneTemplate:
    """The settings of the data planes the controller creates (see the module doc)."""

    replicas: int
    #: part ConfigMaps the pods mount (``--config-parts``: the same for every data plane)
    config_parts: int
    #: ``[{name, port, containerPort}]``: the Service ports and the pods' ports
    ports: tuple[Mapping[str, Any], ...]
    service_type: str
    service_annotations: Mapping[str, str]
    load_balancer_class: str
    external_traffic_policy: str
    #: labels of every object (the chart's ``commonLabels`` and its part-of and version)
    labels: Mapping[str, str]
    #: the pod template: ``metadata`` (labels, annotations) and ``spec`` (its config volume is
    #: replaced, its admin token reference pointed at the plane's Secret)
    pod: Mapping[str, Any]


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TemplateError(f"{where} is not a mapping")
    return value


def _strings(value: Any, where: str) -> dict[str, str]:
    out = {}
    for k, v in _mapping(value, where).items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TemplateError(f"{where}: {k!r} is not a string key with a string value")
        out[k] = v
    return out


def parse_template(data: Any, source: str = "the data-plane template") -> DataPlaneTemplate:
    """A :class:`DataPlaneTemplate` of parsed YAML; TemplateError naming what is wrong."""
    doc = _mapping(data, source)
    replicas, parts = doc.get("replicas", 1), doc.get("configParts", 0)
    if type(replicas) is not int or replicas < 0:
        raise TemplateError(f"{source}: replicas must be an integer >= 0")
    if type(parts) is not int or not 0 <= parts <= 1000:
        raise TemplateError(f"{source}: configParts must be an integer from 0 to 1000")
    ports = doc.get("ports")
    if not isinstance(ports, list) or not ports:
        raise TemplateError(f"{source}: ports must list at least one port")
    for i, p in enumerate(ports):
        if not isinstance(p, Mapping) or not isinstance(p.get("name"), str) or type(p.get("port")) is not int \
                or type(p.get("containerPort")) is not int:
            raise TemplateError(f"{source}: ports[{i}] needs name, port and containerPort")
    service = _mapping(doc.get("service"), f"{source}: service")
    stype = service.get("type", "LoadBalancer")
    if stype not in SERVICE_TYPES:
        raise TemplateError(f"{source}: service.type must be one of {', '.join(SERVICE_TYPES)}")
    pod = _mapping(doc.get("pod"), f"{source}: pod")
    spec = _mapping(pod.get("spec"), f"{source}: pod.spec")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers or not all(isinstance(c, Mapping) for c in containers):
        raise TemplateError(f"{source}: pod.spec.containers must list the data-plane container")
    return DataPlaneTemplate(
        replicas=replicas, config_parts=parts, ports=tuple(dict(p) for p in ports), service_type=stype,
        service_annotations=_strings(service.get("annotations"), f"{source}: service.annotations"),
        load_balancer_class=str(service.get("loadBalancerClass") or ""),
        external_traffic_policy=str(service.get("externalTrafficPolicy") or ""),
        labels=_strings(doc.get("labels"), f"{source}: labels"), pod=copy.deepcopy(dict(pod)))


def load_template(path: str) -> DataPlaneTemplate:
    """The template file ``path`` (TemplateError when it cannot be read or used)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except (OSError, yaml.YAMLError) as e:
        raise TemplateError(f"--data-plane-template {path}: {e}") from None
    return parse_template(data, f"--data-plane-template {path}")


# -- the objects of one Gateway's data plane ------------------------------------------------
def gateway_token(admin_token: str, gateway: Any) -> str:
    """The admin token of one Gateway's data plane: an HMAC of the controller's token over the
    Gateway's identity (the same after a restart; another for a Gateway re-created)."""
    if not admin_token:
        return ""
    ident = f"{gateway.namespace}/{gateway.name}/{gateway.uid}".encode()
    return hmac.new(admin_token.encode(), ident, hashlib.sha256).hexdigest()


def plane_labels(gateway: Any, controller_name: str, template: DataPlaneTemplate | None = None,
                 component: str = "data-plane") -> dict[str, str]:
    """The labels of an object of a Gateway's data plane: the template's and the Gateway's
    ``spec.infrastructure.labels`` first, then the controller's own (which always win)."""
    out = dict(template.labels) if template is not None else {}
    out.update(dict(gateway.labels))
    out.update({
        planes.MANAGED_BY_LABEL: planes.MANAGED_BY,
        planes.CONTROLLER_LABEL: planes.controller_label(controller_name),
        planes.GATEWAY_NAME_LABEL: gateway.name,
        "app.kubernetes.io/component": component,
    })
    return out


#: The label of a data plane's Secret holding a hash of its ``data`` and owner: the next term
#: reads the Secret's metadata only (never its data) to learn whether it is already written.
DATA_HASH_LABEL = "gateway.titaniumproxy.com/data-hash"


def data_hash(data: Mapping[str, str], owners: Any) -> str:
    """The :data:`DATA_HASH_LABEL` value of a Secret's ``data`` (base64 values) and owners."""
    blob = json.dumps([dict(data), owners], sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:40]


def held_hash(meta_obj: Mapping[str, Any] | None, labels: Mapping[str, str]) -> str:
    """The :data:`DATA_HASH_LABEL` of a Secret's metadata when it carries the controller labels
    of ``labels`` ("" otherwise: not ours, or not known)."""
    held = (((meta_obj or {}).get("metadata") or {}).get("labels")) or {}
    if any(held.get(k) != labels.get(k) for k in (planes.MANAGED_BY_LABEL, planes.CONTROLLER_LABEL)):
        return ""
    return str(held.get(DATA_HASH_LABEL) or "")


def data_hash_op(value: str) -> dict[str, Any]:
    """The JSON-patch operation that sets :data:`DATA_HASH_LABEL` (after :func:`ours_test`: the
    labels exist)."""
    return {"op": "add", "path": "/metadata/labels/" + DATA_HASH_LABEL.replace("/", "~1"), "value": value}


def ours_test(labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """JSON-patch ``test`` operations that fail unless the object carries the controller labels
    of ``labels`` (:func:`plane_labels`): a write that never reads, and never changes an object
    of that name it did not make."""
    def path(label: str) -> str:
        return "/metadata/labels/" + label.replace("~", "~0").replace("/", "~1")

    return [{"op": "test", "path": path(key), "value": labels[key]}
            for key in (planes.MANAGED_BY_LABEL, planes.CONTROLLER_LABEL)]


def selector(gateway: Any, controller_name: str) -> dict[str, str]:
    """The labels that select the pods of a Gateway's data plane."""
    return {"app.kubernetes.io/name": "titanium", "app.kubernetes.io/component": "data-plane",
            planes.GATEWAY_NAME_LABEL: gateway.name,
            planes.CONTROLLER_LABEL: planes.controller_label(controller_name)}


def owner_reference(gateway: Any) -> dict[str, Any]:
    """The Gateway as controlling owner (no ``blockOwnerDeletion``: that would need update
    rights on the Gateway's finalizers)."""
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "name": gateway.name,
            "uid": gateway.uid, "controller": True}


def object_meta(gateway: Any, name: str, controller_name: str, template: DataPlaneTemplate | None = None,
                component: str = "data-plane", annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": gateway.namespace,
                            "labels": plane_labels(gateway, controller_name, template, component),
                            "ownerReferences": [owner_reference(gateway)]}
    merged = {**dict(gateway.annotations), **dict(annotations or {})}
    if merged:
        meta["annotations"] = merged
    return meta


def _applied(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with :data:`APPLIED_ANNOTATION`: the hash of everything else in it."""
    digest = hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]
    meta = obj["metadata"]
    meta["annotations"] = {**meta.get("annotations", {}), APPLIED_ANNOTATION: digest}
    return obj


def applied_hash(obj: Mapping[str, Any] | None) -> str:
    """The :data:`APPLIED_ANNOTATION` of an object ("" without)."""
    ann = ((obj or {}).get("metadata") or {}).get("annotations") or {}
    return str(ann.get(APPLIED_ANNOTATION) or "")


def _ports(plane: Plane, template: DataPlaneTemplate) -> list[tuple[str, int, int]]:
    """(name, Service port, container port) of each port of the Gateway's data plane: its
    listeners' (render/listenerports.py), else the chart's while none is programmed."""
    gw = plane.gateway
    assert gw is not None
    if gw.ports:
        return [(p.name, p.port, p.container_port) for p in gw.ports]
    return [(str(p["name"]), int(p["port"]), int(p["containerPort"])) for p in template.ports]


def _pod_spec(template: DataPlaneTemplate, names: planes.PlaneNames, ports: list[tuple[str, int, int]]
              ) -> dict[str, Any]:
    spec = copy.deepcopy(dict(template.pod.get("spec") or {}))
    spec.pop("serviceAccountName", None)  # the namespace's default account; no token is mounted
    spec["automountServiceAccountToken"] = False
    sources: list[dict[str, Any]] = [{"configMap": {"name": names.config_map}}]
    sources += [{"configMap": {"name": names.part(n), "optional": True}} for n in range(1, template.config_parts + 1)]
    sources.append({"secret": {"name": names.tls_secret}})
    volume = {"name": CONFIG_VOLUME, "projected": {"defaultMode": 0o444, "sources": sources}}
    volumes = [v for v in spec.get("volumes") or [] if isinstance(v, Mapping) and v.get("name") != CONFIG_VOLUME]
    spec["volumes"] = [volume, *volumes]
    chart_ports = {str(p["name"]) for p in template.ports}
    containers = spec.get("containers") or []
    for i, container in enumerate(containers):
        if i == 0:  # the data plane: its listener ports in place of the chart's (admin and others kept)
            others = [p for p in container.get("ports") or []
                      if not (isinstance(p, Mapping) and p.get("name") in chart_ports)]
            container["ports"] = [{"name": name, "containerPort": target, "protocol": "TCP"}
                                  for name, _port, target in ports] + others
        env = container.get("env") or []
        container["env"] = [e for e in env if not (isinstance(e, Mapping) and e.get("name") == TOKEN_ENV)]
        container["env"].insert(0, {"name": TOKEN_ENV, "valueFrom": {
            "secretKeyRef": {"name": names.admin_secret, "key": "token"}}})
    return spec


def deployment(plane: Plane, template: DataPlaneTemplate, controller_name: str, admin_token: str) -> dict[str, Any]:
    """The Deployment of a Gateway's data plane (with :data:`APPLIED_ANNOTATION`)."""
    gw = plane.gateway
    assert gw is not None
    names = planes.plane_names(gw.name, gw.class_name)
    sel = selector(gw, controller_name)
    pod_meta = template.pod.get("metadata") or {}
    labels = {**dict(pod_meta.get("labels") or {}), **plane_labels(gw, controller_name, template), **sel}
    annotations = {**dict(pod_meta.get("annotations") or {}), **dict(gw.annotations),
                   LISTENERS_ANNOTATION: canonical_listeners(plane.listeners),
                   TOKEN_ANNOTATION: hashlib.sha256(gateway_token(admin_token, gw).encode()).hexdigest()[:16]}
    obj = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": object_meta(gw, names.deployment, controller_name, template),
        "spec": {
            "replicas": template.replicas,
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": sel},
            # the controller stamps the listener set on the template; the roll never takes a
            # serving pod away before its replacement has loaded a config
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "template": {"metadata": {"labels": labels, "annotations": annotations},
                         "spec": _pod_spec(template, names, _ports(plane, template))},
        },
    }
    return _applied(obj)


def service(plane: Plane, template: DataPlaneTemplate, controller_name: str) -> dict[str, Any]:
    """The Service of a Gateway's data plane (with :data:`APPLIED_ANNOTATION`)."""
    gw = plane.gateway
    assert gw is not None
    names = planes.plane_names(gw.name, gw.class_name)
    spec: dict[str, Any] = {
        "type": template.service_type,
        "selector": selector(gw, controller_name),
        # a named targetPort: each pod's own container port of that name, so while the pods roll
        # to new container ports the old ones keep serving on theirs
        "ports": [{"name": name, "port": port, "targetPort": name, "protocol": "TCP"}
                  for name, port, _target in _ports(plane, template)],
    }
    if template.service_type == "LoadBalancer" and template.load_balancer_class:
        spec["loadBalancerClass"] = template.load_balancer_class
    if template.service_type != "ClusterIP" and template.external_traffic_policy:
        spec["externalTrafficPolicy"] = template.external_traffic_policy
    if gw.address is not None and template.service_type == "LoadBalancer":
        spec["loadBalancerIP"] = gw.address
    meta = object_meta(gw, names.service, controller_name, template, annotations=template.service_annotations)
    return _applied({"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec})


def admin_secret(plane: Plane, controller_name: str, admin_token: str) -> dict[str, Any]:
    """The Secret with the admin token of a Gateway's data plane (its pods' TITANIUM_ADMIN_TOKEN)."""
    import base64

    gw = plane.gateway
    assert gw is not None
    names = planes.plane_names(gw.name, gw.class_name)
    token = gateway_token(admin_token, gw)
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": object_meta(gw, names.admin_secret, controller_name, component="admin-token"),
            "data": {"token": base64.b64encode(token.encode()).decode()}}


def config_meta(gateway: GatewayRef, name: str, controller_name: str, template: DataPlaneTemplate | None = None
                ) -> dict[str, Any]:
    """The metadata of a new ConfigMap of a Gateway's data plane (its root or a part): labelled
    ``data-plane-config``, which the controller's ConfigMap watch leaves out."""
    return object_meta(gateway, name, controller_name, template, component="data-plane-config")


def tls_meta(gateway: GatewayRef, name: str, controller_name: str, template: DataPlaneTemplate | None = None
             ) -> dict[str, Any]:
    """The metadata of a new TLS Secret of a Gateway's data plane."""
    return object_meta(gateway, name, controller_name, template, component="data-plane-certificates")
