"""controller/admission.py: the start check of the admission policy (a dry-run create it must
refuse) and a refusal of a Gateway's data-plane write (told on that Gateway, never raised)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from titanium_gateway.controller.admission import PROBE_NAME, check_policy, refused_by_admission
from titanium_gateway.kube.api import ApiError
from titanium_gateway.writers.base import Refused

POLICY = "tg-titanium-gateway-controller-writes"


def refusal(policy: str = POLICY) -> ApiError:
    return ApiError(403, "Forbidden", f'configmaps "{PROBE_NAME}" is forbidden: ValidatingAdmissionPolicy '
                                      f"'{policy}' with binding '{policy}' denied request: not a data plane")


class DryRun:
    def __init__(self, answer: Exception | None) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str | None, dict[str, Any]]] = []

    def create_dry_run(self, res: Any, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((res.plural, namespace, body))
        if self.answer is not None:
            raise self.answer
        return body


def opts(**kw: Any) -> Any:
    return SimpleNamespace(**{"admission_policy": POLICY, "gateway_namespaces": (),
                              "data_plane_namespace": "gateway-system", **kw})


def test_a_policy_that_refuses_passes_and_the_probe_carries_no_data_plane_labels() -> None:
    api = DryRun(refusal())
    assert check_policy(api, opts()) == ""
    ((plural, ns, body),) = api.calls
    assert (plural, ns) == ("configmaps", "gateway-system")
    assert "labels" not in body["metadata"]
    # with the namespaces listed, in one the controller may create in
    api = DryRun(refusal())
    assert check_policy(api, opts(gateway_namespaces=("edge", "apps"))) == ""
    assert api.calls[0][1] == "apps"


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Answers(DryRun):
    """Answers in turn (the last one again once they run out)."""

    def __init__(self, *answers: Exception | None) -> None:
        super().__init__(None)
        self.answers = list(answers)

    def create_dry_run(self, res: Any, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        self.answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return super().create_dry_run(res, namespace, body)


def test_an_admitted_probe_stops_the_start_with_what_to_do() -> None:
    clock = FakeClock()
    api = DryRun(None)
    problem = check_policy(api, opts(), clock=clock)
    assert f"ValidatingAdmissionPolicy {POLICY} does not fence" in problem
    assert "Kubernetes 1.30" in problem and "admissionPolicy.enabled" in problem
    # asked again while a just-installed policy may not be enforced yet, then the answer
    assert clock.now >= 20 and len(api.calls) > 1


def test_a_policy_enforced_a_moment_after_the_start_passes() -> None:
    clock = FakeClock()
    api = Answers(None, None, refusal())
    assert check_policy(api, opts(), clock=clock) == ""
    assert len(api.calls) == 3 and clock.now == 2.0


def test_no_policy_named_checks_nothing() -> None:
    api = DryRun(None)
    assert check_policy(api, opts(admission_policy="")) == "" and not api.calls


@pytest.mark.parametrize("error", [ApiError(503, "ServiceUnavailable", "etcd"), ConnectionError("refused"),
                                   refusal("someone-elses-policy"), ApiError(409, "AlreadyExists", "there")])
def test_no_answer_now_is_not_a_reason_to_stop(error: Exception) -> None:
    assert check_policy(DryRun(error), opts()) == ""


def test_rbac_refusing_the_probe_is_said() -> None:
    problem = check_policy(DryRun(ApiError(403, "Forbidden", "cannot create resource configmaps")), opts(),
                           clock=FakeClock())
    assert "refused by authorization" in problem


class Trigger:
    def __init__(self) -> None:
        self.n = 0

    def trigger(self) -> None:
        self.n += 1


def test_a_refused_plane_write_is_told_once_and_cleared() -> None:
    st = SimpleNamespace(refused="", key="apps/web", namespace="apps")
    plane = SimpleNamespace(gateway=object())
    t = Trigger()
    assert refused_by_admission(st, plane, refusal(), t)
    assert "ValidatingAdmissionPolicy" in st.refused and t.n == 1
    assert refused_by_admission(st, plane, refusal(), t) and t.n == 1  # the same: no new reconcile
    assert refused_by_admission(st, plane, Refused("Secret apps/web-tls exists and was not made"), t)
    assert "was not made" in st.refused and t.n == 2
    assert refused_by_admission(st, plane, None, t) and st.refused == "" and t.n == 3


def test_other_errors_and_the_shared_plane_are_the_callers() -> None:
    st = SimpleNamespace(refused="", key="shared", namespace="gateway-system")
    assert not refused_by_admission(st, SimpleNamespace(gateway=object()), ApiError(500, "x", "boom"), Trigger())
    assert not refused_by_admission(st, SimpleNamespace(gateway=None), refusal(), Trigger())
    assert st.refused == ""
