"""An in-process Kubernetes API server for tests: REST + watch over HTTP on loopback.

The official ``kubernetes`` python client works against it unmodified::

    with FakeApiServer() as server:
        api = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(server.client_configuration()))
        api.create_namespaced_config_map("default", {"metadata": {"name": "x"}, "data": {"a": "b"}})
        server.get_object("ConfigMap", "default", "x")

What it models (faithfully where bugs hide): one global etcd-like resourceVersion; uid,
creationTimestamp, generation, managedFields; GET/LIST (label + field selectors, limit/continue
served from a consistent snapshot, resourceVersion/resourceVersionMatch semantics); WATCH
(chunked JSON lines, replay from a bounded history, 410 Expired ERROR events, bookmarks,
timeoutSeconds, label-selector transitions as ADDED/DELETED); create/update/patch (merge, JSON,
strategic for built-ins only: 415 on CRDs)/delete with finalizers; status subresources; Status
objects for every error; strict decoding of MicroTime fields; RBAC-like denials, fault
injection and a request log for tests.
"""

from __future__ import annotations

import contextlib
import copy
import json
import queue
import random
import select
import socket
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.support import crdschema
from tests.support.httpserver import FastRequestMixin, TrackingHTTPServer
from tests.support.k8sutil import (
    CONFIG_KEY,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    FieldError,
    FieldReq,
    Obj,
    PatchError,
    Requirement,
    StatusError,
    already_exists,
    bad_request,
    check_microtime,
    check_time,
    conflict,
    decode_continue,
    encode_continue,
    fields_match,
    group_resource,
    invalid,
    json_patch,
    labels_match,
    merge_patch,
    not_found,
    parse_field_selector,
    parse_label_selector,
    rfc3339,
    status_object,
    strategic_merge,
    strip_nulls,
    strip_nulls_in_place,
    stripped_copy,
)

__all__ = ["FakeApiServer", "ResourceType", "Injection", "RequestRecord", "StatusError", "RESOURCE_TYPES"]

GATEWAY_GROUP = "gateway.networking.k8s.io"
KUBE_VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.4", "gitCommit": "fake",
                "gitTreeState": "clean", "buildDate": "2024-12-10T00:00:00Z", "goVersion": "go1.22.10",
                "compiler": "gc", "platform": "linux/amd64"}
MAX_CONFIG_BYTES = 1024 * 1024
MAX_ANNOTATION_BYTES = 256 * 1024
MAX_REQUEST_BYTES = 3 * 1024 * 1024  # the API server's request body limit
GZIP_MIN_BYTES = 128 * 1024  # answers above this are gzipped when the client accepts gzip
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_compact_json = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps(o, separators=(",", ":"))
_ENCODINGS_KEPT = 1024  # stored objects whose JSON is kept for the answers and watch events still to send


# --------------------------------------------------------------------------------------------
# Resource types


def _name_of(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("name", ""))


def _ns_of(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("namespace", ""))


def _dig(o: Any, *path: str) -> str:
    for p in path:
        if not isinstance(o, dict):
            return ""
        o = o.get(p)
    return "" if o is None else str(o)


@dataclass(frozen=True)
class ResourceType:
    group: str
    plural: str
    kind: str
    versions: tuple[str, ...]
    namespaced: bool = True
    status_subresource: bool = False
    has_generation: bool = False
    crd: bool = False
    storage: str = ""  # storage key shared across group versions (default group/plural)
    short_names: tuple[str, ...] = ()
    extra_fields: tuple[tuple[str, tuple[str, ...]], ...] = ()  # field selector -> path

    @property
    def key(self) -> str:
        return self.storage or f"{self.group}/{self.plural}"

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def preferred_version(self) -> str:
        return self.versions[0]

    def api_version(self, version: str | None = None) -> str:
        v = version or self.preferred_version
        return f"{self.group}/{v}" if self.group else v

    @property
    def qualified(self) -> str:
        return group_resource(self.group, self.plural)

    def field_getters(self) -> dict[str, Callable[[Obj], str]]:
        getters: dict[str, Callable[[Obj], str]] = {"metadata.name": _name_of}
        if self.namespaced:
            getters["metadata.namespace"] = _ns_of
        for fname, path in self.extra_fields:
            getters[fname] = (lambda p: (lambda o: _dig(o, *p)))(path)
        return getters

    def field_description(self) -> str:
        return "" if self.crd else ", ".join(f'"{f}"' for f in self.field_getters())


def _rt(group: str, plural: str, kind: str, versions: tuple[str, ...] = ("v1",), **kw: Any) -> ResourceType:
    return ResourceType(group, plural, kind, versions, **kw)


RESOURCE_TYPES: tuple[ResourceType, ...] = (
    _rt("", "namespaces", "Namespace", namespaced=False, status_subresource=True, short_names=("ns",),
        extra_fields=(("status.phase", ("status", "phase")),)),
    _rt("", "services", "Service", status_subresource=True, short_names=("svc",),
        extra_fields=(("spec.clusterIP", ("spec", "clusterIP")), ("spec.type", ("spec", "type")))),
    _rt("", "secrets", "Secret", extra_fields=(("type", ("type",)),)),
    _rt("", "configmaps", "ConfigMap", short_names=("cm",)),
    _rt("", "pods", "Pod", status_subresource=True, short_names=("po",),
        extra_fields=(("spec.nodeName", ("spec", "nodeName")), ("status.phase", ("status", "phase")),
                      ("status.podIP", ("status", "podIP")), ("spec.serviceAccountName", ("spec", "serviceAccountName")))),
    _rt("", "events", "Event", storage="events", short_names=("ev",),
        extra_fields=(("involvedObject.kind", ("involvedObject", "kind")), ("involvedObject.name", ("involvedObject", "name")),
                      ("involvedObject.namespace", ("involvedObject", "namespace")),
                      ("involvedObject.uid", ("involvedObject", "uid")), ("reason", ("reason",)),
                      ("reportingComponent", ("reportingComponent",)), ("type", ("type",)),
                      ("source", ("source", "component")))),
    _rt("discovery.k8s.io", "endpointslices", "EndpointSlice"),
    _rt("networking.k8s.io", "ingresses", "Ingress", status_subresource=True, has_generation=True, short_names=("ing",)),
    _rt("networking.k8s.io", "ingressclasses", "IngressClass", namespaced=False, has_generation=True),
    _rt("apps", "deployments", "Deployment", status_subresource=True, has_generation=True, short_names=("deploy",)),
    _rt("coordination.k8s.io", "leases", "Lease"),
    _rt("events.k8s.io", "events", "Event", storage="events", short_names=("ev",),
        extra_fields=(("regarding.kind", ("involvedObject", "kind")), ("regarding.name", ("involvedObject", "name")),
                      ("regarding.namespace", ("involvedObject", "namespace")), ("reason", ("reason",)),
                      ("reportingController", ("reportingComponent",)), ("type", ("type",)))),
    _rt(GATEWAY_GROUP, "gatewayclasses", "GatewayClass", ("v1", "v1beta1"), namespaced=False,
        status_subresource=True, has_generation=True, crd=True, short_names=("gc",)),
    _rt(GATEWAY_GROUP, "gateways", "Gateway", ("v1", "v1beta1"), status_subresource=True, has_generation=True,
        crd=True, short_names=("gtw",)),
    _rt(GATEWAY_GROUP, "httproutes", "HTTPRoute", ("v1", "v1beta1"), status_subresource=True,
        has_generation=True, crd=True),
    _rt(GATEWAY_GROUP, "grpcroutes", "GRPCRoute", ("v1",), status_subresource=True, has_generation=True, crd=True),
    _rt(GATEWAY_GROUP, "referencegrants", "ReferenceGrant", ("v1", "v1beta1"), has_generation=True, crd=True,
        short_names=("refgrant",)),
    _rt(GATEWAY_GROUP, "tlsroutes", "TLSRoute", ("v1",), status_subresource=True, has_generation=True, crd=True),
    _rt(GATEWAY_GROUP, "tcproutes", "TCPRoute", ("v1",), status_subresource=True, has_generation=True, crd=True),
    _rt(GATEWAY_GROUP, "udproutes", "UDPRoute", ("v1",), status_subresource=True, has_generation=True, crd=True),
    _rt(GATEWAY_GROUP, "listenersets", "ListenerSet", ("v1",), status_subresource=True, has_generation=True,
        crd=True, short_names=("lset",)),
    _rt(GATEWAY_GROUP, "backendtlspolicies", "BackendTLSPolicy", ("v1",), status_subresource=True,
        has_generation=True, crd=True, short_names=("btlspolicy",)),
    _rt("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False,
        status_subresource=True, has_generation=True, short_names=("crd", "crds")),
)
CRDS = "apiextensions.k8s.io/customresourcedefinitions"

# events.k8s.io/v1 <-> core/v1 Event field names (storage holds the core/v1 form, like the real server)
_EVENT_RENAMES = (("involvedObject", "regarding"), ("message", "note"), ("reportingComponent", "reportingController"),
                  ("source", "deprecatedSource"), ("firstTimestamp", "deprecatedFirstTimestamp"),
                  ("lastTimestamp", "deprecatedLastTimestamp"), ("count", "deprecatedCount"))
_EVENTS_V1_IMMUTABLE = ("regarding", "reason", "note", "deprecatedSource", "deprecatedFirstTimestamp",
                        "deprecatedLastTimestamp", "deprecatedCount", "type", "eventTime", "action", "related",
                        "reportingController", "reportingInstance")


def _to_storage(rt: ResourceType, obj: Obj) -> Obj:
    if rt.group == "events.k8s.io":
        obj = dict(obj)
        for core, ev in _EVENT_RENAMES:
            if ev in obj:
                obj[core] = obj.pop(ev)
    return obj


def _from_storage(rt: ResourceType, obj: Obj) -> Obj:
    if rt.group == "events.k8s.io":
        obj = dict(obj)
        for core, ev in _EVENT_RENAMES:
            if core in obj:
                obj[ev] = obj.pop(core)
    return obj


# --------------------------------------------------------------------------------------------
# Test controls


@dataclass
class Injection:
    """A fault for matching requests: an error Status, a dropped connection, or latency."""

    verb: str
    resource: str
    status: int | None = 500
    retry_after: int | None = None
    times: int | None = 1
    latency: float = 0.0
    namespace: str | None = None
    name: str | None = None
    drop: bool = False
    message: str = ""
    hits: int = 0
    active: bool = True

    def matches(self, verb: str, resource: str, namespace: str, name: str) -> bool:
        if not self.active:
            return False
        if self.verb not in ("*", verb):
            return False
        if self.resource not in ("*", resource, resource.split("/")[0]):
            return False
        if self.namespace is not None and self.namespace != namespace:
            return False
        return self.name is None or self.name == name

    def cancel(self) -> None:
        self.active = False


@dataclass
class _Rule:
    verbs: tuple[str, ...]
    resource: str
    namespace: str | None
    names: tuple[str, ...] | None  # forbid only these names (None: all)
    except_names: tuple[str, ...] | None  # forbid all but these names

    def denies(self, verb: str, resource: str, namespace: str, name: str) -> bool:
        if "*" not in self.verbs and verb not in self.verbs:
            return False
        if self.resource not in ("*", resource):
            return False
        if self.namespace is not None and self.namespace != namespace:
            return False
        if self.names is not None:
            return name in self.names
        if self.except_names is not None:
            return name not in self.except_names
        return True


