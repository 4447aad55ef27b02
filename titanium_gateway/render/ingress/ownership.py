"""Which Ingresses this controller serves, and why not (the Ingress page, "Choosing").

``spec.ingressClassName`` naming one of our IngressClasses (``spec.controller`` is ours) always
decides; without it, the legacy ``kubernetes.io/ingress.class`` annotation (read with
``--watch-legacy-annotation``; a class that is not ours is never ours), else one of our classes
being the default (``ingressclass.kubernetes.io/is-default-class: "true"``). This module is the
one owner of that decision: :func:`why_not_ours` says it, :func:`select` applies it to a
snapshot (the Ingresses we serve, oldest first, and a ``NotOurs`` record for each other one).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.precedence import creation_timestamp
from titanium_gateway.render.result import NotOurs

DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
#: The legacy annotation value that always means this controller (with --watch-legacy-annotation).
LEGACY_CLASS_NAME = "titanium"
_first = operator.itemgetter(0)
#: (creationTimestamp, namespace, name): the order Ingresses are translated in (oldest first)
AgeKey = tuple[str, str, str]


def owned_classes(ingress_classes: Mapping[str, Any], controller_name: str) -> tuple[set[str], bool]:
    """Names of the IngressClasses whose ``spec.controller`` is ours, and whether one of them
    is the default class (annotation ``ingressclass.kubernetes.io/is-default-class: "true"``)."""
    names: set[str] = set()
    has_default = False
    for key, cls in ingress_classes.items():
        if f.string(f.mapping(f.mapping(cls).get("spec")).get("controller")) != controller_name:
            continue
        meta = f.metadata(cls)
        names.add(f.string(meta.get("name")) or str(key))
        if f.string(f.mapping(meta.get("annotations")).get(DEFAULT_CLASS_ANNOTATION)) == "true":
            has_default = True
    return names, has_default


def _decision(ingress: Any, owned: set[str], has_default: bool, watch_legacy_annotation: bool) -> tuple[str, Any]:
    """("", None) when this controller serves ``ingress``; else what decided it is not ours:
    ("class", its ingressClassName), ("legacy", the annotation's value: another class),
    ("unwatched", the annotation's value: ours, but not read) or ("default", None)."""
    class_name = f.mapping(f.mapping(ingress).get("spec")).get("ingressClassName")
    if isinstance(class_name, str) and class_name:  # ingressClassName always wins
        return ("", None) if class_name in owned else ("class", class_name)
    legacy = f.mapping(f.metadata(ingress).get("annotations")).get(LEGACY_CLASS_ANNOTATION)
    if legacy is not None:
        if not (isinstance(legacy, str) and (legacy in owned or legacy == LEGACY_CLASS_NAME)):
            return "legacy", legacy  # a legacy class we do not own: never ours
        if watch_legacy_annotation:
            return "", None
        if not has_default:
            return "unwatched", legacy
    return ("", None) if has_default else ("default", None)


def is_owned(ingress: Any, owned: set[str], has_default: bool, watch_legacy_annotation: bool) -> bool:
    """Whether this controller serves ``ingress``."""
    return not _decision(ingress, owned, has_default, watch_legacy_annotation)[0]


def why_not_ours(ingress: Any, ingress_classes: Mapping[str, Any], owned: set[str], has_default: bool,
                 options: Any) -> str:
    """Why this controller does not serve ``ingress`` ("" when it does)."""
    what, value = _decision(ingress, owned, has_default, options.watch_legacy_annotation)
    if what == "class":
        other = ingress_classes.get(value)
        if other is None:
            return f"its IngressClass {value} is not in the input"
        controller = f.string(f.mapping(f.mapping(other).get("spec")).get("controller")) or "none"
        return f"its IngressClass {value} belongs to controller {controller}, not {options.ingress_controller_name}"
    if what == "legacy":
        return f"its {LEGACY_CLASS_ANNOTATION} annotation names another controller's class ({value!r})"
    if what == "unwatched":
        return (f"it names its class only with the {LEGACY_CLASS_ANNOTATION} annotation ({value!r}), "
                "which is read only with --watch-legacy-annotation, and no IngressClass of ours is the default")
    if what == "default":
        return (f"it has no ingressClassName and no IngressClass of ours is the default "
                f"({DEFAULT_CLASS_ANNOTATION}: \"true\")")
    return ""


def select(snapshot: Any, options: Any) -> tuple[list[tuple[AgeKey, Mapping[str, Any]]], list[NotOurs]]:
    """The Ingresses we serve, oldest first (creationTimestamp, namespace, name; each with that
    key), and why each other one is not ours."""
    owned, has_default = owned_classes(snapshot.ingress_classes, options.ingress_controller_name)
    watch_legacy = options.watch_legacy_annotation
    selected: list[tuple[AgeKey, Mapping[str, Any]]] = []
    not_ours: list[NotOurs] = []
    for ing in snapshot.ingresses.values():
        meta = f.metadata(ing)
        name, ns = f.name_of(meta), f.namespace_of(meta)
        if not name or ns is None:
            continue
        spec = ing.get("spec")
        class_name = spec.get("ingressClassName") if type(spec) is dict else None
        if type(class_name) is str and class_name and class_name in owned:  # the common case, inline
            pass
        elif not is_owned(ing, owned, has_default, watch_legacy):
            not_ours.append(NotOurs(kinds.INGRESS.kind, ns, name, why_not_ours(ing, snapshot.ingress_classes, owned,
                                                                         has_default, options)))
            continue
        created = meta.get("creationTimestamp")
        if type(created) is not str or not created:
            created = creation_timestamp(ing)
        selected.append(((created, ns, name), ing))
    selected.sort(key=_first)  # stable: equal keys keep the snapshot's order
    return selected, not_ours


def age_key(ing: Any) -> AgeKey:
    meta = f.metadata(ing)
    return (creation_timestamp(ing), f.namespace_of(meta) or "default", f.name_of(meta))
