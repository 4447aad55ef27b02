"""A new term (a restart, a failover) writes nothing that is already there: each writer reads its
object once by name before its first write of the term and skips identical content, so
``titanium_config_writes_total`` stays flat (docs/operations.md) and the API server sees no
PATCH that changes nothing. Content that differs is still written, and an object the writer
cannot read is written as before."""

from __future__ import annotations

import hashlib

import pytest

from titanium_gateway.kube.api import CONFIG_MAPS, DEPLOYMENTS, SECRETS, ApiError
from titanium_gateway.metrics import Registry
from titanium_gateway.render.result import ListenerKey, Plane
from titanium_gateway.writers.base import LeaderGuard, WriteError
from titanium_gateway.writers.configmap import ConfigMapWriter
from titanium_gateway.writers.deployment import LISTENERS_ANNOTATION, DeploymentStamper
from titanium_gateway.writers.secret import SecretWriter

from .fakes import RecordingApi

NS = "gw"
PARTS = 4


def result(root: str, parts: list[str], tls: dict[str, bytes] | None = None) -> Plane:
    data = root.encode()
    return Plane("", data, hashlib.sha256(data).hexdigest(),
                 parts=tuple((f"twp.part-{i}.yaml", p.encode()) for i, p in enumerate(parts, 1)), tls_files=tls or {})


@pytest.fixture
def api() -> RecordingApi:
    a = RecordingApi()
    for name in ["tp", *(f"tp-part-{i}" for i in range(1, PARTS + 1))]:
        a.put(CONFIG_MAPS, {"metadata": {"name": name, "namespace": NS}})
    a.put(SECRETS, {"metadata": {"name": "tp-tls", "namespace": NS}, "type": "Opaque"})
    a.put(DEPLOYMENTS, {"metadata": {"name": "dp", "namespace": NS}, "spec": {"template": {"metadata": {}}}})
    return a


def writers(api: RecordingApi) -> tuple[ConfigMapWriter, SecretWriter, DeploymentStamper, Registry]:
    """The writers of one controller process (a fresh one: a restart)."""
    reg = Registry()
    guard = LeaderGuard()
    return (ConfigMapWriter(api, NS, "tp", max_parts=PARTS, guard=guard, registry=reg),
            SecretWriter(api, NS, "tp-tls", guard=guard, registry=reg),
            DeploymentStamper(api, NS, "dp", guard=guard), reg)


def run_term(api: RecordingApi, res: Plane, listeners: set[ListenerKey]) -> Registry:
    """What a reconcile writes, then what the confirmation by every pod empties."""
    cm, sec, dep, reg = writers(api)
    sec.write(res)
    cm.write(res)
    dep.stamp(listeners)
    cm.confirm(res.config_hash)
    sec.confirm(res.config_hash)
    return reg


def gets(api: RecordingApi, since: int = 0) -> list[str]:
    return [f"{c['plural']}/{c['name']}" for c in api.calls[since:] if c["verb"] == "get"]


LISTENERS = {ListenerKey(8080, False), ListenerKey(8443, True)}


def test_a_restart_with_nothing_changed_writes_nothing(api: RecordingApi) -> None:
    res = result("root", ["p1", "p2"], {"apps.shop-tls.pfx": b"pfx bytes"})
    first = run_term(api, res, LISTENERS)
    assert first.value("titanium_config_writes_total") == 4  # part-1, part-2, root, Secret
    assert len(api.writes("deployments")) == 1
    n, mark = len(api.writes()), len(api.calls)

    again = run_term(api, res, LISTENERS)  # a new process: nothing known, everything read once
    assert api.writes()[n:] == []
    assert again.value("titanium_config_writes_total") == 0
    # one GET per object: the root, every part (listed, and the unlisted ones it would empty),
    # the Secret and the Deployment
    assert sorted(gets(api, mark)) == sorted(
        ["configmaps/tp", *(f"configmaps/tp-part-{i}" for i in range(1, PARTS + 1)),
         "secrets/tp-tls", "deployments/dp"])


def test_a_fresh_install_without_certificates_leaves_the_empty_secret_alone(api: RecordingApi) -> None:
    reg = run_term(api, result("root", ["p1"]), set())
    # the root and part 1 are written; the empty Secret, the empty unlisted parts and the
    # template without a stamp (no listener) already say what this config needs
    assert [c["name"] for c in api.writes()] == ["tp-part-1", "tp"]
    assert reg.value("titanium_config_writes_total", object="tls-secret") == 0


