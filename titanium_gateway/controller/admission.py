"""The admission policy that fences the controller's writes: its start check, and a refusal.

With ``--admission-policy NAME`` (the chart sets it in ``per-gateway`` mode) the controller asks
the API server, before it starts, to create a ConfigMap that carries none of the labels of a
data plane, as a dry run: a policy that works refuses it, naming itself. A create that would
succeed means the policy is missing, not bound, or not enforced (an API server older than 1.30,
or the API turned off) once it has been asked again for ``SETTLE_SECONDS`` (a policy just
installed is enforced a moment later): the controller stops with that message rather than run
with writes nothing fences (docs/security.md). An API server that cannot answer now is not a reason to
stop: the check is logged as not done and the controller starts.

A refusal of a Gateway's data-plane write (:func:`refused_by_admission`) is lasting until someone
changes the object or the policy: it is logged once, becomes that Gateway's Programmed message,
and the other data planes are written as usual (never a reconcile failure, never an exit).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from titanium_gateway.kube.api import CONFIG_MAPS, ApiError
from titanium_gateway.writers.base import Refused, is_admission_refusal

log = logging.getLogger(__name__)

PROBE_NAME = "titanium-gateway-admission-check"


def probe_namespace(opts: Any) -> str:
    """Where the controller may create ConfigMaps: its first Gateway namespace, else its own."""
    return sorted(opts.gateway_namespaces)[0] if opts.gateway_namespaces else opts.data_plane_namespace


#: how long a write the policy should refuse may still be admitted after the policy is created:
#: the API server enforces a new policy once its policy cache has it (a fraction of a second,
#: longer on a busy server), and a controller may start right after `helm install`
SETTLE_SECONDS = 20.0


def check_policy(api: Any, opts: Any, *, settle: float = SETTLE_SECONDS, clock: Any = None) -> str:
    """"" when ``opts.admission_policy`` refuses a write outside the data planes (or when it
    cannot be told now), else why the controller must not start. An admitted probe is asked
    again for up to ``settle`` seconds (a policy just installed), then it is the answer."""
    clock = clock or time
    end = clock.monotonic() + settle
    while True:
        problem = _check_once(api, opts)
        if not problem or clock.monotonic() >= end:
            return problem
        clock.sleep(1.0)


def _check_once(api: Any, opts: Any) -> str:
    policy = opts.admission_policy
    if not policy:
        return ""
    ns = probe_namespace(opts)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": PROBE_NAME, "namespace": ns}}
    try:
        api.create_dry_run(CONFIG_MAPS, ns, body)
    except ApiError as e:
        if is_admission_refusal(e, policy):
            log.info("the admission policy fences the controller's writes",
                     extra={"policy": policy, "namespace": ns})
            return ""
        if e.status == 409 or is_admission_refusal(e):
            # a ConfigMap of that name exists, or another policy refused first: not an answer
            log.warning("cannot check the admission policy", extra={"policy": policy, "error": str(e)})
            return ""
        if e.status in (401, 403):
            return (f"cannot check the admission policy {policy}: a dry-run create of ConfigMap {ns}/{PROBE_NAME} "
                    f"was refused by authorization ({e.status} {e.message}); the chart's RBAC grants it")
        log.warning("cannot check the admission policy now: starting", extra={"policy": policy, "error": str(e)})
        return ""
    except Exception as e:  # noqa: BLE001 - the API server unreachable: not a reason to stop
        log.warning("cannot check the admission policy now: starting", extra={"policy": policy, "error": str(e)})
        return ""
    return (f"the ValidatingAdmissionPolicy {policy} does not fence the controller's writes: a dry-run create of "
            f"ConfigMap {ns}/{PROBE_NAME}, which carries no data-plane labels, was admitted. Kubernetes 1.30 or "
            "later serves admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy; the chart installs the "
            f"policy and its binding {policy} (admissionPolicy.enabled): check `kubectl get "
            f"validatingadmissionpolicy,validatingadmissionpolicybinding {policy}`")


def refused_by_admission(state: Any, plane: Any, error: ApiError | Refused | None, trigger: Any) -> bool:
    """Record on a data plane's ``state`` (``refused``) that admission refused the write of its
    config or certificates (``error``), or that the write went through (``error`` None); a change
    triggers a reconcile (the Gateway's status says it). False: ``error`` is not a refusal of a
    Gateway's own data plane, which the caller raises."""
    if error is not None and (plane.gateway is None or not (
            isinstance(error, Refused) or is_admission_refusal(error))):
        return False
    message = error.message if isinstance(error, ApiError) else str(error or "")
    why = "" if error is None else f"the API server refused a write of this Gateway's data plane: {message}"
    if why != state.refused:
        extra = {"data_plane": state.key, "namespace": state.namespace}
        if why:
            log.error("write refused by admission", extra={**extra, "error": message})
        else:
            log.info("writes admitted again", extra=extra)
        state.refused = why
        trigger.trigger()
    return True
