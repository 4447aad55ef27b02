from __future__ import annotations

import pytest

from titanium_gateway.kube.store import Store, namespace_index, object_key, snapshot_all, split_key


def obj(name: str, ns: str | None = "default", rv: str = "1", **labels: str) -> dict:
    md: dict = {"name": name, "resourceVersion": rv, "labels": labels,
                "managedFields": [{"manager": "kubectl"}]}
    if ns:
        md["namespace"] = ns
    return {"kind": "Thing", "metadata": md, "spec": {"x": [1, 2]}}


def app_index(o: dict) -> list[str]:
    app = o["metadata"].get("labels", {}).get("app")
    return [app] if app else []


def test_keys_and_managed_fields_dropped_without_deep_copy() -> None:
    s = Store()
    o = obj("a")
    old, stored = s.upsert(o)
    assert old is None
    assert object_key(o) == "default/a" and object_key(obj("c", ns=None)) == "c"
    assert split_key("default/a") == ("default", "a") and split_key("c") == (None, "c")
    assert "managedFields" not in stored["metadata"]
    assert "managedFields" in o["metadata"]  # the caller's object is untouched
    assert stored["spec"] is o["spec"]  # shallow: the body is shared
    assert s.get("default/a") is stored and s.get_object("default", "a") is stored
    assert s.resource_version == "1"


def test_indexes_follow_updates_and_deletes() -> None:
    s = Store({"app": app_index, "namespace": namespace_index})
    s.upsert(obj("a", app="web"))
    s.upsert(obj("b", ns="other", app="web"))
    assert [o["metadata"]["name"] for o in s.by_index("app", "web")] == ["a", "b"]
    s.upsert(obj("a", rv="2", app="db"))
    assert s.index_keys("app", "web") == ["other/b"]
    assert s.index_keys("app", "db") == ["default/a"]
    assert s.delete("other/b") is not None
    assert s.index_values("app") == ["db"]
    assert s.by_index("namespace", "default")[0]["metadata"]["resourceVersion"] == "2"
    assert s.delete("other/b") is None
    with pytest.raises(KeyError):
        s.by_index("nope", "x")
    s.add_indexers({"name": lambda o: [o["metadata"]["name"]]})
    assert s.index_keys("name", "a") == ["default/a"]


def test_replace_reports_added_updated_deleted() -> None:
    s = Store()
    s.upsert(obj("a"))
    s.upsert(obj("b"))
    s.upsert(obj("c"))
    res = s.replace([obj("a"), obj("b", rv="5"), obj("d", rv="6")], "10")
    assert [o["metadata"]["name"] for o in res.added] == ["d"]
    assert [(o["metadata"]["name"], n["metadata"]["resourceVersion"]) for o, n in res.updated] == [("b", "5")]
    assert [o["metadata"]["name"] for o in res.deleted] == ["c"]
    assert sorted(s.keys()) == ["default/a", "default/b", "default/d"]
    assert s.resource_version == "10"


def test_replace_scoped_to_namespace() -> None:
    s = Store()
    s.upsert(obj("a", ns="n1"))
    s.upsert(obj("b", ns="n2"))
    res = s.replace([], "3", namespace="n1")
    assert [o["metadata"]["name"] for o in res.deleted] == ["a"]
    assert s.keys() == ["n2/b"]


def test_snapshot_is_frozen_and_read_only() -> None:
    s = Store()
    s.upsert(obj("a"))
    snap = s.snapshot()
    snap2 = s.snapshot()
    s.upsert(obj("b"))
    s.delete("default/a")
    assert list(snap) == ["default/a"]
    assert list(snap2) == ["default/a"]
    assert list(s.snapshot()) == ["default/b"]
    with pytest.raises(TypeError):
        snap["x"] = {}  # type: ignore[index]
    both = snapshot_all({"s": s, "t": Store()})
    assert list(both["s"]) == ["default/b"] and dict(both["t"]) == {}


def test_snapshot_shares_objects_no_deep_copy() -> None:
    s = Store()
    _, stored = s.upsert(obj("a"))
    snap = s.snapshot()
    s.upsert(obj("b"))  # triggers the copy-on-write of the dict only
    assert snap["default/a"] is stored


def test_an_update_set_uncounted_replaces_the_object_but_is_no_change() -> None:
    s = Store()
    s.upsert({"metadata": {"name": "a", "resourceVersion": "1"}})
    s.set_uncounted(lambda old, new: new["metadata"].get("echo") is True)
    s.upsert({"metadata": {"name": "a", "resourceVersion": "2", "echo": True}})
    assert s.changes == 1 and s.get("a")["metadata"]["resourceVersion"] == "2"
    s.upsert({"metadata": {"name": "a", "resourceVersion": "3"}})
    s.upsert({"metadata": {"name": "b", "resourceVersion": "4", "echo": True}})  # an add always counts
    s.delete("a")
    assert s.changes == 4
