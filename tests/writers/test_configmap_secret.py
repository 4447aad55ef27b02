from __future__ import annotations

import base64
import hashlib

import pytest

from titanium_gateway.kube.api import CONFIG_MAPS, SECRETS, ApiError
from titanium_gateway.metrics import Registry
from titanium_gateway.render.result import Plane
from titanium_gateway.writers.base import LeaderGuard, NotLeader, WriteError
from titanium_gateway.writers.configmap import ConfigMapWriter
from titanium_gateway.writers.secret import SecretWriter

from .fakes import RecordingApi

NS = "gw"


def result(root: str, parts: list[str] = (), tls: dict[str, bytes] | None = None,  # type: ignore[assignment]
           delivery_error: str = "") -> Plane:
    data = root.encode()
    return Plane("", data, hashlib.sha256(data).hexdigest(),
                 parts=tuple((f"twp.part-{i}.yaml", p.encode()) for i, p in enumerate(parts, 1)),
                 tls_files=tls or {}, delivery_error=delivery_error)


@pytest.fixture
def api() -> RecordingApi:
    a = RecordingApi()
    for name in ["tp", *(f"tp-part-{i}" for i in range(1, 4))]:
        a.put(CONFIG_MAPS, {"metadata": {"name": name, "namespace": NS}})
    a.put(SECRETS, {"metadata": {"name": "tp-tls", "namespace": NS}, "type": "Opaque"})
    return a


def cm_writer(api: RecordingApi, leader: list[bool] | None = None) -> ConfigMapWriter:
    flag = leader if leader is not None else [True]
    return ConfigMapWriter(api, NS, "tp", max_parts=3, guard=LeaderGuard(lambda: flag[0]), registry=Registry())


def data(api: RecordingApi, name: str) -> dict[str, str]:
    return api.obj(CONFIG_MAPS, NS, name).get("data") or {}


def test_parts_before_root_and_only_on_change(api: RecordingApi) -> None:
    w = cm_writer(api)
    assert w.write(result("root1", ["p1", "p2"]))
    names = [c["name"] for c in api.writes("configmaps")]
    assert names == ["tp-part-1", "tp-part-2", "tp"]
    assert data(api, "tp") == {"twp.yaml": "root1"} and data(api, "tp-part-2") == {"twp.part-2.yaml": "p2"}
    assert not w.write(result("root1", ["p1", "p2"]))
    assert len(api.writes("configmaps")) == 3
    assert w.write(result("root2", ["p1", "p2x"]))  # only the changed part, then the root
    assert [c["name"] for c in api.writes("configmaps")][3:] == ["tp-part-2", "tp"]
    # each object read once, then updated whole with the metadata read or last written
    assert [c["verb"] for c in api.calls if c["verb"] != "get"] == ["replace"] * 5
    assert len([c for c in api.calls if c["verb"] == "get"]) == 3


def test_an_update_keeps_the_metadata_and_falls_back_to_a_patch_after_a_change(api: RecordingApi) -> None:
    api.put(CONFIG_MAPS, {"metadata": {"name": "tp", "namespace": NS, "labels": {"app": "chart"},
                                       "annotations": {"note": "kept"}}})
    w = cm_writer(api)
    assert w.write(result("root1"))
    cm = api.obj(CONFIG_MAPS, NS, "tp")
    assert cm["metadata"]["labels"] == {"app": "chart"} and cm["metadata"]["annotations"] == {"note": "kept"}
    sent = [c for c in api.calls if c["verb"] == "replace"][-1]["body"]["metadata"]
    assert sent["resourceVersion"] != cm["metadata"]["resourceVersion"]  # the precondition: the version read
    # someone else changes the object (a helm upgrade adds a label): the update meets 409, the
    # data is patched instead, and the new label stays
    api.put(CONFIG_MAPS, {**cm, "metadata": {**cm["metadata"], "labels": {"app": "chart", "new": "1"}}})
    assert w.write(result("root2"))
    assert [c["verb"] for c in api.calls if c["verb"] != "get"][-2:] == ["replace", "patch"]
    cm = api.obj(CONFIG_MAPS, NS, "tp")
    assert cm["data"] == {"twp.yaml": "root2"} and cm["metadata"]["labels"] == {"app": "chart", "new": "1"}
    assert w.write(result("root3"))  # and updated again with what the patch returned
    assert [c["verb"] for c in api.calls if c["verb"] != "get"][-1] == "replace"
    assert api.obj(CONFIG_MAPS, NS, "tp")["data"] == {"twp.yaml": "root3"}


