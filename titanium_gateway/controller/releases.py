"""The statuses the controller hands to the status writer besides the render's: the objects it
remembers owning that are no longer its own (``Releases``), and the resourceVersion each object
had when the render saw it (``seen_versions``: the status writer tells its echo by it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render.result import ObjectStatus, Released, RenderResult
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.writers.status import WriteGuard, merged_status, status_differs

StatusKey = tuple[str, str, str]
#: (kind, namespace, name) -> the cached object, or None
Current = Callable[[str, str, str], Mapping[str, Any] | None]


def meta_rv(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def seen_versions(snap: Snapshot, statuses: Iterable[ObjectStatus]) -> dict[StatusKey, str]:
    """The resourceVersion of each object as the render saw it (absent ones left out): the status
    writer treats only a write onto exactly that version as one whose echo needs no reconcile
    (``StatusWriter.echoes``)."""
    out: dict[StatusKey, str] = {}
    for st in statuses:
        field = kinds.KIND_FIELDS.get(st.kind)
        cache = getattr(snap, field) if field is not None else None
        obj = None if cache is None else cache.get(f"{st.namespace}/{st.name}" if st.namespace else st.name)
        if obj is not None:
            out[st.key] = meta_rv(obj)
    return out


class Releases:
    """A GatewayClass, Gateway, ListenerSet or Ingress (``kinds.REMEMBERED_KINDS``) the render
    reported on last time but no longer does (its class changed, or the class's controller did)
    while it still exists: our status must not keep claiming Accepted/Programmed. It is reset to
    the CRDs' "Waiting for controller" default, only while it still carries exactly the status we
    rendered (a guard checked again after a 409): the new owner's status is never overwritten."""

    def __init__(self, current: Current, controller_name: str) -> None:
        self.current = current
        self.controller_name = controller_name
        # the statuses of the last render of the kinds remembered (the objects we own), and the
        # objects that stopped being ours: key -> (our last status, resourceVersion when noticed)
        self._owned: dict[StatusKey, ObjectStatus] = {}
        self._releasing: dict[StatusKey, tuple[ObjectStatus, str]] = {}

    def _still_ours(self, cur: Mapping[str, Any], ours: ObjectStatus) -> bool:
        """The object still carries the status we rendered for it (nobody wrote since)."""
        return not status_differs(cur, merged_status(ours.kind, cur, ours.status, self.controller_name))

    def statuses(self, result: RenderResult) -> tuple[list[Released], dict[StatusKey, WriteGuard]]:
        """The releases to write after ``result``, with the guard of each."""
        owned = {st.key: st for st in result.statuses if st.kind in kinds.REMEMBERED_KINDS}
        for key, st in self._owned.items():
            if key not in owned and key not in self._releasing:
                self._releasing[key] = (st, meta_rv(self.current(*key)))
        self._owned = owned
        out: list[Released] = []
        guards: dict[StatusKey, WriteGuard] = {}
        for key, (ours, first_rv) in list(self._releasing.items()):
            cur = self.current(*key)
            if key in owned or cur is None:  # ours again, or deleted
                del self._releasing[key]
                continue
            release = Released.of(ours.api_version, ours.kind, ours.namespace, ours.name)
            if not status_differs(cur, merged_status(ours.kind, cur, release.status, self.controller_name)):
                del self._releasing[key]  # released
            elif self._still_ours(cur, ours):
                out.append(release)
                guards[key] = lambda c, o=ours: self._still_ours(c, o)
            elif meta_rv(cur) != first_rv:
                del self._releasing[key]  # another controller wrote its status since: not ours to clear
        return out, guards