def test_only_what_differs_is_written_after_a_restart(api: RecordingApi) -> None:
    run_term(api, result("root", ["p1", "p2", "p3"], {"a.pfx": b"a"}), {ListenerKey(8080, False)})
    n = len(api.writes())
    # another config: part 1 unchanged, part 2 changed, part 3 dropped, a new listener, one
    # more certificate
    res = result("root2", ["p1", "p2-new"], {"a.pfx": b"a", "b.pfx": b"b"})
    cm, sec, dep, reg = writers(api)
    assert sec.write(res)
    assert cm.write(res)
    assert dep.stamp(LISTENERS)
    assert [f"{c['plural']}/{c['name']}" for c in api.writes()[n:]] == [
        "secrets/tp-tls", "configmaps/tp-part-2", "configmaps/tp", "deployments/dp"]
    assert api.obj(CONFIG_MAPS, NS, "tp-part-3")["data"] == {"twp.part-3.yaml": "p3"}  # kept until confirmed
    assert cm.confirm(res.config_hash) == 2  # parts 3 and 4 were stale; part 4 was empty already
    assert api.obj(CONFIG_MAPS, NS, "tp-part-3")["data"] == {}
    assert [c["name"] for c in api.writes()[n + 4:]] == ["tp-part-3"]
    assert reg.value("titanium_config_writes_total") == 4  # Secret, part 2, root, part 3


def test_a_file_the_new_config_drops_stays_until_confirmed_after_a_restart(api: RecordingApi) -> None:
    run_term(api, result("r1", ["p"], {"old.pfx": b"o", "kept.pfx": b"k"}), set())
    n = len(api.writes())
    res = result("r2", ["p"], {"kept.pfx": b"k"})
    _, sec, _, _ = writers(api)
    # the Secret holds what r2 names plus a file pods on r1 may still read: nothing to write yet
    assert not sec.write(res) and api.writes()[n:] == []
    assert sec.confirm(res.config_hash)
    assert sorted(api.obj(SECRETS, NS, "tp-tls")["data"]) == ["kept.pfx"]


def test_each_object_is_read_once_per_term(api: RecordingApi) -> None:
    cm, sec, dep, _ = writers(api)
    for i in range(3):
        res = result(f"root{i}", [f"p{i}"], {"x.pfx": str(i).encode()})
        sec.write(res)
        cm.write(res)
        dep.stamp({ListenerKey(8080 + i, False)})
    got = gets(api)
    assert len(got) == len(set(got))
    for w in (cm, sec, dep):  # a new term reads again: another replica may have written meanwhile
        w.reset()
    mark = len(api.calls)
    api.put(CONFIG_MAPS, {"metadata": {"name": "tp", "namespace": NS}, "data": {"twp.yaml": "someone else"}})
    assert cm.write(result("root2", ["p2"]))  # the root differs from what the server holds now
    assert "configmaps/tp" in gets(api, mark)
    assert api.obj(CONFIG_MAPS, NS, "tp")["data"] == {"twp.yaml": "root2"}


def test_a_stamp_already_on_the_template_is_not_patched(api: RecordingApi) -> None:
    api.put(DEPLOYMENTS, {"metadata": {"name": "dp", "namespace": NS}, "spec": {"template": {"metadata": {
        "annotations": {LISTENERS_ANNOTATION: "8080/http,8443/https"}}}}})
    _, _, dep, _ = writers(api)
    assert not dep.stamp(LISTENERS) and api.writes() == []
    assert dep.stamp({ListenerKey(8080, False)})  # a change is stamped
    assert not dep.stamp({ListenerKey(8080, False)})
    # an empty set over a non-empty stamp is a change too (the pods must drop the listeners)
    assert dep.stamp(set())
    ann = api.obj(DEPLOYMENTS, NS, "dp")["spec"]["template"]["metadata"]["annotations"]
    assert ann[LISTENERS_ANNOTATION] == ""


def test_unreadable_objects_are_written_as_before(api: RecordingApi) -> None:
    res = result("root", ["p1"], {"a.pfx": b"a"})
    run_term(api, res, LISTENERS)
    n = len(api.writes())
    forbidden = ApiError(403, "Forbidden", "cannot get")
    for plural in ("configmaps", "configmaps", "secrets", "deployments"):
        api.fail_next("get", plural, forbidden)
    cm, sec, dep, _ = writers(api)
    assert sec.write(res)  # could not read: written (the server finds nothing to change)
    cm.write(res)
    assert dep.stamp(LISTENERS)
    assert [c["name"] for c in api.writes()[n:]] == ["tp-tls", "tp-part-1", "tp", "dp"]


def test_a_missing_object_is_the_clear_error_of_a_missing_object(api: RecordingApi) -> None:
    del api.objects[("configmaps", NS, "tp-part-1")]
    del api.objects[("secrets", NS, "tp-tls")]
    del api.objects[("deployments", NS, "dp")]
    cm, sec, dep, _ = writers(api)
    res = result("root", ["p1"], {"a.pfx": b"a"})
    with pytest.raises(WriteError, match="ConfigMap gw/tp-part-1 does not exist"):
        cm.write(res)
    with pytest.raises(WriteError, match="Secret gw/tp-tls does not exist"):
        sec.write(res)
    with pytest.raises(WriteError, match="Deployment gw/dp does not exist"):
        dep.stamp(LISTENERS)
    assert api.writes() == []