@dataclass
class _Allow:
    verbs: tuple[str, ...]
    resources: tuple[str, ...]
    groups: tuple[str, ...]
    namespace: str | None
    names: tuple[str, ...]

    def allows(self, verb: str, group: str, resource: str, ns: str, name: str) -> bool:
        if "*" not in self.verbs and verb not in self.verbs:
            return False
        if "*" not in self.groups and group not in self.groups:
            return False
        if "*" not in self.resources and resource not in self.resources:
            return False
        if self.namespace is not None and self.namespace != ns:
            return False
        return not self.names or name in self.names


@dataclass
class RequestRecord:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: Any
    user_agent: str
    verb: str = ""
    resource: str = ""  # plural, with "/status" for the subresource
    group: str = ""
    namespace: str = ""
    name: str = ""
    status: int = 0
    time: float = 0.0
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Storage


#: (the CRD schema an object was written with, its fields that are normalized and valid under it)
_Clean = tuple[Obj, frozenset[str]]


class _Store:
    """One storage key: objects by "namespace/name", plus a per-namespace index."""

    def __init__(self) -> None:
        self.items: dict[str, Obj] = {}
        self.by_ns: dict[str, dict[str, Obj]] = {}
        self._sorted: list[str] | None = None
        #: key -> (stored object, CRD schema, its fields that are normalized and valid under that
        #: schema): a later write may take those fields as they are (see FakeApiServer._prepare)
        self.clean: dict[str, tuple[Obj, Obj, frozenset[str]]] = {}

    def put(self, key: str, ns: str, name: str, obj: Obj, clean: _Clean | None = None) -> None:
        if key not in self.items:
            self._sorted = None
        self.items[key] = obj
        self.by_ns.setdefault(ns, {})[name] = obj
        if clean is not None and clean[1]:
            self.clean[key] = (obj, *clean)
        else:
            self.clean.pop(key, None)

    def remove(self, key: str, ns: str, name: str) -> None:
        self.items.pop(key, None)
        self.clean.pop(key, None)
        nsd = self.by_ns.get(ns)
        if nsd is not None:
            nsd.pop(name, None)
            if not nsd:
                del self.by_ns[ns]
        self._sorted = None

    def sorted_keys(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self.items)
        return self._sorted


@dataclass
class _HistEvent:
    rv: int
    skey: str
    type: str
    obj: Obj
    prev: Obj | None


_CLOSE = object()
_ABRUPT = object()


@dataclass
class _Watcher:
    rt: ResourceType
    version: str
    namespace: str
    labels: list[Requirement]
    fields: list[FieldReq]
    getters: dict[str, Callable[[Obj], str]]
    bookmarks: bool
    q: queue.SimpleQueue[Any] = field(default_factory=queue.SimpleQueue)

    def matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        if self.namespace and _ns_of(obj) != self.namespace:
            return False
        return labels_match(self.labels, obj) and fields_match(self.fields, obj, self.getters)


@dataclass
class _Response:
    code: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    #: (rt, version, stored object) when ``body`` is ``_external`` of it: its JSON is shared
    shows: tuple[ResourceType, str, Obj] | None = None


@dataclass
class _WatchPlan:
    watcher: _Watcher
    deadline: float


_RANDOM_IDS = random.Random()  # seeded from os.urandom; the global ``random`` stays the tests' to seed


def _uuid4() -> str:
    """A random (version 4) UUID, as ``str(uuid.uuid4())`` without a system call per id."""
    return str(uuid.UUID(int=_RANDOM_IDS.getrandbits(128), version=4))


def _truthy(v: str | None) -> bool:
    return v is not None and v.lower() in ("true", "1")


def _spec_part(rt: ResourceType, obj: Obj) -> Any:
    if rt.crd:
        return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}
    return obj.get("spec")


_OBJECT_META_FIELDS = {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
                       "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
                       "annotations", "ownerReferences", "finalizers", "managedFields"}
_KNOWN_FIELDS: dict[str, set[str]] = {
    "configmaps": {"data", "binaryData", "immutable"},
    "secrets": {"data", "stringData", "type", "immutable"},
    "namespaces": {"spec", "status"}, "services": {"spec", "status"}, "pods": {"spec", "status"},
    "deployments": {"spec", "status"}, "ingresses": {"spec", "status"}, "ingressclasses": {"spec"},
    "leases": {"spec"}, "endpointslices": {"addressType", "endpoints", "ports"},
    "events": {"involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "type",
               "eventTime", "series", "action", "related", "reportingComponent", "reportingInstance"},
    "*crd": {"spec"},
}

_SYSTEM_META = ("uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds")


_ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def _copy_of(o: Obj) -> Obj:
    """A deep copy of a stored object. What is stored holds JSON values (and what put_object's
    caller put there) without null map values, dict or list subclasses or parts shared inside
    it, so ``stripped_copy`` copies it exactly as ``copy.deepcopy`` does, in a fraction of the time."""
    return stripped_copy(o)  # type: ignore[no-any-return]


def _no_metadata_defaults(schema: Obj) -> bool:
    """Whether a CRD schema leaves ``metadata`` alone when it applies its defaults."""
    node = (schema.get("properties") or {}).get("metadata") or {}
    return not node.get("properties") and not isinstance(node.get("additionalProperties"), dict)


def _within(field_path: str, key: str) -> bool:
    """Whether a field path (of a FieldError) is ``key`` or inside it."""
    return field_path.startswith(key) and (len(field_path) == len(key) or field_path[len(key)] in ".[")


