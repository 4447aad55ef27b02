"""A container's environment as the kubelet builds it: ``envFrom`` first, then ``env`` in
order (``value`` with ``$(VAR)`` expansion of earlier variables, ``valueFrom`` fieldRef,
secretKeyRef, configMapKeyRef, resourceFieldRef), then the service variables of the API server.

A missing non-optional Secret/ConfigMap or key raises ``EnvNotReady`` (the kubelet's
CreateContainerConfigError: the container waits and the runner retries).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from typing import Any

from tools.podrunner.volumes import VolumeNotReady, field_value

Obj = dict[str, Any]
_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class EnvNotReady(Exception):
    pass


def expand(value: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: a defined variable is replaced, ``$$`` is ``$``, an
    undefined reference stays as written."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)

    return _REF.sub(sub, value)


def _cm_value(cm: Obj, key: str) -> str | None:
    if key in (cm.get("data") or {}):
        return str(cm["data"][key])
    if key in (cm.get("binaryData") or {}):
        return base64.b64decode(cm["binaryData"][key]).decode("utf-8", "replace")
    return None


def _secret_value(secret: Obj, key: str) -> str | None:
    if key in (secret.get("data") or {}):
        return base64.b64decode(secret["data"][key]).decode("utf-8", "replace")
    return None


def _resource_value(container: Obj, ref: Obj) -> str:
    resource = ref.get("resource", "")
    kind, _, name = resource.partition(".")
    value = ((container.get("resources") or {}).get(kind) or {}).get(name)
    return str(value) if value is not None else "0"


def container_env(pod: Obj, container: Obj, *, config_map: Callable[[str, str], Obj | None],
                  secret: Callable[[str, str], Obj | None],
                  service_env: Mapping[str, str] | None = None) -> dict[str, str]:
    ns = (pod.get("metadata") or {}).get("namespace", "")
    # The API server's service variables come first: the container's own entries override them
    # and $(VAR) references may use them (as the kubelet does).
    env: dict[str, str] = dict(service_env or {})
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        if "configMapRef" in source:
            ref = source["configMapRef"]
            cm = config_map(ns, ref.get("name", ""))
            if cm is None:
                if ref.get("optional"):
                    continue
                raise EnvNotReady(f'configmap "{ref.get("name")}" not found')
            for key in cm.get("data") or {}:
                env[prefix + key] = str(cm["data"][key])
        elif "secretRef" in source:
            ref = source["secretRef"]
            s = secret(ns, ref.get("name", ""))
            if s is None:
                if ref.get("optional"):
                    continue
                raise EnvNotReady(f'secret "{ref.get("name")}" not found')
            for key in s.get("data") or {}:
                env[prefix + key] = _secret_value(s, key) or ""
    for var in container.get("env") or []:
        name = var.get("name", "")
        if "valueFrom" not in var:
            env[name] = expand(str(var.get("value", "")), env)
            continue
        src = var["valueFrom"]
        if "fieldRef" in src:
            try:
                env[name] = field_value(pod, src["fieldRef"].get("fieldPath", ""))
            except VolumeNotReady as e:
                raise EnvNotReady(str(e)) from e
        elif "secretKeyRef" in src or "configMapKeyRef" in src:
            is_secret = "secretKeyRef" in src
            ref = src["secretKeyRef" if is_secret else "configMapKeyRef"]
            obj = (secret if is_secret else config_map)(ns, ref.get("name", ""))
            kind = "secret" if is_secret else "configmap"
            value = None
            if obj is not None:
                value = (_secret_value if is_secret else _cm_value)(obj, ref.get("key", ""))
            if value is None:
                if ref.get("optional"):
                    continue
                what = f'{kind} "{ref.get("name")}"' if obj is None else f'key {ref.get("key")!r} in {kind} "{ref.get("name")}"'
                raise EnvNotReady(f"{what} not found")
            env[name] = value
        elif "resourceFieldRef" in src:
            env[name] = _resource_value(container, src["resourceFieldRef"])
        else:
            raise EnvNotReady(f"env {name}: unsupported valueFrom {sorted(src)}")
    return env
