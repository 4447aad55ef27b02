"""ReferenceGrant (gateway.networking.k8s.io v1 or v1beta1, the same fields): may an object
reference another namespace?

:class:`ReferenceGrantIndex` is built once per render; :meth:`ReferenceGrantIndex.allows` answers
one reference, :meth:`ReferenceGrantIndex.refusal` says why one is refused. A reference inside one
namespace is always allowed. A grant lives in the namespace of the TARGET; ``spec.from`` lists
(group, kind, namespace) of referrers and ``spec.to`` lists (group, kind, optional name) of
targets. The core group is ``""``. When the controller cannot read the grants
(``Snapshot.unreadable["ReferenceGrant"]``: its watch fails, so its cache may hold grants that
were revoked) no reference across namespaces is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping

from titanium_gateway import kinds
from titanium_gateway.render.fields import plain, string
from titanium_gateway.render.snapshot import Snapshot

GATEWAY_GROUP = kinds.GATEWAY_GROUP


class ReferenceGrantIndex:
    def __init__(self, snapshot: Snapshot) -> None:
        #: why the grants are unknown ("" when they are read)
        self.unknown = snapshot.unreadable.get(kinds.REFERENCE_GRANT.kind, "")
        # target namespace -> list of (from set, to list)
        self._by_ns: dict[str, list[tuple[set[tuple[str, str, str]], list[tuple[str, str, str]]]]] = {}
        for key in sorted(snapshot.reference_grants):
            grant = snapshot.reference_grants[key]
            if not isinstance(grant, Mapping):
                continue
            meta = grant.get("metadata")
            ns = string(meta.get("namespace")) if isinstance(meta, Mapping) else ""
            ns = ns or "default"
            spec = grant.get("spec")
            if not isinstance(spec, Mapping):
                continue
            froms: set[tuple[str, str, str]] = set()
            for item in spec.get("from") if isinstance(spec.get("from"), list) else []:
                if isinstance(item, Mapping):
                    froms.add((string(item.get("group")), string(item.get("kind")), string(item.get("namespace"))))
            tos: list[tuple[str, str, str]] = []
            for item in spec.get("to") if isinstance(spec.get("to"), list) else []:
                if isinstance(item, Mapping):
                    tos.append((string(item.get("group")), string(item.get("kind")), string(item.get("name"))))
            if froms and tos:
                self._by_ns.setdefault(ns, []).append((froms, tos))

    def allows(
        self,
        *,
        from_group: str,
        from_kind: str,
        from_namespace: str,
        to_group: str,
        to_kind: str,
        to_namespace: str,
        to_name: str,
    ) -> bool:
        if from_namespace == to_namespace:
            return True
        if self.unknown:
            return False
        for froms, tos in self._by_ns.get(to_namespace, ()):
            if (from_group, from_kind, from_namespace) not in froms:
                continue
            for group, kind, name in tos:
                if group == to_group and kind == to_kind and (not name or name == to_name):
                    return True
        return False

    def refusal(self, kind: str, namespace: str, name: str) -> str:
        """The message of a refused reference to ``kind namespace/name`` (RefNotPermitted)."""
        what = f"{kind} {plain(namespace)}/{plain(name)}"  # (a name too long to be one is shortened)
        if self.unknown:
            return f"{what} is in another namespace and the ReferenceGrants could not be read ({self.unknown})"
        return f"{what} is in another namespace and no ReferenceGrant allows it"
