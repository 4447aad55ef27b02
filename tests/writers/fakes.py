"""A small recording ``KubeApi`` for writer unit tests: objects in a dict, merge and JSON
(add/replace/remove) patches, resourceVersion conflicts, scripted errors."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from typing import Any

from tests.support.k8sutil import merge_patch
from titanium_gateway.kube.api import ApiError, Obj, PatchType, Resource


class RecordingApi:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.calls: list[dict[str, Any]] = []
        self.errors: list[tuple[str, str, ApiError]] = []  # (verb, plural, error), used once
        self.rv = 1

    def put(self, res: Resource, obj: Obj) -> Obj:
        with self.lock:
            self.rv += 1
            o = copy.deepcopy(obj)
            o.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
            md = o["metadata"]
            self.objects[(res.plural, md.get("namespace") or "", md["name"])] = o
            return copy.deepcopy(o)

    def find(self, res: Resource, ns: str | None, name: str) -> Obj | None:
        return self.objects.get((res.plural, ns or "", name))

    def obj(self, res: Resource, ns: str | None, name: str) -> Obj:
        """The stored object (a test error when absent)."""
        o = self.find(res, ns, name)
        if o is None:
            raise AssertionError(f"{res.plural} {ns}/{name} does not exist")
        return o

    def fail_next(self, verb: str, plural: str, err: ApiError) -> None:
        self.errors.append((verb, plural, err))

    def _maybe_fail(self, verb: str, plural: str) -> None:
        for i, (v, p, e) in enumerate(self.errors):
            if v == verb and p == plural:
                del self.errors[i]
                raise e

    def writes(self, plural: str | None = None) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["verb"] in ("create", "replace", "patch")
                and (plural is None or c["plural"] == plural)]

    # --- KubeApi --------------------------------------------------------------------------------
    def list(self, res: Resource, namespace: str | None = None, **kw: Any) -> Obj:
        return {"metadata": {"resourceVersion": str(self.rv)},
                "items": [copy.deepcopy(o) for (p, ns, _), o in self.objects.items()
                          if p == res.plural and (not namespace or ns == namespace)]}

    def watch(self, res: Resource, namespace: str | None = None, **kw: Any) -> Iterator[Obj]:
        return iter(())

    def get(self, res: Resource, namespace: str | None, name: str, *, subresource: str | None = None) -> Obj:
        with self.lock:
            self.calls.append({"verb": "get", "plural": res.plural, "namespace": namespace, "name": name})
            self._maybe_fail("get", res.plural)
            o = self.find(res, namespace, name)
            if o is None:
                raise ApiError(404, "NotFound", f"{res.plural} {name} not found")
            return copy.deepcopy(o)

    def get_metadata(self, res: Resource, namespace: str | None, name: str) -> Obj:
        with self.lock:
            self.calls.append({"verb": "get_metadata", "plural": res.plural, "namespace": namespace, "name": name})
            self._maybe_fail("get", res.plural)
            o = self.find(res, namespace, name)
            if o is None:
                raise ApiError(404, "NotFound", f"{res.plural} {name} not found")
            return {"kind": "PartialObjectMetadata", "metadata": copy.deepcopy(o["metadata"])}

    def create(self, res: Resource, namespace: str | None, body: Obj) -> Obj:
        with self.lock:
            self.calls.append({"verb": "create", "plural": res.plural, "namespace": namespace, "body": body})
            self._maybe_fail("create", res.plural)
        b = copy.deepcopy(body)
        b.setdefault("metadata", {})["namespace"] = namespace
        if self.find(res, namespace, b["metadata"]["name"]) is not None:
            raise ApiError(409, "AlreadyExists", f"{res.plural} {b['metadata']['name']} already exists")
        return self.put(res, b)

    def replace(self, res: Resource, namespace: str | None, name: str, body: Obj, *,
                subresource: str | None = None) -> Obj:
        """An update (PUT): only the ConfigMap writer updates (the other writers patch); the
        body's resourceVersion, when given, must be the stored one (else 409)."""
        if res.plural != "configmaps" or subresource:
            raise AssertionError(f"only the ConfigMap writer replaces (not {res.plural} {subresource or ''})")
        with self.lock:
            self.calls.append({"verb": "replace", "plural": res.plural, "namespace": namespace, "name": name,
                               "body": copy.deepcopy(body)})
            self._maybe_fail("replace", res.plural)
            cur = self.find(res, namespace, name)
            if cur is None:
                raise ApiError(404, "NotFound", f"{res.plural} {name} not found")
            want = (body.get("metadata") or {}).get("resourceVersion")
            if want and want != cur["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", "the object has been modified")
        return self.put(res, body)

    def patch(self, res: Resource, namespace: str | None, name: str, body: Any, *,
              patch_type: PatchType = "merge", subresource: str | None = None) -> Obj:
        with self.lock:
            self.calls.append({"verb": "patch", "plural": res.plural, "namespace": namespace, "name": name,
                               "body": copy.deepcopy(body), "patch_type": patch_type, "subresource": subresource})
            self._maybe_fail("patch", res.plural)
            cur = self.find(res, namespace, name)
            if cur is None:
                raise ApiError(404, "NotFound", f"{res.plural} {name} not found")
            if patch_type == "strategic" and res.is_custom:
                raise ApiError(415, "UnsupportedMediaType", "strategic merge patch on a CRD")
            if patch_type == "merge":
                want = ((body.get("metadata") or {}) if isinstance(body, dict) else {}).get("resourceVersion")
                if want and want != cur["metadata"]["resourceVersion"]:
                    raise ApiError(409, "Conflict", "the object has been modified")
                body = dict(body)
                if "metadata" in body:
                    body["metadata"] = {k: v for k, v in body["metadata"].items() if k != "resourceVersion"}
                new = merge_patch(cur, body)
            elif patch_type == "json":
                new = copy.deepcopy(cur)
                for op in body:
                    keys = [k.replace("~1", "/").replace("~0", "~") for k in op["path"].strip("/").split("/")]
                    tgt = new
                    if op["op"] == "test":  # RFC 6902: the value must be there, equal
                        for k in keys:
                            tgt = tgt.get(k) if isinstance(tgt, dict) else None
                        if tgt != op["value"]:
                            raise ApiError(422, "Invalid", f"testing value {op['path']} failed: test failed")
                        continue
                    for k in keys[:-1]:
                        tgt = tgt.setdefault(k, {})
                    if op["op"] in ("add", "replace"):
                        tgt[keys[-1]] = copy.deepcopy(op["value"])
                    elif op["op"] == "remove":
                        tgt.pop(keys[-1])
            else:
                raise ApiError(415, "UnsupportedMediaType", patch_type)
        return self.put(res, new)

    def delete(self, res: Resource, namespace: str | None, name: str) -> Obj:
        raise AssertionError("writers never delete")
