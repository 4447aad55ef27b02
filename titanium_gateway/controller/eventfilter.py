"""Which informer events trigger a reconcile.

Every event only triggers (one key: "the world changed"), except those that change nothing the
render or the prober reads: the echo of our own status write (the status writer recognizes it:
``StatusWriter.echoes``; 1000 route statuses would otherwise re-render the cluster every
``--min-reconcile-ms`` while they are written, for nothing), a Pod that is not the data plane's
(every Pod of the data-plane namespace is cached: the controller's own pods and any other
workload there do not make the controller re-probe), and a ConfigMap without a CA certificate
(``ca.crt``, what a BackendTLSPolicy may name).

The echo of our own status write is not a change of the render's input either: the caches of the
kinds whose status we write do not count it in their change count (``Store.set_uncounted``), so
the reconcile that follows it (the data plane confirmed the config, say) decides Programmed again
on the last result instead of rendering every route again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.controller.transform import CA_KEY
from titanium_gateway.kube.informer import EventHandler, SharedInformer
from titanium_gateway.kube.workqueue import CoalescingTrigger

#: (kind, old, new, count=...) -> whether ``new`` is only the echo of our own status write (``count``:
#: count it in the echo metric): ``StatusWriter.echoes``
Echoes = Callable[..., bool]


def holds_ca(obj: Any) -> bool:
    data = obj.get("data") if isinstance(obj, Mapping) else None
    return isinstance(data, Mapping) and CA_KEY in data


class EventFilter:
    """The event handlers of the controller's informers (``handler(name)``)."""

    def __init__(self, trigger: CoalescingTrigger, echoes: Echoes, is_data_plane_pod: Callable[[Any], bool]) -> None:
        self.trigger = trigger
        self.echoes = echoes
        self.is_data_plane_pod = is_data_plane_pod

    def subscribe(self, name: str, informer: SharedInformer) -> None:
        """Subscribe to the informer ``name``; the cache of a kind whose status we write does not
        count the echo of our write as a change."""
        informer.add_event_handler(self.handler(name))
        if name in kinds.STATUS_KINDS:
            informer.store.set_uncounted(functools.partial(self._is_echo, name))

    def _is_echo(self, kind: str, old: Any, new: Any) -> bool:
        return old is not new and self.echoes(kind, old, new, count=False)

    def handler(self, name: str) -> EventHandler:
        """The handler of the informer ``name``."""
        if name in kinds.STATUS_KINDS:
            return EventHandler(self.on_add, functools.partial(self.on_status_kind_update, name), self.on_delete)
        if name == kinds.CONFIG_MAP.kind:
            return EventHandler(self.on_ca_add, self.on_ca_update, self.on_ca_add)
        if name == "Pod":
            return EventHandler(self.on_pod_add, self.on_pod_update, self.on_pod_delete)
        return EventHandler(self.on_add, self.on_update, self.on_delete)

    def on_add(self, obj: Any) -> None:
        self.trigger.trigger()

    def on_update(self, old: Any, new: Any) -> None:
        if old is not new:
            self.trigger.trigger()

    def on_delete(self, obj: Any) -> None:
        self.trigger.trigger()

    def on_status_kind_update(self, kind: str, old: Any, new: Any) -> None:
        """An object whose status we write: the echo of our own status write needs no reconcile."""
        if old is new or self.echoes(kind, old, new):
            return
        self.trigger.trigger()

    def on_ca_add(self, obj: Any) -> None:
        if holds_ca(obj):
            self.trigger.trigger()

    def on_ca_update(self, old: Any, new: Any) -> None:
        if old is not new and (holds_ca(old) or holds_ca(new)):
            self.trigger.trigger()

    def on_pod_add(self, obj: Any) -> None:
        if self.is_data_plane_pod(obj):
            self.trigger.trigger()

    def on_pod_update(self, old: Any, new: Any) -> None:
        if old is not new and (self.is_data_plane_pod(new) or self.is_data_plane_pod(old)):
            self.trigger.trigger()

    def on_pod_delete(self, obj: Any) -> None:
        if self.is_data_plane_pod(obj):
            self.trigger.trigger()