def _comparable(obj: Obj) -> Obj:
    o = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    o["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
    return o


# --------------------------------------------------------------------------------------------
# The server


class FakeApiServer:
    """In-process Kubernetes API server (see module docstring). Thread-safe."""

    #: take fields a write leaves alone as they are when they were found normalized and valid
    #: before (see _prepare); tests turn it off to compare with doing everything again
    _reuse_clean = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, history_size: int = 50_000,
                 bookmark_interval: float = 1.0, default_watch_timeout: float = 1800.0,
                 token: str | None = None, namespaces: Iterable[str] = ("default", "kube-system", "kube-public",
                                                                        "kube-node-lease"),
                 user: str = "system:serviceaccount:gateway-system:titanium-gateway",
                 log_limit: int = 100_000, crds: Iterable[Obj] | None = None) -> None:
        """``crds``: the CustomResourceDefinitions served (default: the chart's Gateway API
        bundle, tests/support/gatewayapi_crds.py). A Gateway API resource is served at a version
        only while its CRD is there, established and serving that version, like a real server:
        404 otherwise, and a watch of a version that stops being served ends."""
        self.host = host
        self._port = port
        self.history_size = history_size
        self.bookmark_interval = bookmark_interval
        self.default_watch_timeout = default_watch_timeout
        self.token = token
        self.user = user
        self.latency = 0.0  # seconds added to every API request
        self.event_delay = 0.0  # seconds each watch stream waits before sending an event
        self.now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
        self._lock = threading.RLock()
        self._rv = 1
        self._oldest_rv = 1  # a watch/list from an RV below this one is 410 Expired
        self._history: deque[_HistEvent] = deque()
        self._stores: dict[str, _Store] = {}
        self._watchers: dict[str, list[_Watcher]] = {}
        self._controls = threading.Lock()  # the injections and RBAC rules (never held long)
        self._injections: list[Injection] = []
        self._rules: list[_Rule] = []
        self._allow_rules: list[_Allow] | None = None  # None: everything is allowed
        self._log: deque[RequestRecord] = deque(maxlen=log_limit)
        self._encodings: OrderedDict[tuple[int, int, str], tuple[Obj, bytes]] = OrderedDict()
        self._reactors: list[tuple[str, Callable[[str, Obj], None]]] = []
        self._tls = threading.local()
        self._httpd: TrackingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        for rt in RESOURCE_TYPES:
            for v in rt.versions:
                self._by_path[(rt.group, v, rt.plural)] = rt
            self._by_kind[(rt.group, rt.kind)] = rt
        for ns in namespaces:
            self.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        if crds is None:
            from tests.support.gatewayapi_crds import chart_crds

            crds = chart_crds()
        for crd in crds:
            self.put_object(crd)

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> FakeApiServer:
        if self._httpd is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"api": self})
        httpd = TrackingHTTPServer((self.host, self._port), handler)
        self._httpd = httpd
        self._port = int(httpd.server_address[1])  # a restart binds the same port
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-apiserver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self.close_watches(abrupt=True)
        httpd.stop()
        if self._thread:
            self._thread.join(timeout=5)

    def restart(self, down_for: float = 0.0) -> None:
        """Stop (every connection and watch cut), optionally stay down, start again on the same
        port with the same state and history, as an API server restart looks to clients."""
        self.stop()
        if down_for:
            time.sleep(down_for)
        self.start()

    def drop_connections(self) -> int:
        """Cut every open client connection (keep-alive and watches) without stopping."""
        self.close_watches(abrupt=True)
        return self._httpd.drop_connections() if self._httpd is not None else 0

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def client_configuration(self) -> Any:
        """A ``kubernetes.client.Configuration`` pointing at this server."""
        from kubernetes import client

        cfg = client.Configuration()
        cfg.host = self.url
        cfg.verify_ssl = False
        if self.token:
            cfg.api_key = {"authorization": self.token}
            cfg.api_key_prefix = {"authorization": "Bearer"}
        return cfg

    def api_client(self) -> Any:
        from kubernetes import client

        return client.ApiClient(self.client_configuration())

    def kubeconfig(self) -> Obj:
        """A kubeconfig document (dict) for this server; dump it with yaml to a file."""
        user: Obj = {"token": self.token} if self.token else {}
        return {"apiVersion": "v1", "kind": "Config", "current-context": "fake",
                "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                "users": [{"name": "fake", "user": user}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}]}

    def write_kubeconfig(self, path: Any) -> str:
        """Write ``kubeconfig()`` as YAML to ``path`` (for ``--kubeconfig`` / ``$KUBECONFIG``)."""
        from pathlib import Path

        Path(path).write_text(yaml.safe_dump(self.kubeconfig()))
        return str(path)

    # ----------------------------------------------------------------- test controls

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    def compact(self) -> None:
        """Drop the watch history: a watch or continue from an older RV now gets 410 Expired."""
        with self._lock:
            self._history.clear()
            self._oldest_rv = self._rv

    def close_watches(self, abrupt: bool = False, expire: bool = False) -> int:
        """End every open watch stream: cleanly (like a server-side timeout), ``abrupt`` (cut the
        TCP connection mid-stream), or ``expire`` (an ERROR 410 Expired event, then the end, as
        when the watch cache drops a watcher that fell behind). Returns how many were open."""
        with self._lock:
            n = 0
            for ws in self._watchers.values():
                for w in ws:
                    if expire:
                        w.q.put(("ERROR", status_object(
                            410, "Expired", f"too old resource version: {self._oldest_rv} ({self._rv})")))
                    w.q.put(_ABRUPT if abrupt else _CLOSE)
                    n += 1
            self._watchers = {}
            return n

    def watch_count(self, resource: str | None = None) -> int:
        with self._lock:
            if resource is None:
                return sum(len(ws) for ws in self._watchers.values())
            rt = self.resolve(resource)
            return sum(1 for w in self._watchers.get(rt.key, []) if w.rt.plural == rt.plural)

    def inject(self, verb: str, resource: str = "*", status: int | None = 500, *, retry_after: int | None = None,
               times: int | None = 1, latency: float = 0.0, namespace: str | None = None,
               name: str | None = None, drop: bool = False, message: str = "") -> Injection:
        """Fail the next ``times`` (None: all) matching requests.

        ``verb``: get/list/watch/create/update/patch/delete/deletecollection or ``*``;
        ``resource``: plural (``httproutes``, ``gateways/status``) or ``*``. ``status=None`` only
        adds ``latency``; ``drop`` closes the connection without an answer.
        """
        if status == 429 and retry_after is None:
            retry_after = 1  # API Priority and Fairness always sends Retry-After with its 429s
        inj = Injection(verb, resource, status, retry_after, times, latency, namespace, name, drop, message)
        with self._controls:
            self._injections.append(inj)
        return inj

    def clear_injections(self) -> None:
        with self._controls:
            self._injections.clear()

    def forbid(self, verbs: str | Iterable[str], resource: str, *, namespace: str | None = None,
               names: Iterable[str] | None = None, except_names: Iterable[str] | None = None) -> _Rule:
        """RBAC-like denial (403 Forbidden) of ``verbs`` on ``resource`` (plural or ``plural/status``)."""
        vs = (verbs,) if isinstance(verbs, str) else tuple(verbs)
        rule = _Rule(vs, resource, namespace, tuple(names) if names is not None else None,
                     tuple(except_names) if except_names is not None else None)
        with self._controls:
            self._rules.append(rule)
        return rule

    def unforbid(self, rule: _Rule) -> None:
        """Drop one ``forbid`` rule (the permission is granted again)."""
        with self._controls:
            if rule in self._rules:
                self._rules.remove(rule)

    def allow_all(self) -> None:
        """Drop every ``forbid`` rule and leave RBAC allow-list mode."""
        with self._controls:
            self._rules.clear()
            self._allow_rules = None

    def requests(self, verb: str | None = None, resource: str | None = None, *, method: str | None = None,
                 namespace: str | None = None, name: str | None = None) -> list[RequestRecord]:
        with self._lock:
            recs = list(self._log)
        return [r for r in recs
                if (verb is None or r.verb == verb) and (resource is None or r.resource == resource)
                and (method is None or r.method == method) and (namespace is None or r.namespace == namespace)
                and (name is None or r.name == name)]

    def react(self, resource: str, fn: Callable[[str, Obj], None]) -> None:
        """Call ``fn(event_type, object)`` after every write of ``resource`` (plural, kind or ``*``),
        under the server lock (``fn`` may use the direct helpers, e.g. to play a controller)."""
        with self._lock:
            self._reactors.append((resource, fn))

    def emulate_deployment_controller(self) -> None:
        """A minimal deployment controller: after a spec change, status catches up
        (observedGeneration, replicas, updatedReplicas, readyReplicas, availableReplicas)."""

        def react(etype: str, obj: Obj) -> None:
            if etype == "DELETED":
                return
            gen = obj["metadata"].get("generation", 1)
            st = obj.get("status") or {}
            if st.get("observedGeneration") == gen:
                return
            n = (obj.get("spec") or {}).get("replicas", 1)
            status = dict(st, observedGeneration=gen, replicas=n, updatedReplicas=n, readyReplicas=n,
                          availableReplicas=n)
            self.update_object("Deployment", obj["metadata"].get("namespace"), obj["metadata"]["name"],
                               lambda o: o.__setitem__("status", status))

        self.react("deployments", react)

    def clear_log(self) -> None:
        with self._lock:
            self._log.clear()

    # ----------------------------------------------------------------- direct object helpers

    def resolve(self, what: Any, version: str | None = None) -> ResourceType:
        """A ResourceType from a kind ("HTTPRoute"), plural ("httproutes", "events.events.k8s.io"),
        an apiVersion+kind object, or anything with ``group`` and ``plural`` attributes."""
        if isinstance(what, ResourceType):
            return what
        if isinstance(what, dict):
            av = str(what.get("apiVersion", ""))
            group = av.rsplit("/", 1)[0] if "/" in av else ""
            rt = self._by_kind.get((group, str(what.get("kind", ""))))
            if rt is None:
                raise KeyError(f"unknown apiVersion/kind {av}/{what.get('kind')}")
            return rt
        if hasattr(what, "plural") and hasattr(what, "group"):
            for rt in RESOURCE_TYPES:
                if rt.plural == what.plural and rt.group == what.group:
                    return rt
            raise KeyError(f"unknown resource {what!r}")
        s = str(what)
        cands = [rt for rt in RESOURCE_TYPES
                 if s in (rt.kind, rt.plural, rt.qualified, f"{rt.kind}.{rt.group}") or s in rt.short_names]
        if not cands:
            raise KeyError(f"unknown resource {s!r}")
        return cands[0]

    def put_object(self, obj: Obj, *, defaults: bool = True) -> Obj:
        """Create or replace ``obj`` as given (status included), bypassing RBAC, faults, admission
        and validation; emits ADDED/MODIFIED watch events like a real write. CRD schema defaults
        are applied (as every object read from a real cluster has them) unless ``defaults=False``.
        Returns the stored object."""
        rt = self.resolve(obj)
        schema = crdschema.schema_for(rt.group, rt.kind, str(obj.get("apiVersion", "")).rsplit("/", 1)[-1]) \
            if rt.crd and defaults else None
        # the copy and the defaults in one walk when the order does not matter (the metadata
        # below is edited first, but the schema has no defaults in metadata)
        fused = schema is not None and isinstance(obj.get("metadata"), dict) and _no_metadata_defaults(schema)
        body = crdschema.normalize(obj, schema, prune_unknown=False)[0] if fused and schema else stripped_copy(obj)
        meta = body.setdefault("metadata", {})
        if rt.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            raise ValueError("put_object needs metadata.name")
        with self._lock:
            internal = _to_storage(rt, body)
            old = self._get(rt, meta.get("namespace", ""), meta["name"])
            self._defaults(rt, internal, old)
            if schema is not None and not fused:
                crdschema.apply_defaults(internal, schema)
            stored = self._commit(rt, internal, old, manager="fake-apiserver", operation="Update",
                                  apiv=rt.api_version(), keep_status=True,
                                  stripped=bool(fused and schema and crdschema.null_free_defaults(schema)))
            return _copy_of(_from_storage(rt, stored))

    def update_object(self, what: Any, namespace: str | None, name: str, mutate: Callable[[Obj], Any]) -> Obj:
        """Atomically read-modify-write one object (``mutate`` edits a copy in place; status
        included), bypassing RBAC and faults; emits MODIFIED when something changed."""
        rt = self.resolve(what)
        with self._lock:
            old = self._get(rt, namespace or "", name)
            if old is None:
                raise KeyError(f"{rt.qualified} {namespace}/{name} not found")
            ext = _copy_of(self._external(rt, rt.preferred_version, old))
            mutate(ext)
            internal = _to_storage(rt, strip_nulls(ext))
            self._defaults(rt, internal, old)
            stored = self._commit(rt, internal, old, manager="fake-apiserver", operation="Update",
                                  apiv=rt.api_version(), keep_status=True)
            return _copy_of(self._external(rt, rt.preferred_version, stored))

    def get_object(self, what: Any, namespace: str | None, name: str) -> Obj | None:
        rt = self.resolve(what)
        with self._lock:
            o = self._get(rt, namespace or "", name)
        return None if o is None else _copy_of(self._external(rt, rt.preferred_version, o))

    def list_objects(self, what: Any, namespace: str | None = None) -> list[Obj]:
        rt = self.resolve(what)
        with self._lock:
            objs = self._select(rt, namespace or "", [], [], rt.field_getters())
        return [_copy_of(self._external(rt, rt.preferred_version, o)) for o in objs]

    def delete_object(self, what: Any, namespace: str | None, name: str) -> bool:
        """Delete now (finalizers ignored); emits DELETED. False when absent."""
        rt = self.resolve(what)
        with self._lock:
            old = self._get(rt, namespace or "", name)
            if old is None:
                return False
            self._remove(rt, old)
            return True

    # ----------------------------------------------------------------- storage internals (lock held)

    def _store(self, rt: ResourceType) -> _Store:
        st = self._stores.get(rt.key)
        if st is None:
            st = self._stores[rt.key] = _Store()
        return st

    def _get(self, rt: ResourceType, ns: str, name: str) -> Obj | None:
        return self._store(rt).items.get(f"{ns if rt.namespaced else ''}/{name}")

    def _external(self, rt: ResourceType, version: str, o: Obj, in_list: bool = False) -> Obj:
        out = _from_storage(rt, o) if rt.group == "events.k8s.io" else dict(o)
        if in_list and not rt.crd:
            out.pop("apiVersion", None)
            out.pop("kind", None)
        else:
            out["apiVersion"] = rt.api_version(version)
            out["kind"] = rt.kind
        return out

    def _answer(self, code: int, rt: ResourceType, version: str, o: Obj) -> _Response:
        return _Response(code, self._external(rt, version, o), shows=(rt, version, o))

    def _encoded(self, rt: ResourceType, version: str, o: Obj) -> bytes:
        """The JSON of ``_external(rt, version, o)``, encoded once per stored object and version
        (stored objects are never changed in place): the answer to a write and the watch events
        of that write send the same bytes. No lock: a race only encodes twice."""
        key = (id(o), id(rt), version)
        hit = self._encodings.get(key)
        if hit is not None and hit[0] is o:
            return hit[1]
        data = _compact_json(self._external(rt, version, o)).encode()
        self._encodings[key] = (o, data)  # holding ``o`` keeps its id from being reused
        if len(self._encodings) > _ENCODINGS_KEPT:
            with contextlib.suppress(KeyError):
                self._encodings.popitem(last=False)
        return data

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _serves(self, rt: ResourceType, version: str) -> bool:
        """The CRD of ``rt`` is there, established, and serves ``version``."""
        with self._lock:
            crd = self._store(self._by_kind[("apiextensions.k8s.io", "CustomResourceDefinition")]).items.get(
                f"/{rt.plural}.{rt.group}")
        if crd is None:
            return False
        conditions = (crd.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            return False
        return any(v.get("name") == version and v.get("served") for v in (crd.get("spec") or {}).get("versions") or [])

    def _crd_changed(self, crd: Obj) -> None:
        """(lock held) End the watches of versions the CRD no longer serves."""
        spec = crd.get("spec") or {}
        plural, group = (spec.get("names") or {}).get("plural"), spec.get("group")
        rt = next((r for r in RESOURCE_TYPES if r.crd and r.plural == plural and r.group == group), None)
        if rt is None:
            return
        kept = []
        for w in self._watchers.get(rt.key, []):
            if w.rt is rt and not self._serves(rt, w.version):
                w.q.put(_CLOSE)
            else:
                kept.append(w)
        self._watchers[rt.key] = kept

    def _record(self, rt: ResourceType, etype: str, obj: Obj, prev: Obj | None) -> None:
        if rt.key == CRDS:
            self._crd_changed(obj if etype != "DELETED" else (prev or obj))
        ev = _HistEvent(self._rv, rt.key, etype, obj, prev)
        self._history.append(ev)
        while len(self._history) > self.history_size:
            dropped = self._history.popleft()
            self._oldest_rv = dropped.rv
        for w in self._watchers.get(rt.key, ()):
            self._deliver(w, ev)
        for res, fn in list(self._reactors):
            if res in ("*", rt.plural, rt.kind):
                fn(etype, _copy_of(self._external(rt, rt.preferred_version, obj)))

    @staticmethod
    def _deliver(w: _Watcher, ev: _HistEvent) -> None:
        if ev.type == "ADDED":
            if w.matches(ev.obj):
                w.q.put(("ADDED", ev.obj))
        elif ev.type == "DELETED":
            if w.matches(ev.prev):
                w.q.put(("DELETED", ev.obj))
        else:
            was, now = w.matches(ev.prev), w.matches(ev.obj)
            if was and now:
                w.q.put(("MODIFIED", ev.obj))
            elif now:
                w.q.put(("ADDED", ev.obj))
            elif was:
                gone = dict(ev.prev or {})
                gone["metadata"] = dict(gone.get("metadata") or {}, resourceVersion=str(ev.rv))
                w.q.put(("DELETED", gone))

    def _managed(self, old: Obj | None, manager: str, operation: str, apiv: str, body: Obj,
                 subresource: str | None) -> list[Obj]:
        fields: Obj = {"f:metadata": {}}
        for k in body:
            if k not in ("apiVersion", "kind", "metadata"):
                fields[f"f:{k}"] = {}
        entry: Obj = {"manager": manager, "operation": operation, "apiVersion": apiv, "time": rfc3339(self.now()),
                      "fieldsType": "FieldsV1", "fieldsV1": fields}
        if subresource:
            entry["subresource"] = subresource
        entries = [e for e in ((old or {}).get("metadata") or {}).get("managedFields") or []
                   if not (e.get("manager") == manager and e.get("operation") == operation
                           and e.get("subresource") == subresource)]
        entries.append(entry)
        return entries

    def _defaults(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        """Defaulting done by the real server on writes."""
        meta = obj.setdefault("metadata", {})
        if rt.plural == "namespaces":
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta.get("name", "")
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj.setdefault("status", {}).setdefault("phase", "Active")
        elif rt.plural == "secrets" and rt.group == "":
            sd = obj.pop("stringData", None)
            if isinstance(sd, dict):
                import base64

                data = obj.setdefault("data", {})
                for k, v in sd.items():
                    data[k] = base64.b64encode(str(v).encode()).decode()
            obj.setdefault("type", "Opaque")
        elif rt.plural == "services" and rt.group == "":
            spec = obj.setdefault("spec", {})
            spec.setdefault("type", "ClusterIP")
            spec.setdefault("sessionAffinity", "None")
            if spec.get("clusterIP") in (None, "") and spec["type"] != "ExternalName":
                prev = ((old or {}).get("spec") or {}).get("clusterIP")
                ip = prev or f"10.96.{random.randint(0, 255)}.{random.randint(1, 254)}"
                spec["clusterIP"] = ip
                spec["clusterIPs"] = [ip]
            for p in spec.get("ports") or []:
                if isinstance(p, dict):
                    p.setdefault("protocol", "TCP")
                    if "port" in p:
                        p.setdefault("targetPort", p["port"])
        elif rt.plural == "pods" and rt.group == "":
            obj.setdefault("status", {}).setdefault("phase", "Pending")
        elif rt.plural == "deployments":
            obj.setdefault("spec", {}).setdefault("replicas", 1)

    def _commit(self, rt: ResourceType, new: Obj, old: Obj | None, *, manager: str, operation: str, apiv: str,
                keep_status: bool = False, subresource: str | None = None, dry_run: bool = False,
                stripped: bool = False, clean: _Clean | None = None) -> Obj:
        """Store ``new`` (complete object, storage form, built fresh by the caller: only fields
        _prepare took as they are from ``old`` are shared with it, and nothing edits those) over
        ``old``; returns the stored object. ``stripped``: ``new`` has no null map values already
        (_prepare's output); ``clean``: what _prepare knows of it, kept with the stored object."""
        if not stripped:
            new = strip_nulls_in_place(new)
        status = new.get("status")
        meta = new.setdefault("metadata", {})
        new["apiVersion"] = apiv
        new["kind"] = rt.kind
        if not rt.namespaced:
            meta.pop("namespace", None)
        if old is not None:
            ometa = old["metadata"]
            for k in _SYSTEM_META:
                if k in ometa:
                    meta[k] = ometa[k]
                else:
                    meta.pop(k, None)
            if rt.status_subresource and not keep_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            if _comparable(new) == _comparable(old):
                return old  # no-op write: no new resourceVersion, no event
            if rt.has_generation and _spec_part(rt, new) != _spec_part(rt, old):
                meta["generation"] = int(ometa.get("generation", 1)) + 1
        else:
            meta["uid"] = _uuid4()
            meta["creationTimestamp"] = rfc3339(self.now())
            for k in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                meta.pop(k, None)
            if rt.has_generation:
                meta["generation"] = 1
            else:
                meta.pop("generation", None)
            if rt.status_subresource and not keep_status:
                new.pop("status", None)
                if rt.plural in ("pods", "namespaces"):
                    self._defaults(rt, new, None)
        meta["managedFields"] = self._managed(old, manager, operation, apiv, new, subresource)
        if dry_run:
            meta["resourceVersion"] = ometa_rv(old)
            return new
        # finalizers drained on a terminating object: the object goes away
        if old is not None and meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(rt, old)
            return new
        meta["resourceVersion"] = str(self._next_rv())
        st = self._store(rt)
        ns = meta.get("namespace", "") if rt.namespaced else ""
        if clean is not None and new.get("status") is not status:  # the status _prepare saw is not stored
            clean = (clean[0], clean[1] - {"status"})
        st.put(f"{ns}/{meta['name']}", ns, meta["name"], new, clean)
        self._record(rt, "MODIFIED" if old is not None else "ADDED", new, old)
        return new

    def _remove(self, rt: ResourceType, old: Obj) -> Obj:
        meta = old["metadata"]
        if rt.plural == "namespaces" and rt.group == "":  # contents first, like the namespace controller
            for other in RESOURCE_TYPES:
                st = self._stores.get(other.key)
                if other.namespaced and st is not None:
                    for o in list((st.by_ns.get(meta["name"]) or {}).values()):
                        self._remove(other, o)
        ns = meta.get("namespace", "") if rt.namespaced else ""
        self._store(rt).remove(f"{ns}/{meta['name']}", ns, meta["name"])
        rv = self._next_rv()
        gone = dict(old)
        gone["metadata"] = dict(meta, resourceVersion=str(rv))
        self._record(rt, "DELETED", gone, old)
        return gone

    def _select(self, rt: ResourceType, ns: str, labels: list[Requirement], fields: list[FieldReq],
                getters: dict[str, Callable[[Obj], str]], snapshot: dict[str, Obj] | None = None,
                start: str = "") -> list[Obj]:
        st = self._store(rt)
        if snapshot is not None:
            keys = sorted(k for k in snapshot if not ns or k.startswith(ns + "/"))
            objs: Iterable[Obj] = (snapshot[k] for k in keys if k >= start)
        elif ns and rt.namespaced:
            nsd = st.by_ns.get(ns) or {}
            objs = (nsd[n] for n in sorted(nsd) if f"{ns}/{n}" >= start)
        else:
            keys = st.sorted_keys()
            if start:
                import bisect

                keys = keys[bisect.bisect_left(keys, start):]
            objs = (st.items[k] for k in keys)
        return [o for o in objs if labels_match(labels, o) and fields_match(fields, o, getters)]

    def _snapshot_at(self, rt: ResourceType, rv: int) -> dict[str, Obj] | None:
        """The objects of ``rt`` as of ``rv`` (None: same as now). Raises 410 when compacted."""
        if rv >= self._rv:
            return None
        if rv < self._oldest_rv:
            raise StatusError(410, "Expired", f"too old resource version: {rv} ({self._oldest_rv})")
        snap: dict[str, Obj] | None = None
        for ev in reversed(self._history):
            if ev.rv <= rv:
                break
            if ev.skey != rt.key:
                continue
            if snap is None:
                snap = dict(self._store(rt).items)
            m = ev.obj["metadata"]
            key = f"{m.get('namespace', '') if rt.namespaced else ''}/{m['name']}"
            if ev.type == "ADDED":
                snap.pop(key, None)
            else:
                assert ev.prev is not None
                snap[key] = ev.prev
        return snap

    # ----------------------------------------------------------------- request routing

    def _route(self, method: str, path: str, query: dict[str, str], headers: Any, body: bytes,
               rec: RequestRecord) -> _Response | _WatchPlan:
        if self.token is not None and headers.get("Authorization") != f"Bearer {self.token}":
            raise StatusError(401, "Unauthorized", "Unauthorized")
        path = path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if path in ("/healthz", "/livez", "/readyz"):
            return _Response(200, "ok")
        if path == "/version":
            return _Response(200, KUBE_VERSION)
        if not parts or parts[0] not in ("api", "apis"):
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        if parts[0] == "api":
            if len(parts) == 1:
                return _Response(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": f"{self.host}:{self.port}"}]})
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) == 1:
                return _Response(200, self._group_list())
            group = parts[1]
            if len(parts) == 2:
                g = next((x for x in self._group_list()["groups"] if x["name"] == group), None)
                if g is None:
                    raise StatusError(404, "NotFound", "the server could not find the requested resource")
                return _Response(200, dict(g, kind="APIGroup", apiVersion="v1"))
            version, rest = parts[2], parts[3:]
        if not any(rt.group == group and version in rt.versions for rt in RESOURCE_TYPES):
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            return _Response(200, self._resource_list(group, version))
        legacy_watch = False
        if rest[0] == "watch":
            legacy_watch, rest = True, rest[1:]
        ns = ""
        if len(rest) >= 3 and rest[0] == "namespaces" and (group, version, rest[2]) in self._by_path:
            ns, rest = rest[1], rest[2:]
        rt = self._by_path.get((group, version, rest[0])) if rest else None
        if rt is None or len(rest) > 3 or (ns and not rt.namespaced) or (rt.crd and not self._serves(rt, version)):
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and not (sub == "status" and rt.status_subresource):
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        watch = legacy_watch or _truthy(query.get("watch"))
        if method == "GET":
            verb = "watch" if watch else ("get" if name else "list")
        elif method == "POST" and not name:
            verb = "create"
        elif method == "PUT" and name:
            verb = "update"
        elif method == "PATCH" and name:
            verb = "patch"
        elif method == "DELETE":
            verb = "delete" if name else "deletecollection"
        else:
            raise StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        if rt.namespaced and not ns and verb not in ("list", "watch"):
            if name:  # /api/v1/configmaps/<name> does not exist
                raise StatusError(404, "NotFound", "the server could not find the requested resource")
            raise StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        resource = rt.plural + (f"/{sub}" if sub else "")
        rec.verb, rec.resource, rec.group, rec.namespace, rec.name = verb, resource, group, ns, name
        authz_name = name
        if verb in ("list", "watch") and not name:
            for part in (query.get("fieldSelector") or "").split(","):
                if part.strip().startswith("metadata.name=") and "!=" not in part:
                    authz_name = part.split("=", 1)[1].lstrip("=").strip()
        self._admit(verb, rt, resource, ns, authz_name)
        self._faults(rec)
        self._tls.field_validation = query.get("fieldValidation", "")
        self._tls.warnings = rec.warnings
        ctype = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        manager = query.get("fieldManager") or (headers.get("User-Agent") or "unknown").split("/")[0]
        dry_run = query.get("dryRun") == "All"
        apiv = rt.api_version(version)
        if verb == "get":
            with self._lock:
                o = self._get(rt, ns, name)
            if o is None:
                raise not_found(rt.group, rt.plural, name)
            return self._answer(200, rt, version, o)
        if verb == "list":
            return _Response(200, self._list(rt, version, ns, query))
        if verb == "watch":
            return self._watch(rt, version, ns, name, query)
        if verb == "create":
            obj = self._decode_body(rt, ctype, body)
            return self._answer(201, rt, version, self._create(rt, version, ns, obj, manager, dry_run))
        if verb == "update":
            obj = self._decode_body(rt, ctype, body)
            stored = self._update(rt, version, ns, name, obj, manager, sub, dry_run=dry_run)
            return self._answer(200, rt, version, stored)
        if verb == "patch":
            stored, created = self._patch(rt, version, ns, name, ctype, body, manager, sub, query, dry_run)
            return self._answer(201 if created else 200, rt, version, stored)
        if verb == "delete":
            opts = json.loads(body) if body.strip() else {}
            return self._delete(rt, version, ns, name, opts if isinstance(opts, dict) else {}, dry_run)
        # deletecollection
        with self._lock:
            labels = parse_label_selector(query.get("labelSelector"))
            getters = rt.field_getters()
            fields = parse_field_selector(query.get("fieldSelector"), getters, rt.field_description())
            victims = self._select(rt, ns, labels, fields, getters)
            for o in victims:
                self._admit("delete", rt, rt.plural, _ns_of(o), _name_of(o))
            items = [self._external(rt, version, self._remove(rt, o), in_list=True) for o in victims]
        return _Response(200, {"kind": f"{rt.kind}List", "apiVersion": apiv,
                               "metadata": {"resourceVersion": str(self._rv)}, "items": items})

    def _admit(self, verb: str, rt: ResourceType, resource: str, ns: str, name: str) -> None:
        if not self._rules and self._allow_rules is None:
            return  # no RBAC set up (read without the lock: a rule added meanwhile comes later)
        with self._controls:
            denied = any(r.denies(verb, resource, ns, name) for r in self._rules)
            if not denied and self._allow_rules is not None:
                denied = not any(a.allows(verb, rt.group, resource, ns, name) for a in self._allow_rules)
        if denied:
            what = f'{rt.qualified} "{name}"' if name else rt.qualified
            where = f' in the namespace "{ns}"' if ns else " at the cluster scope"
            raise StatusError(403, "Forbidden",
                              f'{what} is forbidden: User "{self.user}" cannot {verb} resource "{resource}" '
                              f'in API group "{rt.group}"{where}',
                              {"name": name, "group": rt.group, "kind": rt.plural} if name
                              else {"group": rt.group, "kind": rt.plural})

    # ----------------------------------------------------------------- RBAC (allow-list mode)

    def allow(self, verbs: str | Iterable[str], resources: str | Iterable[str], *, groups: str | Iterable[str] = "*",
              namespace: str | None = None, names: Iterable[str] | None = None) -> None:
        """Switch to RBAC allow-list mode (everything not allowed is 403) and add one rule,
        like a PolicyRule of a Role in ``namespace`` (None: a ClusterRole bound cluster-wide).
        ``resources`` are plurals, ``plural/status`` for a subresource, or ``*``."""
        def tup(v: str | Iterable[str]) -> tuple[str, ...]:
            return (v,) if isinstance(v, str) else tuple(v)

        with self._controls:
            if self._allow_rules is None:
                self._allow_rules = []
            self._allow_rules.append(_Allow(tup(verbs), tup(resources), tup(groups), namespace,
                                            tuple(names) if names else ()))

    def load_rbac(self, objects: Iterable[Obj], service_account: str) -> int:
        """Allow what the ClusterRoles/Roles bound to ``service_account`` ("namespace:name") grant,
        reading Role, ClusterRole, RoleBinding and ClusterRoleBinding objects (e.g. a rendered
        chart). Switches to allow-list mode. Returns the number of rules loaded."""
        sa_ns, sa_name = service_account.split(":", 1)
        objs = [o for o in objects if isinstance(o, dict)]
        roles = {(o["kind"], (o.get("metadata") or {}).get("namespace") or "", o["metadata"]["name"]): o
                 for o in objs if o.get("kind") in ("Role", "ClusterRole")}
        n = 0
        for b in objs:
            if b.get("kind") not in ("RoleBinding", "ClusterRoleBinding"):
                continue
            if not any(s.get("kind") == "ServiceAccount" and s.get("name") == sa_name
                       and (s.get("namespace") or (b.get("metadata") or {}).get("namespace")) == sa_ns
                       for s in b.get("subjects") or []):
                continue
            bns = (b.get("metadata") or {}).get("namespace") or ""
            ref = b.get("roleRef") or {}
            role = roles.get((ref.get("kind", ""), bns if ref.get("kind") == "Role" else "", ref.get("name", "")))
            if role is None:
                continue
            scope = bns if b["kind"] == "RoleBinding" else None
            for rule in role.get("rules") or []:
                if "resources" not in rule:
                    continue  # nonResourceURLs: discovery is always allowed here
                self.allow(rule.get("verbs") or [], rule.get("resources") or [], groups=rule.get("apiGroups") or [""],
                           namespace=scope, names=rule.get("resourceNames") or None)
                n += 1
        with self._controls:
            if self._allow_rules is None:
                self._allow_rules = []
        return n

    def _group_list(self) -> Obj:
        groups: dict[str, list[str]] = {}
        for rt in RESOURCE_TYPES:
            if rt.group:
                vs = groups.setdefault(rt.group, [])
                for v in rt.versions:
                    if v not in vs and (not rt.crd or self._serves(rt, v)):
                        vs.append(v)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
             "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
            for g, vs in groups.items()]}

    def _resource_list(self, group: str, version: str) -> Obj:
        res: list[Obj] = []
        for rt in RESOURCE_TYPES:
            if rt.group != group or version not in rt.versions or (rt.crd and not self._serves(rt, version)):
                continue
            res.append({"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
                        "kind": rt.kind, "shortNames": list(rt.short_names),
                        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]})
            if rt.status_subresource:
                res.append({"name": f"{rt.plural}/status", "singularName": "", "namespaced": rt.namespaced,
                            "kind": rt.kind, "verbs": ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version, "resources": res}

    # ----------------------------------------------------------------- verbs

    def _decode_body(self, rt: ResourceType, ctype: str, body: bytes) -> Obj:
        try:
            if ctype in ("application/yaml", "application/x-yaml"):
                obj = yaml.safe_load(body)
            elif ctype in ("application/json", ""):
                obj = json.loads(body or b"null")
            else:
                raise StatusError(415, "UnsupportedMediaType",
                                  'the body of the request was in an unknown format - accepted media types include: '
                                  'application/json, application/yaml, application/vnd.kubernetes.protobuf')
        except (ValueError, yaml.YAMLError) as e:
            raise bad_request(f"error decoding body: {e}") from None
        if not isinstance(obj, dict):
            raise bad_request(f"Object '{rt.kind}' is missing in '{body[:80]!r}'")
        return obj

    def _check_gvk(self, rt: ResourceType, version: str, obj: Obj) -> None:
        kind, av = obj.get("kind"), obj.get("apiVersion")
        if kind not in (None, "") and kind != rt.kind:
            raise bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
        if av not in (None, "") and av != rt.api_version(version):
            if rt.crd and av in (rt.api_version(v) for v in rt.versions):
                return
            raise bad_request(f"the API version in the data ({av}) does not match the expected API version "
                              f"({rt.api_version(version)})")

    def _decode_errors(self, rt: ResourceType, version: str, obj: Obj) -> list[str]:
        """Errors a typed JSON decode of ``obj`` would report (MicroTime, base64, field types)."""
        errs: list[str] = []
        meta = obj.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            return ["json: cannot unmarshal metadata into Go struct field .metadata of type v1.ObjectMeta"]
        for k in ("labels", "annotations"):
            v = (meta or {}).get(k)
            if v is not None and (not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values())):
                errs.append(f"json: cannot unmarshal into Go struct field ObjectMeta.metadata.{k} of type string")
        for k in ("creationTimestamp", "deletionTimestamp"):
            if (e := check_time((meta or {}).get(k))) is not None:
                errs.append(e)
        if rt.crd:
            return errs
        if rt.plural == "leases":
            spec = obj.get("spec") or {}
            for k in ("acquireTime", "renewTime"):
                if (e := check_microtime(spec.get(k))) is not None:
                    errs.append(e)
            for k in ("leaseDurationSeconds", "leaseTransitions"):
                v = spec.get(k)
                if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                    errs.append(f"json: cannot unmarshal {type(v).__name__} into Go struct field LeaseSpec.spec.{k} of type int32")
            if spec.get("holderIdentity") is not None and not isinstance(spec.get("holderIdentity"), str):
                errs.append("json: cannot unmarshal into Go struct field LeaseSpec.spec.holderIdentity of type string")
        elif rt.plural == "events":
            if (e := check_microtime(obj.get("eventTime"))) is not None:
                errs.append(e)
            series = obj.get("series") or {}
            if (e := check_microtime(series.get("lastObservedTime"))) is not None:
                errs.append(e)
            for k in ("firstTimestamp", "lastTimestamp", "deprecatedFirstTimestamp", "deprecatedLastTimestamp"):
                if (e := check_time(obj.get(k))) is not None:
                    errs.append(e)
        elif rt.plural == "configmaps":
            data = obj.get("data")
            if data is not None and (not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values())):
                errs.append("json: cannot unmarshal into Go struct field ConfigMap.data of type string")
            for v in (obj.get("binaryData") or {}).values():
                if not _is_b64(v):
                    errs.append("illegal base64 data in binaryData")
        elif rt.plural == "secrets":
            data = obj.get("data")
            if data is not None and not isinstance(data, dict):
                errs.append("json: cannot unmarshal into Go struct field Secret.data of type map[string][]uint8")
            for v in (data or {}).values():
                if not _is_b64(v):
                    errs.append("illegal base64 data at input byte 0")
                    break
        return errs

    def _validate(self, rt: ResourceType, version: str, obj: Obj, old: Obj | None, schema: Obj | None = None, *,
                  skip: Collection[str] = ()) -> list[FieldError]:
        """Validation the real server does (422 Invalid). Returns the errors ``schema`` finds
        before ratcheting (those of unchanged fields, which do not count); ``skip``: fields
        known to have none, not checked."""
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        schema_errs = crdschema.validate(obj, schema, skip=skip) if schema is not None else []
        errs: list[FieldError] = list(crdschema.ratchet(schema_errs, obj, old))
        if not name:
            errs.append(FieldError("metadata.name", "FieldValueRequired", "Required value: name or generateName is required"))
        else:
            dns_label = rt.plural in ("namespaces", "services") and rt.group == ""
            pattern = DNS1123_LABEL if dns_label else DNS1123_SUBDOMAIN
            limit = 63 if dns_label else 253
            if rt.plural != "events" and (len(name) > limit or not pattern.match(name)):
                errs.append(FieldError("metadata.name", "FieldValueInvalid",
                                       f'Invalid value: "{name}": a lowercase RFC 1123 '
                                       f'{"label" if dns_label else "subdomain"} must consist of lower case alphanumeric '
                                       "characters, '-' or '.', and must start and end with an alphanumeric character"))
        labels = meta.get("labels") or {}
        from tests.support.k8sutil import _KEY_RE, _VALUE_RE

        for k, v in labels.items():
            if not _KEY_RE.match(k) or len(k.split("/")[-1]) > 63:
                errs.append(FieldError("metadata.labels", "FieldValueInvalid", f'Invalid value: "{k}": name part must '
                                       "consist of alphanumeric characters, '-', '_' or '.'"))
            if len(v) > 63 or not _VALUE_RE.match(v):
                errs.append(FieldError("metadata.labels", "FieldValueInvalid", f'Invalid value: "{v}": a valid label '
                                       "must be an empty string or consist of alphanumeric characters, '-', '_' or '.'"))
        ann = meta.get("annotations") or {}
        if sum(len(k) + len(v) for k, v in ann.items()) > MAX_ANNOTATION_BYTES:
            errs.append(FieldError("metadata.annotations", "FieldValueTooLong",
                                   f"Too long: must have at most {MAX_ANNOTATION_BYTES} bytes"))
        if old is not None and (old.get("metadata") or {}).get("deletionTimestamp"):
            new_f = set(meta.get("finalizers") or [])
            if not new_f <= set(old["metadata"].get("finalizers") or []):
                errs.append(FieldError("metadata.finalizers", "FieldValueForbidden",
                                       "Forbidden: no new finalizers can be added if the object is being deleted"))
        if rt.plural == "configmaps":
            data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
            size = 0
            for k, v in list(data.items()) + list(binary.items()):
                size += len(v.encode() if isinstance(v, str) else v)
                if not CONFIG_KEY.match(k) or len(k) > 253:
                    errs.append(FieldError(f"data[{k}]", "FieldValueInvalid", f'Invalid value: "{k}": a valid config key '
                                           "must consist of alphanumeric characters, '-', '_' or '.'"))
            if size > MAX_CONFIG_BYTES:
                errs.append(FieldError("", "FieldValueTooLong", f"Too long: must have at most {MAX_CONFIG_BYTES} bytes"))
            if old is not None and old.get("immutable") and (old.get("data"), old.get("binaryData"), True) != (
                    obj.get("data"), obj.get("binaryData"), obj.get("immutable")):
                errs.append(FieldError("data", "FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set"))
        elif rt.plural == "secrets":
            import base64

            data = obj.get("data") or {}
            size = sum(len(base64.b64decode(v)) for v in data.values())
            if size > MAX_CONFIG_BYTES:
                errs.append(FieldError("data", "FieldValueTooLong", f"Too long: must have at most {MAX_CONFIG_BYTES} bytes"))
            for k in data:
                if not CONFIG_KEY.match(k):
                    errs.append(FieldError(f"data[{k}]", "FieldValueInvalid", f'Invalid value: "{k}"'))
            if obj.get("type") == "kubernetes.io/tls":
                for k in ("tls.crt", "tls.key"):
                    if k not in data:
                        errs.append(FieldError(f"data[{k}]", "FieldValueRequired", "Required value"))
            if old is not None and old.get("type") != obj.get("type"):
                errs.append(FieldError("type", "FieldValueInvalid", f'Invalid value: "{obj.get("type")}": field is immutable'))
            if old is not None and old.get("immutable") and old.get("data") != obj.get("data"):
                errs.append(FieldError("data", "FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set"))
        elif rt.plural == "leases":
            d = (obj.get("spec") or {}).get("leaseDurationSeconds")
            if d is not None and d <= 0:
                errs.append(FieldError("spec.leaseDurationSeconds", "FieldValueInvalid",
                                       f"Invalid value: {d}: must be greater than 0"))
        elif rt.plural == "pods" and rt.group == "" and old is not None:
            def mutable_out(spec: Any) -> Any:
                spec = copy.deepcopy(spec or {})
                for k in ("containers", "initContainers"):
                    for c in spec.get(k) or []:
                        if isinstance(c, dict):
                            c.pop("image", None)
                for k in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates"):
                    spec.pop(k, None)
                return spec
            if mutable_out(obj.get("spec")) != mutable_out(old.get("spec")):
                errs.append(FieldError("spec", "FieldValueForbidden",
                                       "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
                                       "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                                       "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                                       "(allow it to be set to 1 if it was previously negative)"))
        elif rt.plural == "services" and rt.group == "" and old is not None:
            new_ip, old_ip = (obj.get("spec") or {}).get("clusterIP"), (old.get("spec") or {}).get("clusterIP")
            if new_ip and old_ip and new_ip != old_ip:
                errs.append(FieldError("spec.clusterIPs[0]", "FieldValueInvalid",
                                       f'Invalid value: []string{{"{new_ip}"}}: may not change once set'))
        elif rt.plural == "deployments" and old is not None:
            if (obj.get("spec") or {}).get("selector") != (old.get("spec") or {}).get("selector"):
                errs.append(FieldError("spec.selector", "FieldValueInvalid", "Invalid value: field is immutable"))
        elif rt.plural == "endpointslices":
            if obj.get("addressType") not in ("IPv4", "IPv6", "FQDN"):
                errs.append(FieldError("addressType", "FieldValueRequired" if not obj.get("addressType") else
                                       "FieldValueNotSupported", 'Unsupported value: supported values: "FQDN", "IPv4", "IPv6"'))
            if old is not None and old.get("addressType") != obj.get("addressType"):
                errs.append(FieldError("addressType", "FieldValueInvalid", "Invalid value: field is immutable"))
        elif rt.plural == "events" and rt.group == "events.k8s.io":
            ev = _from_storage(rt, obj)
            if old is None:
                if not ev.get("eventTime"):
                    errs.append(FieldError("eventTime", "FieldValueRequired", "Required value"))
                for k, lim in (("reportingController", 316), ("reportingInstance", 128), ("action", 128),
                               ("reason", 128)):
                    if not ev.get(k):
                        errs.append(FieldError(k, "FieldValueRequired", "Required value"))
                    elif len(str(ev[k])) > lim:
                        errs.append(FieldError(k, "FieldValueTooLong", f"Too long: may not be more than {lim} bytes"))
                if ev.get("type") not in ("Normal", "Warning"):
                    errs.append(FieldError("type", "FieldValueInvalid", f'Invalid value: "{ev.get("type", "")}": '
                                           "has invalid value, must be one of Normal or Warning"))
            else:
                oev = _from_storage(rt, old)
                for k in _EVENTS_V1_IMMUTABLE:
                    if ev.get(k) != oev.get(k):
                        errs.append(FieldError(k, "FieldValueInvalid", f"Invalid value: {json.dumps(ev.get(k))}: "
                                               "field is immutable"))
            if len(str(ev.get("note") or "").encode()) > 1024:
                errs.append(FieldError("note", "FieldValueTooLong", "Too long: may not be more than 1024 bytes"))
            series = ev.get("series")
            if series is not None:
                if int(series.get("count") or 0) < 2:
                    errs.append(FieldError("series.count", "FieldValueInvalid",
                                           f"Invalid value: {series.get('count')}: should be at least 2"))
                if not series.get("lastObservedTime"):
                    errs.append(FieldError("series.lastObservedTime", "FieldValueRequired", "Required value"))
            reg_ns = (ev.get("regarding") or {}).get("namespace")
            if reg_ns and reg_ns != meta.get("namespace"):
                errs.append(FieldError("regarding.namespace", "FieldValueInvalid",
                                       f'Invalid value: "{reg_ns}": does not match event.namespace'))
        if errs:
            raise invalid(rt.group, rt.kind, name, errs)
        return schema_errs

    def _prepare(self, rt: ResourceType, version: str, obj: Obj, old: Obj | None, *,
                 via_patch: bool) -> tuple[Obj, _Clean | None]:
        """Decode-check, convert to storage form, default and validate an incoming object;
        returns it without null map values (a fresh tree but for fields of ``old`` taken as they
        are, ready for _commit) and, for a custom resource, what is known of it (_Clean)."""
        derrs = self._decode_errors(rt, version, obj)
        if derrs:
            if via_patch:
                raise invalid("", "", "", [FieldError("patch", "FieldValueInvalid", f"Invalid value: {derrs[0]}")])
            raise bad_request(f'{rt.kind} in version "{version}" cannot be handled as a {rt.kind}: {derrs[0]}')
        self._tls.version = version
        schema = crdschema.schema_for(rt.group, rt.kind, version) if rt.crd else None
        clean: _Clean | None = None
        if schema is not None and isinstance(obj.get("metadata"), dict):
            # the copy, pruned and defaulted in one walk (_defaults adds nothing to a custom
            # resource that has metadata); nothing of ``obj`` is stored but the fields of ``old``
            # it still holds that are known normalized and valid (a status write's spec)
            reuse = self._reusable(rt, schema, obj, old)
            internal, pruned = crdschema.normalize(obj, schema, reuse=reuse)
            self._prune_unknown(rt, internal, via_patch, pruned)
            errors = self._validate(rt, version, internal, old, schema, skip=reuse)
            if crdschema.stable(schema):  # what the next write may take as it is
                clean = (schema, frozenset(k for k in internal if type(k) is str and k not in _ROOT_FIELDS
                                           and not any(_within(e.field, k) for e in errors)))
            return (internal if crdschema.null_free_defaults(schema) else strip_nulls_in_place(internal)), clean
        internal = _to_storage(rt, stripped_copy(obj))  # nothing of ``obj`` is stored
        self._prune_unknown(rt, internal, via_patch)
        self._defaults(rt, internal, old)
        if schema is not None:
            crdschema.apply_defaults(internal, schema)
        self._validate(rt, version, internal, old, schema)
        return strip_nulls_in_place(internal), clean

    def _reusable(self, rt: ResourceType, schema: Obj, obj: Obj, old: Obj | None) -> frozenset[str]:
        """The fields of ``obj`` that are those of ``old`` (the same objects: a status write's
        spec, the status of a write to the main resource) and that _prepare found normalized
        and valid under ``schema`` when ``old`` was written: taken as they are, not checked again."""
        if old is None or not self._reuse_clean:
            return frozenset()
        meta = old["metadata"]
        mark = self._store(rt).clean.get(f"{meta.get('namespace', '') if rt.namespaced else ''}/{meta['name']}")
        if mark is None or mark[0] is not old or mark[1] is not schema:
            return frozenset()
        return frozenset(k for k in mark[2] if k in obj and obj[k] is old[k])

    def _prune_unknown(self, rt: ResourceType, obj: Obj, via_patch: bool = False,
                       pruned: list[str] | None = None) -> None:
        """Drop unknown top-level and metadata fields like a typed decode / structural pruning does;
        ``fieldValidation=Strict`` makes them a 400, otherwise each one is a ``Warning`` header.
        ``pruned``: the fields the CRD schema already dropped from ``obj`` (crdschema.normalize)."""
        schema = crdschema.schema_for(rt.group, rt.kind, getattr(self._tls, "version", "")) if rt.crd else None
        if pruned is not None:
            unknown = list(pruned)
        elif schema is not None:
            unknown = crdschema.prune(obj, schema)  # removes them in place
        else:
            allowed = _KNOWN_FIELDS.get(rt.plural if not rt.crd else "*crd", set()) | {"apiVersion", "kind", "metadata"}
            if rt.crd and rt.status_subresource:
                allowed = allowed | {"status"}
            unknown = [k for k in obj if k not in allowed]
        meta = obj.get("metadata") or {}
        unknown += [f"metadata.{k}" for k in meta if k not in _OBJECT_META_FIELDS]
        if not unknown:
            return
        mode = getattr(self._tls, "field_validation", "") or "Warn"
        if mode == "Strict":
            msg = "strict decoding error: " + ", ".join(f'unknown field "{k}"' for k in unknown)
            if via_patch:  # a patch reports it on the patched object: 422
                raise invalid("", "", "", [FieldError("patch", "FieldValueInvalid", f"Invalid value: {msg}")])
            raise bad_request(msg)
        for k in unknown:
            if k.startswith("metadata."):
                meta.pop(k.split(".", 1)[1], None)
            elif "." not in k and "[" not in k:
                obj.pop(k, None)
            if mode == "Warn":
                warnings = getattr(self._tls, "warnings", None)
                if warnings is not None:
                    warnings.append(f'unknown field "{k}"')

    def _create(self, rt: ResourceType, version: str, ns: str, obj: Obj, manager: str, dry_run: bool) -> Obj:
        self._check_gvk(rt, version, obj)
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if rt.namespaced:
            bns = meta.get("namespace")
            if bns and bns != ns:
                raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = str(meta["generateName"]) + "".join(
                random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
        if meta.get("resourceVersion"):
            raise StatusError(500, "InternalError",
                              "Internal error occurred: resourceVersion should not be set on objects to be created")
        with self._lock:
            if rt.namespaced:
                nso = self._get(self.resolve("namespaces"), "", ns)
                if nso is None:
                    raise not_found("", "namespaces", ns)
                if (nso.get("metadata") or {}).get("deletionTimestamp"):
                    raise StatusError(403, "Forbidden", f'{rt.qualified} "{meta.get("name", "")}" is forbidden: unable '
                                      f"to create new content in namespace {ns} because it is being terminated")
            if rt.status_subresource:  # status is dropped on create, before validation
                obj = {k: v for k, v in obj.items() if k != "status"}
            internal, clean = self._prepare(rt, version, obj, None, via_patch=False)
            if self._get(rt, ns, internal["metadata"]["name"]) is not None:
                raise already_exists(rt.group, rt.plural, internal["metadata"]["name"])
            return self._commit(rt, internal, None, manager=manager, operation="Update",
                                apiv=rt.api_version(version), dry_run=dry_run, stripped=True, clean=clean)

    def _update(self, rt: ResourceType, version: str, ns: str, name: str, obj: Obj, manager: str,
                sub: str | None, *, dry_run: bool = False, via_patch: bool = False,
                operation: str = "Update") -> Obj:
        self._check_gvk(rt, version, obj)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = obj["metadata"] = {}
        if meta.get("name") != name:
            raise bad_request(f"the name of the object ({meta.get('name', '')}) does not match the name on the URL ({name})")
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
            meta["namespace"] = ns
        with self._lock:
            old = self._get(rt, ns, name)
            if old is None:
                raise not_found(rt.group, rt.plural, name)
            rv = meta.get("resourceVersion")
            if rv not in (None, "") and str(rv) != old["metadata"]["resourceVersion"]:
                raise conflict(rt.group, rt.plural, name)
            ouid = meta.get("uid")
            if ouid and ouid != old["metadata"].get("uid"):
                raise conflict(rt.group, rt.plural, name, f"Precondition failed: UID in precondition: {ouid}, "
                               f"UID in object meta: {old['metadata'].get('uid')}")
            if sub == "status":
                # _prepare copies all of it: only what is edited here is copied now
                merged = self._external(rt, version, old)
                merged["metadata"] = dict(merged["metadata"])
                if "status" in obj:
                    merged["status"] = obj["status"]
                else:
                    merged.pop("status", None)
                if not rt.crd:
                    for k in ("labels", "annotations"):
                        if k in meta:
                            merged["metadata"][k] = meta[k]
                        else:
                            merged["metadata"].pop(k, None)
                obj = merged
            elif rt.status_subresource:  # the main resource ignores status changes, before validation
                obj = {k: v for k, v in obj.items() if k != "status"}
                ext_status = self._external(rt, version, old).get("status")
                if ext_status is not None:
                    obj["status"] = ext_status  # _prepare copies it (or takes it as it is)
            internal, clean = self._prepare(rt, version, obj, old, via_patch=via_patch)
            return self._commit(rt, internal, old, manager=manager, operation=operation,
                                apiv=rt.api_version(version), keep_status=(sub == "status"), subresource=sub,
                                dry_run=dry_run, stripped=True, clean=clean)

    def _patch(self, rt: ResourceType, version: str, ns: str, name: str, ctype: str, body: bytes, manager: str,
               sub: str | None, query: dict[str, str], dry_run: bool) -> tuple[Obj, bool]:
        accepted = ["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]
        if not rt.crd:
            accepted.append("application/strategic-merge-patch+json")
        if ctype not in accepted:
            raise StatusError(415, "UnsupportedMediaType",
                              "the body of the request was in an unknown format - accepted media types include: "
                              + ", ".join(accepted))
        try:
            patch = yaml.safe_load(body) if ctype == "application/apply-patch+yaml" else json.loads(body or b"null")
        except (ValueError, yaml.YAMLError) as e:
            raise bad_request(f"error decoding patch: {e}") from None
        with self._lock:
            old = self._get(rt, ns, name)
            if ctype == "application/apply-patch+yaml":
                if not query.get("fieldManager"):
                    raise bad_request("PATCH requests with apply-patch require fieldManager")
                if not isinstance(patch, dict):
                    raise bad_request("apply patch must be an object")
                if old is None:
                    if sub:
                        raise not_found(rt.group, rt.plural, name)
                    patch.setdefault("metadata", {}).setdefault("name", name)
                    return self._create(rt, version, ns, patch, query["fieldManager"], dry_run), True
            if old is None:
                raise not_found(rt.group, rt.plural, name)
            if ctype == "application/merge-patch+json":
                # merge_patch never edits its target and takes the values of the patch (parsed
                # here for this request only) as they are; _update copies all of the result
                # (_prepare) after editing only its metadata
                current = self._external(rt, version, old)
                current["metadata"] = dict(current["metadata"])
            else:
                current = copy.deepcopy(self._external(rt, version, old))
            try:
                if ctype == "application/json-patch+json":
                    patched = json_patch(current, patch)
                elif ctype == "application/merge-patch+json":
                    if not isinstance(patch, dict):
                        raise bad_request("json: cannot unmarshal into Go value of type map[string]interface {}")
                    patched = merge_patch(current, patch, copy_values=False)
                elif ctype == "application/strategic-merge-patch+json":
                    if not isinstance(patch, dict):
                        raise bad_request("json: cannot unmarshal into Go value of type map[string]interface {}")
                    patched = strategic_merge(current, patch)
                else:
                    patched = strategic_merge(current, patch) if not rt.crd else merge_patch(current, patch)
            except PatchError as e:
                raise StatusError(422, "Invalid", str(e)) from None
            if not isinstance(patched, dict):
                raise invalid(rt.group, rt.kind, name, [FieldError("patch", "FieldValueInvalid", "Invalid value: not an object")])
            raw_meta = patched.get("metadata")
            pmeta: Obj = raw_meta if isinstance(raw_meta, dict) else {}
            if pmeta.get("name") != name:
                raise bad_request(f"the name of the object ({pmeta.get('name', '')}) does not match the name on the URL ({name})")
            prv = pmeta.get("resourceVersion")
            if ctype == "application/apply-patch+yaml":
                pmeta.pop("resourceVersion", None)
            elif prv not in (None, "") and str(prv) != old["metadata"]["resourceVersion"]:
                raise conflict(rt.group, rt.plural, name)
            op = "Apply" if ctype == "application/apply-patch+yaml" else "Update"
            mgr = query.get("fieldManager") or manager
            return self._update(rt, version, ns, name, patched, mgr, sub, dry_run=dry_run, via_patch=True,
                                operation=op), False

    def _delete(self, rt: ResourceType, version: str, ns: str, name: str, opts: Obj, dry_run: bool) -> _Response:
        with self._lock:
            old = self._get(rt, ns, name)
            if old is None:
                raise not_found(rt.group, rt.plural, name)
            pre = opts.get("preconditions") or {}
            if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise conflict(rt.group, rt.plural, name, "Precondition failed: ResourceVersion in precondition: "
                               f"{pre['resourceVersion']}, ResourceVersion in object meta: {old['metadata']['resourceVersion']}")
            if pre.get("uid") and pre["uid"] != old["metadata"].get("uid"):
                raise conflict(rt.group, rt.plural, name, f"Precondition failed: UID in precondition: {pre['uid']}, "
                               f"UID in object meta: {old['metadata'].get('uid')}")
            if dry_run:
                return self._answer(200, rt, version, old)
            if old["metadata"].get("finalizers"):
                if old["metadata"].get("deletionTimestamp"):
                    return self._answer(202, rt, version, old)
                new = copy.deepcopy(old)
                new["metadata"]["deletionTimestamp"] = rfc3339(self.now())
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                if rt.has_generation:
                    new["metadata"]["generation"] = int(old["metadata"].get("generation", 1)) + 1
                new["metadata"]["resourceVersion"] = str(self._next_rv())
                self._store(rt).put(f"{ns}/{name}", ns, name, new)
                self._record(rt, "MODIFIED", new, old)
                return self._answer(202 if not rt.crd else 200, rt, version, new)
            if rt.plural == "namespaces" and rt.group == "":
                # the namespace goes Terminating, the namespace controller empties it, then it goes
                term = copy.deepcopy(old)
                term["metadata"]["deletionTimestamp"] = rfc3339(self.now())
                term["metadata"]["deletionGracePeriodSeconds"] = 0
                term["status"] = {"phase": "Terminating"}
                term["metadata"]["resourceVersion"] = str(self._next_rv())
                self._store(rt).put(f"/{name}", "", name, term)
                self._record(rt, "MODIFIED", term, old)
                old = term
            gone = self._remove(rt, old)
        if rt.crd or rt.plural in ("pods", "services", "namespaces"):
            return self._answer(200, rt, version, gone)
        details: Obj = {"name": name, "kind": rt.plural, "uid": old["metadata"].get("uid")}
        if rt.group:
            details["group"] = rt.group
        return _Response(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                               "details": details})

    def _list(self, rt: ResourceType, version: str, ns: str, query: dict[str, str]) -> Obj:
        labels = parse_label_selector(query.get("labelSelector"))
        getters = rt.field_getters()
        fields = parse_field_selector(query.get("fieldSelector"), getters, rt.field_description())
        limit_s = query.get("limit")
        try:
            limit = int(limit_s) if limit_s not in (None, "") else 0
        except ValueError:
            raise bad_request(f"invalid limit {limit_s!r}") from None
        rv_s = query.get("resourceVersion", "")
        match = query.get("resourceVersionMatch", "")
        cont = query.get("continue", "")
        if match and not rv_s:
            raise invalid("meta.k8s.io", "ListOptions", "", [FieldError(
                "resourceVersionMatch", "FieldValueForbidden",
                "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided")])
        if match not in ("", "Exact", "NotOlderThan"):
            raise invalid("meta.k8s.io", "ListOptions", "", [FieldError(
                "resourceVersionMatch", "FieldValueNotSupported", f'Unsupported value: "{match}"')])
        with self._lock:
            cur = self._rv
            start = ""
            snapshot: dict[str, Obj] | None = None
            list_rv = cur
            if cont:
                if rv_s:
                    raise bad_request("specifying resource version is not allowed when using continue")
                token_rv, start = decode_continue(cont)
                if token_rv == -1:
                    list_rv = cur
                elif token_rv < self._oldest_rv:
                    raise StatusError(
                        410, "Expired",
                        "The provided continue parameter is too old to display a consistent list result. You can start "
                        "a new list without the continue parameter, or use the continue token in this response to "
                        "retrieve the remainder of the results. Continuing with the provided token results in an "
                        "inconsistent list - objects that were created, modified, or deleted between the time the "
                        "first chunk was returned and now may show up in the list.",
                        extra_meta={"continue": encode_continue(-1, start)})
                else:
                    list_rv = token_rv
                    snapshot = self._snapshot_at(rt, token_rv)
            elif rv_s:
                try:
                    want = int(rv_s)
                except ValueError:
                    raise bad_request(f'invalid resource version "{rv_s}"') from None
                if want == 0 and match != "Exact":
                    limit = 0  # resourceVersion=0 is served from the watch cache, which ignores limit
                elif want > cur:
                    raise StatusError(504, "Timeout", f"Timeout: Too large resource version: {want}, current: {cur}",
                                      {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                                       "retryAfterSeconds": 1}, retry_after=1)
                elif match == "Exact" or (not match and limit):
                    snapshot = self._snapshot_at(rt, want)
                    list_rv = want
            objs = self._select(rt, ns if rt.namespaced else "", labels, fields, getters, snapshot, start)
        more = ""
        remaining = 0
        if limit and len(objs) > limit:
            last = objs[limit - 1]["metadata"]
            more = encode_continue(list_rv, f"{last.get('namespace', '') if rt.namespaced else ''}/{last['name']}\x00")
            remaining = len(objs) - limit
            objs = objs[:limit]
        lmeta: Obj = {"resourceVersion": str(list_rv)}
        if more:
            lmeta["continue"] = more
            if not labels and not fields:
                lmeta["remainingItemCount"] = remaining
        return {"kind": f"{rt.kind}List", "apiVersion": rt.api_version(version), "metadata": lmeta,
                "items": [self._external(rt, version, o, in_list=True) for o in objs]}

    def _watch(self, rt: ResourceType, version: str, ns: str, name: str, query: dict[str, str]) -> _WatchPlan:
        labels = parse_label_selector(query.get("labelSelector"))
        getters = rt.field_getters()
        fields = parse_field_selector(query.get("fieldSelector"), getters, rt.field_description())
        if name:
            fields = [*fields, FieldReq("metadata.name", "=", name)]
        bookmarks = _truthy(query.get("allowWatchBookmarks"))
        send_initial = _truthy(query.get("sendInitialEvents"))
        rv_s = query.get("resourceVersion", "")
        timeout_s = query.get("timeoutSeconds")
        try:
            timeout = float(timeout_s) if timeout_s not in (None, "") else self.default_watch_timeout
            if timeout <= 0:
                timeout = self.default_watch_timeout
        except ValueError:
            raise bad_request(f"invalid timeoutSeconds {timeout_s!r}") from None
        if send_initial and (not bookmarks or query.get("resourceVersionMatch") != "NotOlderThan"):
            raise invalid("meta.k8s.io", "ListOptions", "", [FieldError(
                "sendInitialEvents", "FieldValueForbidden",
                "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan and allowWatchBookmarks")])
        w = _Watcher(rt, version, ns if rt.namespaced else "", labels, fields, getters, bookmarks)
        with self._lock:
            cur = self._rv
            if rv_s in ("", "0") or send_initial:
                want = int(rv_s) if rv_s not in ("", "0") else 0
                if want > cur:
                    raise StatusError(504, "Timeout", f"Timeout: Too large resource version: {want}, current: {cur}",
                                      {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                                       "retryAfterSeconds": 1}, retry_after=1)
                for o in self._select(rt, w.namespace, labels, fields, getters):
                    w.q.put(("ADDED", o))
                if send_initial:
                    w.q.put(("BOOKMARK", cur, {INITIAL_EVENTS_END: "true"}))
            else:
                try:
                    want = int(rv_s)
                except ValueError:
                    raise bad_request(f'invalid resource version "{rv_s}"') from None
                if want > cur:
                    raise StatusError(504, "Timeout", f"Timeout: Too large resource version: {want}, current: {cur}",
                                      {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                                       "retryAfterSeconds": 1}, retry_after=1)
                if want < self._oldest_rv:
                    w.q.put(("ERROR", status_object(410, "Expired",
                                                    f"too old resource version: {want} ({self._oldest_rv})")))
                    w.q.put(_CLOSE)
                    return _WatchPlan(w, time.monotonic() + timeout)
                for ev in self._history:
                    if ev.rv > want and ev.skey == rt.key:
                        self._deliver(w, ev)
            self._watchers.setdefault(rt.key, []).append(w)
        return _WatchPlan(w, time.monotonic() + timeout)

    def _unregister(self, w: _Watcher) -> None:
        with self._lock:
            ws = self._watchers.get(w.rt.key)
            if ws and w in ws:
                ws.remove(w)

    def _faults(self, rec: RequestRecord) -> None:
        if not self._injections:
            return  # nothing injected (read without the lock, as in _admit)
        found: Injection | None = None
        with self._controls:
            for inj in self._injections:
                if inj.matches(rec.verb, rec.resource, rec.namespace, rec.name):
                    inj.hits += 1
                    if inj.times is not None:
                        inj.times -= 1
                        if inj.times <= 0:
                            inj.active = False
                    found = inj
                    break
        if found is None:
            return
        if found.latency:
            time.sleep(found.latency)
        if found.drop:
            raise _Drop()
        if found.status is not None:
            raise _fault_error(found)


def ometa_rv(old: Obj | None) -> str:
    return str(((old or {}).get("metadata") or {}).get("resourceVersion", "")) if old else ""


def _is_b64(v: Any) -> bool:
    import base64
    import binascii

    if not isinstance(v, str):
        return False
    try:
        base64.b64decode(v, validate=True)
        return True
    except (binascii.Error, ValueError):
        return False


_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
            410: "Expired", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
            503: "ServiceUnavailable", 504: "Timeout"}


