"""The typed outcomes the translators record for the objects whose status follows a data
plane: a Gateway or ListenerSet and its listeners, everything their status says but Programmed,
which :mod:`.programmed` decides from the data plane's delivery. Plain values: the render
records them (``RenderResult.gateway_outcomes``) and builds the statuses from them, and the
controller's :func:`~titanium_gateway.render.status.programmed.reprogram` builds them again
when only the data plane's answer changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: (status, reason, message) of a condition
Outcome = tuple[bool, str, str]


@dataclass(frozen=True, slots=True)
class ListenerOutcome:
    """A listener's status entry but its Programmed condition."""

    name: str
    supported_kinds: tuple[Mapping[str, str], ...]
    attached: int
    #: valid (Programmed follows the delivery), else Programmed False Invalid
    valid: bool
    accepted: Outcome
    resolved: Outcome
    conflicted: Outcome
    #: an entry of a ListenerSet: conflicted, it is also not accepted nor programmed, with the
    #: conflict's reason (the Gateway API's ListenerEntryStatus)
    set_entry: bool
    #: the listener's conditions in the object's status (their transition times are kept)
    previous: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class GatewayOutcome:
    """A Gateway's (``kind`` Gateway) or ListenerSet's status but its Programmed conditions."""

    api_version: str
    kind: str
    namespace: str
    name: str
    #: ``metadata.generation`` (observedGeneration)
    generation: int
    #: the object's conditions in its status
    previous: tuple[Mapping[str, Any], ...]
    acceptance: Outcome
    #: whether Programmed follows the delivery (a Gateway: accepted with a valid listener; a
    #: ListenerSet: accepted), else Programmed False (Invalid; a ListenerSet: why not accepted)
    valid: bool
    #: the data plane that serves it (``""`` the shared one; a Gateway's ``namespace/name``);
    #: None: none, ``no_plane`` says why
    plane: str | None
    no_plane: str = ""
    #: why its requested address is not (yet) its address (Programmed False, AddressNotAssigned)
    address_problem: str = ""
    #: a Gateway's ``status.addresses`` (None: not written, a ListenerSet)
    addresses: tuple[Mapping[str, str], ...] | None = None
    #: a Gateway's ``status.attachedListenerSets`` (None: not written)
    attached_listener_sets: int | None = None
    #: the listeners (None: not written: a ListenerSet not allowed, or whose Gateway is not accepted)
    listeners: tuple[ListenerOutcome, ...] | None = ()

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)


__all__ = ["Outcome", "ListenerOutcome", "GatewayOutcome"]