def test_dropped_part_is_emptied_only_after_confirmation(api: RecordingApi) -> None:
    w = cm_writer(api)
    w.write(result("r1", ["p1", "p2"]))
    r2 = result("r2", ["p1"])
    w.write(r2)
    assert data(api, "tp-part-2") == {"twp.part-2.yaml": "p2"}  # still there: pods may not have r2 yet
    assert w.confirm(result("r1").config_hash) == 0  # confirming an older root empties nothing
    assert data(api, "tp-part-2") == {"twp.part-2.yaml": "p2"}
    assert w.confirm(r2.config_hash) >= 1
    assert data(api, "tp-part-2") == {} and api.find(CONFIG_MAPS, NS, "tp-part-2") is not None  # emptied, not deleted
    n = len(api.writes())
    assert w.confirm(r2.config_hash) == 0 and len(api.writes()) == n


def test_not_leader_writes_nothing(api: RecordingApi) -> None:
    leader = [False]
    w = cm_writer(api, leader)
    with pytest.raises(NotLeader):
        w.write(result("r"))
    assert api.writes() == []


def test_missing_configmap_is_a_clear_error_never_created(api: RecordingApi) -> None:
    del api.objects[("configmaps", NS, "tp")]
    w = cm_writer(api)
    with pytest.raises(WriteError, match="pre-creates"):
        w.write(result("r"))
    assert not [c for c in api.calls if c["verb"] == "create"]
    api.put(CONFIG_MAPS, {"metadata": {"name": "tp", "namespace": NS}})
    assert w.write(result("r"))  # retried next time (nothing cached after a failure)


def test_delivery_error_writes_nothing(api: RecordingApi) -> None:
    assert not cm_writer(api).write(result("r", delivery_error="too big"))
    assert api.writes() == []


def test_a_gateways_own_configmaps_are_patched_never_updated(api: RecordingApi) -> None:
    # (RBAC grants patch, not update, on the ConfigMaps of Gateways' own data planes)
    owner = [{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "name": "gw", "uid": "u1"}]
    w = ConfigMapWriter(api, NS, "tp", max_parts=3, guard=LeaderGuard(), registry=Registry(),
                        create=lambda n: {"name": n, "namespace": NS, "ownerReferences": owner})
    api.put(CONFIG_MAPS, {"metadata": {"name": "tp", "namespace": NS, "ownerReferences": owner}})
    assert w.write(result("root1", ["p1"]))
    assert w.write(result("root2", ["p1"]))
    assert {c["verb"] for c in api.calls if c["verb"] != "get"} == {"patch"}
    assert data(api, "tp") == {"twp.yaml": "root2"}


def test_transient_error_is_retried_next_time(api: RecordingApi) -> None:
    w = cm_writer(api)
    api.fail_next("replace", "configmaps", ApiError(500, "InternalError"))
    with pytest.raises(ApiError):
        w.write(result("r"))
    assert w.write(result("r"))


def test_secret_base64_only_on_change(api: RecordingApi) -> None:
    w = SecretWriter(api, NS, "tp-tls", guard=LeaderGuard(), registry=Registry())
    files = {"apps.shop.pfx": b"\x00\x01pfx", "ca.pem": b"pem"}
    assert w.write(result("r", tls=files))
    sec = api.obj(SECRETS, NS, "tp-tls")
    assert sec["data"] == {k: base64.b64encode(v).decode() for k, v in files.items()}
    assert sec["type"] == "Opaque"
    assert not w.write(result("r2", tls=dict(files)))
    assert w.write(result("r", tls={"apps.shop.pfx": b"rotated"}))
    assert api.obj(SECRETS, NS, "tp-tls")["data"]["apps.shop.pfx"] == base64.b64encode(b"rotated").decode()
    assert len(api.writes("secrets")) == 2


def test_secret_file_dropped_only_after_the_config_is_confirmed(api: RecordingApi) -> None:
    w = SecretWriter(api, NS, "tp-tls", guard=LeaderGuard(), registry=Registry())
    w.write(result("r1", tls={"a.pfx": b"a", "b.pfx": b"b"}))
    r2 = result("r2", tls={"a.pfx": b"a"})
    w.write(r2)
    assert set(api.obj(SECRETS, NS, "tp-tls")["data"]) == {"a.pfx", "b.pfx"}  # pods may still use b
    assert not w.confirm(result("r1").config_hash)
    assert w.confirm(r2.config_hash)
    assert set(api.obj(SECRETS, NS, "tp-tls")["data"]) == {"a.pfx"}
    n = len(api.writes("secrets"))
    assert not w.write(r2) and not w.confirm(r2.config_hash)
    assert len(api.writes("secrets")) == n
    # named again before confirmation: simply kept
    w.write(result("r3", tls={"a.pfx": b"a", "c.pfx": b"c"}))
    w.write(result("r4", tls={"a.pfx": b"a"}))
    w.write(result("r5", tls={"a.pfx": b"a", "c.pfx": b"c"}))
    assert not w.confirm(result("r4", tls={"a.pfx": b"a"}).config_hash)
    assert set(api.obj(SECRETS, NS, "tp-tls")["data"]) == {"a.pfx", "c.pfx"}


