"""The controller's API calls stay inside the chart's RBAC.

Every call `<api>.<verb>(RESOURCE, ...)` in titanium_gateway/ whose first argument is one of the
resource constants of titanium_gateway/kube/api.py and titanium_gateway/kinds.py (CONFIG_MAPS, GATEWAYS, ...) must be granted
by the rendered ClusterRole or Role (status calls: the `<plural>/status` subresource). A call the
chart does not grant would fail with 403 in a cluster, so it fails here first.
"""

from __future__ import annotations

import ast

from titanium_gateway import kinds
from titanium_gateway.kube import api as kube_api

from .conftest import NAMESPACE, ROOT, by_kind

VERBS = {"get": "get", "list": "list", "watch": "watch", "create": "create", "replace": "update",
         "patch": "patch", "delete": "delete"}
RESOURCES = {name: value for module in (kube_api, kinds) for name, value in vars(module).items()
             if isinstance(value, kube_api.Resource)}


def granted(docs) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    roles = by_kind(docs, "ClusterRole") + [r for r in by_kind(docs, "Role") if r["metadata"]["namespace"] == NAMESPACE]
    for role in roles:
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def api_calls(package=ROOT / "titanium_gateway"):
    """(file:line, verb, Resource, subresource) for every call on a resource constant."""
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in VERBS or not node.args:
                continue
            first = node.args[0]
            name = first.id if isinstance(first, ast.Name) else first.attr if isinstance(first, ast.Attribute) else None
            if name not in RESOURCES:
                continue
            sub = None
            for kw in node.keywords:
                if kw.arg == "subresource" and isinstance(kw.value, ast.Constant):
                    sub = kw.value.value
            yield f"{path.relative_to(package.parent)}:{node.lineno}", VERBS[node.func.attr], RESOURCES[name], sub


def test_resource_constants_are_found():
    assert {"CONFIG_MAPS", "GATEWAYS", "LEASES", "PODS", "EVENTS"} <= set(RESOURCES)


def ungranted(allowed, package=ROOT / "titanium_gateway") -> list[str]:
    problems = []
    for where, verb, res, sub in api_calls(package):
        resource = f"{res.plural}/{sub}" if sub else res.plural
        if verb not in allowed.get((res.group, resource), set()):
            problems.append(f"{where}: {verb} {res.group or 'core'}/{resource}")
    return problems


def test_the_scanner_flags_an_ungranted_call(helm, tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "writer.py").write_text(
        "from titanium_gateway.kube.api import CONFIG_MAPS, GATEWAYS\n"
        "from titanium_gateway.kube import api as k\n"
        "def write(api, ns):\n"
        "    api.patch(GATEWAYS, ns, 'web', {}, patch_type='merge', subresource='status')\n"
        "    api.patch(CONFIG_MAPS, ns, 'titanium-gateway-data-plane', {})\n"
        "    api.delete(k.SERVICES, ns, 's')\n"
        "    api.delete(k.PODS, ns, 'p')\n"
    )
    assert ungranted(granted(helm.template({"dataPlane": {"mode": "shared"}})), package) == [
        "pkg/writer.py:6: delete core/services", "pkg/writer.py:7: delete core/pods"]


def test_every_controller_api_call_is_granted(helm):
    problems = ungranted(granted(helm.template()))
    assert not problems, "API calls the chart's RBAC does not grant:\n" + "\n".join(problems)


def test_every_watched_kind_is_readable_and_every_status_kind_writable(helm):
    """The informers (the core kinds, every Gateway API kind the controller may watch, the CRDs it
    discovers them from) list and watch; the status writer patches ``<plural>/status``."""
    from titanium_gateway.controller.gatewayapi import KINDS
    from titanium_gateway.controller.reconciler import WATCHED
    from titanium_gateway.writers.status import RESOURCES as STATUS_RESOURCES

    allowed = granted(helm.template())
    watched = [res for res, _field in WATCHED.values()] + [w.resource for w in KINDS]
    watched.append(kube_api.CUSTOM_RESOURCE_DEFINITIONS)
    missing = [f"{res.group or 'core'}/{res.plural}" for res in watched
               if not {"list", "watch"} <= allowed.get((res.group, res.plural), set())]
    missing += [f"{res.group}/{res.plural}/status" for res in STATUS_RESOURCES.values()
                if "patch" not in allowed.get((res.group, f"{res.plural}/status"), set())]
    assert not missing, "watched or status kinds the chart's RBAC does not grant: " + ", ".join(missing)
