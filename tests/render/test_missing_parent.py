"""An HTTPRoute whose parentRef names a Gateway that does not exist gets a Warning Event,
reason NoMatchingParent (the Gateway API's reason for a parent that does not exist): no
controller owns that parent, so no status entry can say it, and the route would leave no trace."""

from __future__ import annotations

from tests.render.core_fixtures import base_objects, gateway, route, run
from titanium_gateway.render import render
from titanium_gateway.render.memo import RenderCache
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import EventRecord, RenderResult
from titanium_gateway.render.snapshot import Snapshot


def parent_events(result: RenderResult) -> list[EventRecord]:
    return [e for e in result.events if e.reason == "NoMatchingParent"]


def test_a_route_to_a_gateway_that_does_not_exist_gets_an_event() -> None:
    lost = route("lost", parents=[{"name": "webb"}])
    lost["metadata"]["uid"] = "u-lost"
    result = run([*base_objects(), lost])
    (ev,) = parent_events(result)
    assert (ev.kind, ev.namespace, ev.name, ev.type, ev.uid) == ("HTTPRoute", "apps", "lost", "Warning", "u-lost")
    assert ev.message == "parentRefs[0]: Gateway apps/webb does not exist, so nothing serves the route through it"
    # and no status entry of ours: the parent is nobody's
    assert not [s for s in result.statuses if s.kind == "HTTPRoute" and s.name == "lost"]


def test_every_missing_gateway_of_a_route_is_named_and_existing_ones_are_not() -> None:
    theirs = gateway("theirs", cls="other-class")
    both = route("both", parents=[{"name": "web"}, {"name": "gone", "namespace": "infra"},
                                  {"name": "theirs"}, {"name": "also-gone", "sectionName": "http"},
                                  {"name": "mesh", "kind": "Service", "group": ""}])
    (ev,) = parent_events(run([*base_objects(), theirs, both]))
    assert ev.message == ("parentRefs[1]: Gateway infra/gone does not exist; parentRefs[3]: Gateway apps/also-gone "
                          "does not exist, so nothing serves the route through them")


def test_no_event_when_every_parent_exists_whoever_owns_it() -> None:
    assert parent_events(run([*base_objects(), gateway("theirs", cls="other-class"),
                              route("shop"), route("other", parents=[{"name": "theirs"}])])) == []


def test_the_event_follows_the_gateway_with_a_warm_cache() -> None:
    """The HTTPRoute translation is memoized on our Gateways; the missing-parent check is not,
    so a Gateway of another class appearing (or going) is seen at once."""
    cache = RenderCache()
    lost = route("lost", parents=[{"name": "later"}])
    lost["metadata"]["resourceVersion"] = "7"
    objects = [*base_objects(), lost]
    for obj in objects:
        obj["metadata"].setdefault("resourceVersion", "1")
        obj["metadata"].setdefault("uid", obj["metadata"]["name"])
    later = gateway("later", cls="other-class")
    later["metadata"].update(resourceVersion="9", uid="later")
    assert len(parent_events(render(Snapshot.from_objects(objects), RenderOptions(), cache))) == 1
    assert parent_events(render(Snapshot.from_objects([*objects, later]), RenderOptions(), cache)) == []
    assert len(parent_events(render(Snapshot.from_objects(objects), RenderOptions(), cache))) == 1


def test_no_event_while_the_route_or_its_namespace_is_being_deleted() -> None:
    """Deleting a namespace deletes its Gateways and routes in any order: a route whose Gateway
    went first is not reported (the Event could not even be created there)."""
    lost = route("lost", parents=[{"name": "gone"}])
    terminating = {"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "apps", "deletionTimestamp": "2024-01-03T00:00:00Z"},
                   "status": {"phase": "Terminating"}}
    assert parent_events(run([*base_objects(), terminating, lost])) == []
    deleting = route("lost", parents=[{"name": "gone"}])
    deleting["metadata"]["deletionTimestamp"] = "2024-01-03T00:00:00Z"
    assert parent_events(run([*base_objects(), deleting])) == []
    assert len(parent_events(run([*base_objects(), lost]))) == 1
