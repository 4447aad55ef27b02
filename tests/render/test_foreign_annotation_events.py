"""A served Ingress's ``nginx.ingress.kubernetes.io/`` annotations that change security or
routing and are not in force here raise one ``ForeignAnnotation`` Warning Event per Ingress
(docs/migrating-from-ingress-nginx.md, docs/ingress.md "Events")."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.render.test_ingress import CLASS, FOREIGN_CLASS, ing, service
from titanium_gateway.render import render
from titanium_gateway.render.ingress import nginx as na
from titanium_gateway.render.memo import RenderCache
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import EventRecord, RenderResult
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.writers.events import fit_bytes

P = na.PREFIX
SECURITY = {P + "auth-type": "basic", P + "auth-secret": "basic-auth", P + "whitelist-source-range": "10.0.0.0/8"}


def render_objects(*objects: Any, cache: RenderCache | None = None) -> RenderResult:
    flat: list[Any] = []
    for obj in objects:
        flat.extend(obj if isinstance(obj, list) else [obj])
    return render(Snapshot.from_objects(flat), RenderOptions(), cache)


def foreign(result: RenderResult) -> list[EventRecord]:
    return [e for e in result.events if e.reason == na.FOREIGN_ANNOTATION_REASON]


def test_a_served_ingress_gets_one_event_naming_what_is_not_enforced() -> None:
    result = render_objects(CLASS, service("shop"), ing("web", annotations=SECURITY))
    (event,) = foreign(result)
    assert (event.kind, event.namespace, event.name, event.type) == ("Ingress", "apps", "web", "Warning")
    assert event.uid == "uid-web" and event.api_version == "networking.k8s.io/v1"
    assert event.message.startswith(
        f"3 {P} annotations are not enforced here: auth-secret, auth-type, whitelist-source-range. (1) ")
    for name in SECURITY:
        assert f"{name} " in event.message
    assert "titanium.io/whitelist-source-range: '10.0.0.0/8'" in event.message  # the equivalent is named
    assert len(event.message.encode()) <= 1024
    # the Ingress is served as before: its routes forward
    assert b"svc-apps.shop.8080" in result.config


def test_one_annotation_is_its_own_message() -> None:
    result = render_objects(CLASS, service("shop"), ing("web", annotations={P + "whitelist-source-range": "10.0.0.0/8"}))
    (event,) = foreign(result)
    assert event.message == (
        "nginx.ingress.kubernetes.io/whitelist-source-range '10.0.0.0/8' is not enforced here (a client address "
        "allow-list): only titanium.io/ annotations are read; the equivalent is titanium.io/whitelist-source-range: "
        "'10.0.0.0/8'")


def test_no_event_for_an_ingress_of_another_class_or_without_such_annotations() -> None:
    other = ing("other", cls="nginx", annotations=SECURITY)
    # tuning only, or without effect here (proxy-body-size, a request limit, is security-relevant: it does raise one)
    harmless = ing("tuned", host="b.example.com", annotations={P + "proxy-read-timeout": "30", P + "proxy-buffering": "off",
                                                               P + "load-balance": "ewma"})
    in_force = ing("ok", host="c.example.com", annotations={P + "whitelist-source-range": "10.0.0.0/8",
                                                            "titanium.io/whitelist-source-range": "10.0.0.0/8"})
    result = render_objects(CLASS, FOREIGN_CLASS, service("shop"), other, harmless, in_force)
    assert foreign(result) == []
    limited = render_objects(CLASS, service("shop"), ing("web", annotations={P + "proxy-body-size": "8m"}))
    assert [e.message for e in foreign(limited)] == [
        "nginx.ingress.kubernetes.io/proxy-body-size '8m' is not enforced here (a request body size limit): only"
        " titanium.io/ annotations are read; the equivalent is titanium.io/proxy-body-size: '8m'"]


def test_the_event_is_stable_and_the_same_with_a_warm_cache() -> None:
    objects = (CLASS, service("shop"), ing("web", annotations={**SECURITY, P + "configuration-snippet": "deny all;"}))
    cache = RenderCache()
    first = render_objects(*objects, cache=cache)
    again = render_objects(*objects, cache=cache)
    assert foreign(first) == foreign(again) == foreign(render_objects(*reversed(objects)))
    assert len(foreign(first)) == 1


def test_many_annotations_fit_the_event_note_with_whole_entries() -> None:
    many = {P + k: v for k, v in {
        "auth-type": "basic", "auth-secret": "s", "auth-realm": "r", "auth-url": "https://auth.example.com/check",
        "auth-signin": "https://auth.example.com/start", "whitelist-source-range": "10.0.0.0/8",
        "denylist-source-range": "10.1.0.0/16", "ssl-redirect": "true", "force-ssl-redirect": "true",
        "configuration-snippet": "more_set_headers 'X: y';", "server-snippet": "location /x { deny all; }",
        "use-regex": "true", "rewrite-target": "/$2", "canary": "true", "canary-weight": "10",
    }.items()}
    result = render_objects(CLASS, service("shop"), ing("web", annotations=many, paths=[
        {"path": "/api(/|$)(.*)", "pathType": "ImplementationSpecific",
         "backend": {"service": {"name": "shop", "port": {"number": 8080}}}}]))
    (event,) = foreign(result)
    note = event.message
    assert len(note.encode()) <= 1024 and fit_bytes(note, 1024) == note  # the writer never cuts it
    assert note.endswith(" more not shown)")
    assert "auth-type" in note.split(". (1) ")[0] and "canary" in note.split(". (1) ")[0]  # every name listed


_names = st.sampled_from(sorted(k[len(P):] for k in na.KNOWN))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.dictionaries(_names, st.sampled_from(["true", "basic", "10.0.0.0/8", "/$1", "x" * 300, "é" * 200]),
                       max_size=12))
def test_the_note_always_fits_and_names_every_annotation_when_it_can(anns: dict[str, str]) -> None:
    found = na.foreign_annotations({P + k: v for k, v in anns.items()}, namespace="apps")
    if not found:
        return
    note = na.foreign_annotation_message(found)
    assert len(note.encode()) <= 1024
    assert note == na.foreign_annotation_message(list(found))  # stable
