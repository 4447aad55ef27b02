"""The objects of a Gateway's own data plane (writers/plane_objects.py) and their writers
(writers/provisioner.py; the ConfigMap and Secret writers' creation of a missing object)."""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
from typing import Any

import pytest

from tests.render.conftest import case_objects
from tests.writers.fakes import RecordingApi
from titanium_gateway.kube.api import CONFIG_MAPS, DEPLOYMENTS, SECRETS, SERVICES, ApiError, Obj, Resource
from titanium_gateway.metrics import Registry
from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.render import render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.planes import CONTROLLER_LABEL, GATEWAY_NAME_LABEL, controller_label
from titanium_gateway.render.result import Plane
from titanium_gateway.writers import plane_objects as po
from titanium_gateway.writers.base import LeaderGuard
from titanium_gateway.writers.configmap import ConfigMapWriter
from titanium_gateway.writers.provisioner import Provisioner
from titanium_gateway.writers.secret import SecretWriter

CONTROLLER = "titaniumproxy.com/gateway-controller"
TOKEN = "chart-token"
TEMPLATE = po.parse_template({
    "replicas": 2, "configParts": 2,
    "ports": [{"name": "http", "port": 80, "containerPort": 8080}, {"name": "https", "port": 443, "containerPort": 8443}],
    "service": {"type": "LoadBalancer", "annotations": {"lb.example.com/scheme": "internal"}},
    "labels": {"app.kubernetes.io/part-of": "titanium-gateway"},
    "pod": {"metadata": {"labels": {"extra": "yes"}, "annotations": {"a": "b"}}, "spec": {
        "serviceAccountName": "chart-data-plane",
        "containers": [{"name": "titanium", "image": "titanium:1", "env": [
            {"name": "TITANIUM_ADMIN_TOKEN", "valueFrom": {"secretKeyRef": {"name": "chart-admin", "key": "token"}}},
            {"name": "OTHER", "value": "x"}]}],
        "volumes": [{"name": "config", "projected": {"sources": []}}, {"name": "tmp", "emptyDir": {}}]}},
})


def planes() -> dict[str, Plane]:
    result = render(build_snapshot(case_objects("pergateway-isolation")),
                    RenderOptions(data_plane_mode="per-gateway", assume_programmed=True))
    return {p.key: p for p in result.gateway_planes()}