def _event_chunk(line: bytes) -> bytes:
    """One watch event: a JSON line in its own chunk (of the chunked answer)."""
    return b"%x\r\n%s\n\r\n" % (len(line) + 1, line)


def _fault_error(inj: Injection) -> StatusError:
    code = inj.status or 500
    reason = _REASONS.get(code, "Unknown")
    msg = inj.message or {429: "Too many requests, please try again later.",
                          500: "Internal error occurred: injected fault",
                          503: "The server is currently unable to handle the request",
                          504: "The server was unable to return a response in the time allotted, but may still be "
                               "processing the request"}.get(code, "injected fault")
    details: Obj = {}
    if inj.retry_after is not None:
        details["retryAfterSeconds"] = inj.retry_after
    return StatusError(code, reason, msg, details or None, retry_after=inj.retry_after)


class _Handler(FastRequestMixin):
    api: FakeApiServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "fake-kube-apiserver"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    _date: tuple[int, str] = (0, "")  # (second, its Date header), shared by every handler

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The stdlib's, formatted once per second for the Date header of the answers."""
        if timestamp is not None:
            return super().date_time_string(timestamp)
        now = int(time.time())
        second, text = _Handler._date
        if second != now:
            text = super().date_time_string(now)
            _Handler._date = (now, text)
        return text

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        api = self.api
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        too_large = length > MAX_REQUEST_BYTES
        ctype = self.headers.get("Content-Type") or ""
        try:
            parsed: Any = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode(errors="replace")
        rec = RequestRecord(method, split.path, query, ctype, parsed, self.headers.get("User-Agent") or "",
                            time=time.time())
        headers: dict[str, str] = {}
        try:
            if api.latency:
                time.sleep(api.latency)
            if too_large:
                raise StatusError(413, "RequestEntityTooLarge",
                                  f"Request entity too large: limit is {MAX_REQUEST_BYTES}")
            result = api._route(method, split.path, query, self.headers, body, rec)
        except StatusError as e:
            result = _Response(e.code, e.status())
            if e.retry_after is not None:
                headers["Retry-After"] = str(e.retry_after)
        except _Drop:
            rec.status = 0
            with api._lock:
                api._log.append(rec)
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        except Exception as e:  # a bug in the fake: answer like the real server would on a panic
            result = _Response(500, status_object(500, "InternalError", f"Internal error occurred: {e!r}"))
        rec.status = result.code if isinstance(result, _Response) else 200
        api._log.append(rec)  # no lock: appending to (and copying) a deque is one step for other threads
        if isinstance(result, _WatchPlan):
            self._stream(result)
            return
        if result.shows is not None:
            data = api._encoded(*result.shows)
        else:
            data = (result.body if isinstance(result.body, str) else _compact_json(result.body)).encode()
        gzipped = len(data) > GZIP_MIN_BYTES and "gzip" in (self.headers.get("Accept-Encoding") or "")
        if gzipped:  # APIResponseCompression: large answers are gzipped for clients that accept it
            import gzip

            data = gzip.compress(data, compresslevel=1)
        self.send_response(result.code)
        self.send_header("Content-Type", "text/plain; charset=utf-8" if isinstance(result.body, str) else "application/json")
        if gzipped:
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", _uuid4())
        for k, v in headers.items():
            self.send_header(k, v)
        for w in rec.warnings:
            self.send_header("Warning", f"299 - {json.dumps(w)}")
        self._end_headers_with(data)

    def _end_headers_with(self, data: bytes) -> None:
        """``end_headers()`` then ``wfile.write(data)``, in one write (one send, not two)."""
        buffer = getattr(self, "_headers_buffer", None)
        if buffer is None:  # nothing buffered (an HTTP/0.9 request)
            self.end_headers()
            self.wfile.write(data)
            return
        if self.request_version != "HTTP/0.9":
            buffer.append(b"\r\n")
        buffer.append(data)
        self.flush_headers()

    def _stream(self, plan: _WatchPlan) -> None:
        api, w = self.api, plan.watcher
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.close_connection = True
        next_bookmark = time.monotonic() + api.bookmark_interval
        abrupt = False
        # events still to write: those already queued behind one go out with it, in one send
        pending: list[bytes] = []
        try:
            while True:
                now = time.monotonic()
                if now >= plan.deadline:
                    if w.bookmarks:
                        pending.append(self._bookmark_chunk(w, api.resource_version, None))
                    break
                wait = min(plan.deadline, next_bookmark if w.bookmarks else plan.deadline, now + 0.25) - now
                try:
                    item = w.q.get(timeout=max(wait, 0.0))
                except queue.Empty:
                    if self._peer_closed():
                        return
                    if w.bookmarks and time.monotonic() >= next_bookmark:
                        with api._lock:
                            w.q.put(("BOOKMARK", api._rv, None))
                        next_bookmark = time.monotonic() + api.bookmark_interval
                    continue
                if item is _CLOSE:
                    break
                if item is _ABRUPT:
                    abrupt = True
                    break
                kind = item[0]
                if api.event_delay and kind != "BOOKMARK":
                    time.sleep(api.event_delay)
                if kind == "BOOKMARK":
                    pending.append(self._bookmark_chunk(w, item[1], item[2]))
                elif kind == "ERROR":
                    pending.append(_event_chunk(_compact_json({"type": "ERROR", "object": item[1]}).encode()))
                else:  # json.dumps({"type": kind, "object": ...}) with the object's JSON shared
                    pending.append(_event_chunk(b'{"type":"%s","object":%s}' % (
                        kind.encode(), api._encoded(w.rt, w.version, item[1]))))
                if api.event_delay or len(pending) >= 64 or w.q.empty():
                    self._write_chunks(pending)
            self._write_chunks(pending)
        except OSError:
            return
        finally:
            api._unregister(w)
        if abrupt:
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        with contextlib.suppress(OSError):
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    @staticmethod
    def _bookmark_chunk(w: _Watcher, rv: int, annotations: dict[str, str] | None) -> bytes:
        meta: Obj = {"resourceVersion": str(rv)}
        if annotations:
            meta["annotations"] = annotations
        return _event_chunk(_compact_json({"type": "BOOKMARK", "object": {
            "kind": w.rt.kind, "apiVersion": w.rt.api_version(w.version), "metadata": meta}}).encode())

    def _write_chunks(self, chunks: list[bytes]) -> None:
        if chunks:
            self.wfile.write(b"".join(chunks))
            self.wfile.flush()
            chunks.clear()

    def _peer_closed(self) -> bool:
        try:
            r, _, _ = select.select([self.connection], [], [], 0)
            if not r:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True


class _Drop(Exception):
    """An injected fault that drops the connection without an answer."""
