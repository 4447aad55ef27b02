"""Bad-input campaign against the pure render (see docs/reliability.md and fuzzlib.check_render).

Each campaign test runs twice: ``quick`` (a few dozen derandomized examples, every CI run) and
``full`` (``@pytest.mark.slow``: ``FUZZ_EXAMPLES`` random examples, ``make fuzz``).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.reliability import fuzzlib

MODES = [pytest.param(False, id="quick"),
         pytest.param(True, id="full", marks=[pytest.mark.slow, pytest.mark.timeout(7200)])]


def _examples(full: bool, quick: int) -> int:
    return fuzzlib.fuzz_examples(quick) if full else quick


def _no_new_findings(before: set[str]) -> None:
    """Fails with every failure class the campaign found that is not a known (xfail-tracked) bug."""
    new = [f for k, f in fuzzlib.FINDINGS.items() if k not in before and not f.known]
    if new:
        lines = [f"x{f.count}: {f.message[:1000]}\n    example: {f.example[:1500]}" for f in new]
        pytest.fail(f"{len(new)} new failure classes:\n" + "\n".join(lines))


@pytest.mark.parametrize("full", MODES)
def test_generated_worlds(full: bool) -> None:
    """Whole generated clusters (Gateways, HTTPRoutes, GRPCRoutes, Ingresses, Services, Secrets) keep every invariant."""
    secrets = fuzzlib.certs().private_keys()

    @fuzzlib.fuzz_settings(_examples(full, 30))
    @given(fuzzlib.worlds())
    def run(objects: list) -> None:
        fuzzlib.STATS.count_objects(objects)
        fuzzlib.check_render_collecting(objects, test="worlds", secrets=secrets)

    before = set(fuzzlib.FINDINGS)
    run()
    _no_new_findings(before)


@pytest.mark.parametrize("full", MODES)
def test_golden_inputs_mutated(full: bool) -> None:
    """Every golden input (tests/render/testdata/*/in.yaml), mutated at random paths, keeps every invariant."""
    cases = fuzzlib.golden_cases()
    assert len(cases) >= 50, "the golden cases are missing"

    @fuzzlib.fuzz_settings(_examples(full, len(cases)))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        case, objects, options = data.draw(st.sampled_from(cases), label="case")
        objs = data.draw(fuzzlib.mutated(objects), label="mutated")
        fuzzlib.check_render_collecting(objs, options, test="golden-mutations")

    before = set(fuzzlib.FINDINGS)
    run()
    _no_new_findings(before)


@pytest.mark.parametrize("case", [c[0] for c in fuzzlib.golden_cases()] if fuzzlib.GOLDEN.exists() else [])
def test_every_golden_input_unmutated(case: str) -> None:
    """The oracle itself holds on every golden case as written (no false alarms)."""
    _, objects, options = next(c for c in fuzzlib.golden_cases() if c[0] == case)
    fuzzlib.check_render(list(objects), options, test="golden")


@pytest.mark.parametrize("full", MODES)
def test_routes_with_hostile_values_everywhere(full: bool) -> None:
    """One valid Gateway; HTTPRoutes and GRPCRoutes whose every field may be replaced by a hostile value."""
    world = [*fuzzlib.base_objects(),
             {"apiVersion": fuzzlib.GW_API, "kind": "Gateway", "metadata": {"name": "web", "namespace": "apps"},
              "spec": {"gatewayClassName": "titanium", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}},
             {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "apps"},
              "spec": {"ports": [{"port": 8080, "targetPort": 9000}]}}]

    @fuzzlib.fuzz_settings(_examples(full, 20))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        routes = [data.draw(fuzzlib.httproutes(i)) for i in range(data.draw(st.integers(1, 3)))]
        routes += [data.draw(fuzzlib.grpcroutes(i)) for i in range(data.draw(st.integers(0, 2)))]
        for r in routes:
            r["spec"]["parentRefs"] = [{"name": "web", "namespace": "apps"}]
        objs = data.draw(fuzzlib.mutated(world + routes, max_mutations=3))
        fuzzlib.check_render_collecting(objs, test="hostile-routes")

    before = set(fuzzlib.FINDINGS)
    run()
    _no_new_findings(before)