def test_secret_missing_is_clear(api: RecordingApi) -> None:
    del api.objects[("secrets", NS, "tp-tls")]
    with pytest.raises(WriteError, match="tp-tls"):
        SecretWriter(api, NS, "tp-tls", guard=LeaderGuard(), registry=Registry()).write(result("r"))


def test_configmap_writer_remembers_digests_not_texts() -> None:
    import re

    from titanium_gateway.writers.base import LeaderGuard as _LG
    from titanium_gateway.writers.configmap import EMPTY, ConfigMapWriter, data_digest

    api = RecordingApi()
    for name in ("tp", "tp-part-1", "tp-part-2"):
        api.put(CONFIG_MAPS, {"metadata": {"name": name, "namespace": "gw"}})
    w = ConfigMapWriter(api, "gw", "tp", max_parts=2, guard=_LG(), registry=Registry())
    big = b"x" * 100_000
    res = Plane("", b"root", "h1", parts=(("twp.part-1.yaml", big),))
    assert w.write(res)
    assert all(re.fullmatch(r"[0-9a-f]{64}", d) for d in w._known.values())
    assert w._known["tp-part-1"] == data_digest({"twp.part-1.yaml": big}) != EMPTY
    n = len(api.writes())
    assert not w.write(Plane("", b"root", "h1", parts=(("twp.part-1.yaml", b"x" * 100_000),)))
    assert len(api.writes()) == n
    assert api.obj(CONFIG_MAPS, "gw", "tp-part-1")["data"] == {"twp.part-1.yaml": big.decode()}


def test_a_complete_config_needs_no_part_bytes_and_released_bytes_are_never_written(api: RecordingApi) -> None:
    import dataclasses

    w = cm_writer(api)
    full = result("root1", ["p1", "p2"])
    assert w.write(full) and w.is_complete(full.config_hash)
    released = dataclasses.replace(full, parts=tuple((n, b"") for n, _ in full.parts))
    n = len(api.writes())
    assert not w.write(released) and len(api.writes()) == n  # written already: bytes not looked at
    w.reset()  # a new leadership term: nothing is known to be written
    assert not w.is_complete(full.config_hash)
    with pytest.raises(WriteError, match="no bytes"):
        w.write(released)
    assert data(api, "tp-part-1") == {"twp.part-1.yaml": "p1"}  # never overwritten with nothing
    # after a reset the objects are read again: they hold these very bytes, so nothing is written
    assert not w.write(full) and w.is_complete(full.config_hash) and len(api.writes()) == n


def plane_secret_writer(api: RecordingApi) -> SecretWriter:
    """The TLS Secret writer of a Gateway's own data plane (created when missing)."""
    from titanium_gateway.render.planes import controller_label

    labels = {"app.kubernetes.io/managed-by": "titanium-gateway",
              "gateway.titaniumproxy.com/controller": controller_label("example.com/gw"),
              "gateway.networking.k8s.io/gateway-name": "web"}
    owner = [{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "name": "web", "uid": "u1",
              "controller": True}]
    return SecretWriter(api, "apps", "web-titanium-tls", guard=LeaderGuard(), registry=Registry(),
                        create=lambda n: {"name": n, "namespace": "apps", "labels": dict(labels),
                                          "ownerReferences": owner})


def test_a_gateway_plane_secret_is_never_read_and_a_new_term_writes_nothing() -> None:
    api = RecordingApi()
    w = plane_secret_writer(api)
    assert w.write(result("r", tls={"a.pfx": b"A"}))
    assert api.obj(SECRETS, "apps", "web-titanium-tls")["data"] == {"a.pfx": base64.b64encode(b"A").decode()}
    w.reset()  # a new term: its metadata (the hash label) says it is written
    assert not w.write(result("r", tls={"a.pfx": b"A"}))
    assert w.write(result("r", tls={"a.pfx": b"B"}))
    assert not [c for c in api.calls if c["verb"] == "get" and c["plural"] == "secrets"]


def test_a_secret_of_that_name_someone_else_made_is_refused_not_read_nor_changed() -> None:
    from titanium_gateway.writers.base import Refused

    api = RecordingApi()
    api.put(SECRETS, {"metadata": {"name": "web-titanium-tls", "namespace": "apps", "labels": {"app": "theirs"}},
                      "data": {"password": "c2VjcmV0"}})
    with pytest.raises(Refused, match="exists and was not made by this controller"):
        plane_secret_writer(api).write(result("r", tls={"a.pfx": b"A"}))
    assert api.obj(SECRETS, "apps", "web-titanium-tls")["data"] == {"password": "c2VjcmV0"}
    assert not [c for c in api.calls if c["verb"] == "get" and c["plural"] == "secrets"]