class Api(RecordingApi):
    """The recording API with deletes (the provisioner deletes data planes) and equality label
    selectors on lists."""

    def list(self, res: Resource, namespace: str | None = None, **kw: Any) -> Obj:
        out = super().list(res, namespace, **kw)
        wanted = dict(term.split("=", 1) for term in (kw.get("label_selector") or "").split(",") if term)
        out["items"] = [o for o in out["items"]
                        if all((o["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())]
        return out

    def delete(self, res: Resource, namespace: str | None, name: str) -> Obj:
        with self.lock:
            self.calls.append({"verb": "delete", "plural": res.plural, "namespace": namespace, "name": name})
            if self.objects.pop((res.plural, namespace or "", name), None) is None:
                raise ApiError(404, "NotFound", f"{res.plural} {name} not found")
        return {}


def test_the_deployment_runs_the_template_with_this_planes_config_token_and_listeners() -> None:
    plane = planes()["infra/public"]
    gw = plane.gateway
    assert gw is not None and gw.labels == (("team", "web"),)
    dep = po.deployment(plane, TEMPLATE, CONTROLLER, TOKEN)
    md = dep["metadata"]
    assert (md["name"], md["namespace"]) == ("public-titanium", "infra")
    assert md["ownerReferences"] == [{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                                      "name": "public", "uid": gw.uid, "controller": True}]
    assert md["labels"]["team"] == "web" and md["labels"][GATEWAY_NAME_LABEL] == "public"
    assert md["labels"][CONTROLLER_LABEL] == controller_label(CONTROLLER)
    assert md["annotations"]["example.com/owner"] == "web-team"  # spec.infrastructure.annotations
    spec = dep["spec"]
    assert spec["replicas"] == 2 and spec["selector"]["matchLabels"] == po.selector(gw, CONTROLLER)
    tmeta = spec["template"]["metadata"]
    assert tmeta["labels"]["extra"] == "yes" and tmeta["labels"]["team"] == "web"
    assert tmeta["annotations"]["gateway.titaniumproxy.com/listeners"] == "8080/http"
    pod = spec["template"]["spec"]
    assert "serviceAccountName" not in pod and pod["automountServiceAccountToken"] is False
    (config,) = [v for v in pod["volumes"] if v["name"] == "config"]
    assert config["projected"]["sources"] == [
        {"configMap": {"name": "public-titanium"}},
        {"configMap": {"name": "public-titanium-part-1", "optional": True}},
        {"configMap": {"name": "public-titanium-part-2", "optional": True}},
        {"secret": {"name": "public-titanium-tls"}}]
    env = pod["containers"][0]["env"]
    assert env[0] == {"name": "TITANIUM_ADMIN_TOKEN",
                      "valueFrom": {"secretKeyRef": {"name": "public-titanium-admin", "key": "token"}}}
    assert [e["name"] for e in env] == ["TITANIUM_ADMIN_TOKEN", "OTHER"]
    assert TEMPLATE.pod["spec"]["serviceAccountName"] == "chart-data-plane"  # the template is not changed
    # the same input, the same object and hash
    assert po.deployment(plane, TEMPLATE, CONTROLLER, TOKEN) == dep


def test_the_service_and_the_admin_token() -> None:
    plane = planes()["infra/public"]
    gw = plane.gateway
    assert gw is not None
    svc = po.service(plane, TEMPLATE, CONTROLLER)
    assert svc["spec"]["type"] == "LoadBalancer" and "loadBalancerIP" not in svc["spec"]
    # the Gateway's listener ports only (its one listener: HTTP on 80, served on 8080)
    assert svc["spec"]["ports"] == [{"name": "http-80", "port": 80, "targetPort": "http-80", "protocol": "TCP"}]
    dep = po.deployment(plane, TEMPLATE, CONTROLLER, TOKEN)
    assert dep["spec"]["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "http-80", "containerPort": 8080, "protocol": "TCP"}]
    assert svc["metadata"]["annotations"]["lb.example.com/scheme"] == "internal"
    import dataclasses

    asked = dataclasses.replace(plane, gateway=dataclasses.replace(gw, address="192.0.2.7"))
    assert po.service(asked, TEMPLATE, CONTROLLER)["spec"]["loadBalancerIP"] == "192.0.2.7"
    assert po.applied_hash(po.service(asked, TEMPLATE, CONTROLLER)) != po.applied_hash(svc)
    secret = po.admin_secret(plane, CONTROLLER, TOKEN)
    token = base64.b64decode(secret["data"]["token"]).decode()
    assert token == hmac.new(TOKEN.encode(), f"infra/public/{gw.uid}".encode(), hashlib.sha256).hexdigest()
    assert token != po.gateway_token(TOKEN, planes()["infra/internal"].gateway)
    assert po.gateway_token("", gw) == ""


@pytest.mark.parametrize(("data", "says"), [
    ({"ports": []}, "ports"),
    ({"ports": [{"name": "http"}]}, "ports[0]"),
    ({"ports": [{"name": "h", "port": 80, "containerPort": 8080}], "service": {"type": "External"}}, "service.type"),
    ({"ports": [{"name": "h", "port": 80, "containerPort": 8080}], "pod": {"spec": {}}}, "containers"),
    ({"ports": [{"name": "h", "port": 80, "containerPort": 8080}], "replicas": -1}, "replicas"),
    ([], "not a mapping"),
])
def test_a_template_the_controller_cannot_use_is_refused_with_why(data: Any, says: str) -> None:
    with pytest.raises(po.TemplateError, match=says.replace("[", r"\[").replace("]", r"\]")):
        po.parse_template(data)


def _provisioner(api: Api) -> Provisioner:
    return Provisioner(api, guard=LeaderGuard(), controller_name=CONTROLLER, template=TEMPLATE, admin_token=TOKEN,
                       registry=Registry())


def _cached(api: Api) -> Any:
    by_kind = {"Deployment": DEPLOYMENTS, "Service": SERVICES}
    return lambda kind, ns, name: api.find(by_kind[kind], ns, name)


def test_ensure_creates_then_writes_only_what_changed_and_never_takes_over() -> None:
    api = Api()
    prov = _provisioner(api)
    plane = planes()["infra/public"]
    assert prov.ensure(plane, _cached(api)) == ""
    # the admin-token Secret's data is never read (its metadata only): a patch that tests the
    # labels (404), then a create
    assert sorted((c["verb"], c["plural"]) for c in api.writes()) == [
        ("create", "deployments"), ("create", "secrets"), ("create", "services"), ("patch", "secrets")]
    assert not [c for c in api.calls if c["verb"] in ("get", "list") and c["plural"] == "secrets"]
    assert [c["verb"] for c in api.calls if c["plural"] == "secrets"][0] == "get_metadata"
    assert api.obj(SECRETS, "infra", "public-titanium-admin")["metadata"]["labels"]["app.kubernetes.io/component"] \
        == "admin-token"
    n = len(api.writes())
    assert prov.ensure(plane, _cached(api)) == ""
    assert len(api.writes()) == n  # nothing changed: nothing written
    # a new term reads the Secret's metadata (its hash label), and writes nothing
    prov.reset()
    assert prov.ensure(plane, _cached(api)) == "" and len(api.writes()) == n
    # a Secret whose token changed behind its back (the hash label no longer matches): written
    api.objects[("secrets", "infra", "public-titanium-admin")]["data"]["token"] = "b3RoZXI="
    api.objects[("secrets", "infra", "public-titanium-admin")]["metadata"]["labels"][po.DATA_HASH_LABEL] = "x"
    prov.reset()
    assert prov.ensure(plane, _cached(api)) == "" and len(api.writes()) == n + 1
    assert api.writes()[-1]["plural"] == "secrets" and api.writes()[-1]["body"][0]["op"] == "test"
    n += 1
    # a new listener set: the Deployment is patched (its pods roll), not re-created
    import dataclasses

    from titanium_gateway.render.result import ListenerKey

    changed = dataclasses.replace(plane, listeners=frozenset({ListenerKey(8080, False), ListenerKey(8443, True)}))
    assert prov.ensure(changed, _cached(api)) == ""
    (patch,) = [c for c in api.writes()[n:] if c["verb"] == "patch"]
    assert patch["plural"] == "deployments" and patch["patch_type"] == "merge"
    dep = api.obj(DEPLOYMENTS, "infra", "public-titanium")
    assert dep["spec"]["template"]["metadata"]["annotations"]["gateway.titaniumproxy.com/listeners"] == \
        "8080/http,8443/https"


def test_an_object_of_that_name_made_by_someone_else_is_left_alone_and_said() -> None:
    api = Api()
    api.put(SERVICES, {"metadata": {"name": "public-titanium", "namespace": "infra", "labels": {"app": "mine"}}})
    problem = _provisioner(api).ensure(planes()["infra/public"], _cached(api))
    assert "Service infra/public-titanium exists and was not made by this controller" in problem
    assert api.obj(SERVICES, "infra", "public-titanium")["metadata"]["labels"] == {"app": "mine"}
    assert not [c for c in api.writes() if c["plural"] == "services"]


def test_an_admin_secret_of_that_name_made_by_someone_else_is_neither_read_nor_changed() -> None:
    api = Api()
    theirs = {"metadata": {"name": "public-titanium-admin", "namespace": "infra", "labels": {"app": "mine"}},
              "data": {"password": "c2VjcmV0"}}
    api.put(SECRETS, copy.deepcopy(theirs))
    problem = _provisioner(api).ensure(planes()["infra/public"], _cached(api))
    assert "Secret infra/public-titanium-admin exists and was not made by this controller" in problem
    assert api.obj(SECRETS, "infra", "public-titanium-admin")["data"] == theirs["data"]
    assert not [c for c in api.calls if c["verb"] == "get" and c["plural"] == "secrets"]


def test_an_admission_refusal_of_a_delete_leaves_the_object_alone() -> None:
    api = Api()
    prov = _provisioner(api)
    refusal = ApiError(403, "Forbidden", 'secrets "x" is forbidden: ValidatingAdmissionPolicy '
                       "'tg-controller-writes' with binding 'tg-controller-writes' denied request: not ours")
    api.delete = lambda *a, **kw: (_ for _ in ()).throw(refusal)  # type: ignore[method-assign]
    prov._delete(SECRETS, "infra", "public-titanium-tls")  # logged, not raised


def test_a_forbidden_write_is_a_problem_told_not_a_crash() -> None:
    api = Api()
    api.fail_next("create", "deployments", ApiError(403, "Forbidden", "no create on deployments"))
    problem = _provisioner(api).ensure(planes()["infra/public"], _cached(api))
    assert problem.startswith("the controller cannot create this Gateway's data plane: 403 Forbidden")


def test_remove_deletes_the_data_planes_of_gateways_that_stay_but_have_none_and_leaves_deleted_ones_to_the_gc() -> None:
    api = Api()
    prov = _provisioner(api)
    ps = planes()
    for plane in ps.values():
        prov.ensure(plane, _cached(api))
        gw = plane.gateway
        assert gw is not None
        api.put(CONFIG_MAPS, {"metadata": {"name": f"{gw.name}-titanium", "namespace": "infra",
                                           "labels": po.plane_labels(gw, CONTROLLER, component="data-plane-config")}})
    other = copy.deepcopy(api.obj(SERVICES, "infra", "public-titanium"))
    other["metadata"]["name"] = "theirs"
    other["metadata"]["labels"][CONTROLLER_LABEL] = controller_label("example.com/other")
    api.put(SERVICES, other)
    deps = [o for (p, _, _), o in api.objects.items() if p == "deployments"]
    svcs = [o for (p, _, _), o in api.objects.items() if p == "services"]
    # internal: still there but no longer ours; public: deleted (the garbage collector's)
    gone = prov.remove(keep=[], present=[("infra", "internal")], deployments=deps, services=svcs)
    assert gone == [("infra", "internal")]
    deleted = sorted((c["plural"], c["name"]) for c in api.calls if c["verb"] == "delete")
    assert deleted == [("configmaps", "internal-titanium"), ("deployments", "internal-titanium"),
                       ("secrets", "internal-titanium-admin"), ("secrets", "internal-titanium-tls"),
                       ("services", "internal-titanium")]
    assert api.find(SERVICES, "infra", "theirs") is not None  # another controller's


def test_the_writers_create_a_gateways_configmaps_and_secret_when_missing() -> None:
    api = Api()
    plane = planes()["infra/public"]
    gw = plane.gateway
    assert gw is not None
    guard = LeaderGuard()
    cm = ConfigMapWriter(api, "infra", "public-titanium", max_parts=2, guard=guard, registry=Registry(),
                         create=lambda n: po.config_meta(gw, n, CONTROLLER, TEMPLATE))
    sec = SecretWriter(api, "infra", "public-titanium-tls", guard=guard, registry=Registry(),
                       create=lambda n: po.tls_meta(gw, n, CONTROLLER, TEMPLATE))
    assert cm.write(plane)  # type: ignore[arg-type]
    assert sec.write(plane)  # type: ignore[arg-type]
    root = api.obj(CONFIG_MAPS, "infra", "public-titanium")
    assert root["data"]["twp.yaml"] == plane.config.decode()
    assert root["metadata"]["labels"]["app.kubernetes.io/component"] == "data-plane-config"
    assert root["metadata"]["ownerReferences"][0]["uid"] == gw.uid
    assert api.obj(SECRETS, "infra", "public-titanium-tls")["metadata"]["ownerReferences"][0]["name"] == "public"
    # confirming never creates parts that were never needed
    cm.confirm(plane.config_hash)
    assert api.find(CONFIG_MAPS, "infra", "public-titanium-part-1") is None
    # a restart with nothing changed writes nothing (read once, same bytes, same owner)
    fresh = ConfigMapWriter(api, "infra", "public-titanium", max_parts=2, guard=guard, registry=Registry(),
                            create=lambda n: po.config_meta(gw, n, CONTROLLER, TEMPLATE))
    n = len(api.writes())
    assert not fresh.write(plane)  # type: ignore[arg-type]
    assert len(api.writes()) == n
