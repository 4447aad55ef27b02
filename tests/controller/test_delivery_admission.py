"""controller/delivery.py with the admission policy: a Gateway's data-plane write the API server
refuses is recorded on that plane's state (its Programmed message) and the pass goes on with
the other data planes; a write that goes through again clears it; any other error is raised."""

from __future__ import annotations

from typing import Any

import pytest

from tests.controller.test_admission import refusal
from titanium_gateway.controller.delivery import Delivery, PlaneState, PlaneWriters
from titanium_gateway.kube.api import ApiError
from titanium_gateway.kube.informer import InformerSet
from titanium_gateway.prober.prober import DataPlane
from titanium_gateway.render.result import GatewayRef, Plane, RenderResult


class Writer:
    """A config or certificate writer: ``error`` is raised by its next writes."""

    def __init__(self) -> None:
        self.error: Exception | None = None
        self.written: list[str] = []

    def confirm(self, config_hash: str) -> None:
        pass

    def write(self, plane: Plane) -> bool:
        if self.error is not None:
            raise self.error
        self.written.append(plane.config_hash)
        return True

    def is_complete(self, config_hash: str) -> bool:
        return config_hash in self.written


class Poker:
    def __init__(self) -> None:
        self.poked: list[str] = []

    def poke(self, pods: Any, config_hash: str, tls_files: Any) -> None:
        self.poked.append(config_hash)


class Stamper:
    def stamp(self, listeners: Any, pods: Any) -> None:
        pass


class Trigger:
    def __init__(self) -> None:
        self.n = 0

    def trigger(self, after: float | None = None) -> None:
        self.n += 1


class NoPods(Delivery):
    def pods(self, st: PlaneState) -> DataPlane:
        return DataPlane(st.namespace, st.service, None, (), ())


def setup() -> tuple[NoPods, dict[str, tuple[Writer, Writer, Poker]], Trigger]:
    writers: dict[str, tuple[Writer, Writer, Poker]] = {}

    def plane_writers(plane: Plane) -> PlaneWriters:
        w = writers[plane.key] = (Writer(), Writer(), Poker())
        return PlaneWriters(w[0], w[1], w[2], "token")  # type: ignore[arg-type]

    shared = writers[""] = (Writer(), Writer(), Poker())
    trigger = Trigger()
    st = PlaneState("", "gateway-system", "titanium", shared[0], shared[1], shared[2])  # type: ignore[arg-type]
    d = NoPods(st, InformerSet(), Stamper(), trigger, pod_namespace="gateway-system",  # type: ignore[arg-type]
               can_remove=lambda snap: False, plane_writers=plane_writers)
    return d, writers, trigger


def result(n: int) -> RenderResult:
    gateways = [Plane(f"apps/gw{i}", b"x", f"h{i}", gateway=GatewayRef("apps", f"gw{i}", f"uid{i}", "titanium"))
                for i in range(n)]
    return RenderResult(planes=(Plane("", b"s", "hs"), *gateways))


def test_a_refused_gateway_write_is_its_planes_message_and_the_others_are_written() -> None:
    d, writers, trigger = setup()
    res = result(2)
    d.state(res.planes[1])  # (its writers made, as the first pass does)
    writers["apps/gw0"][1].error = refusal()  # its certificate Secret refused
    report = d.deliver(res, None)  # type: ignore[arg-type]
    assert [dp.plane.key for dp in report.delivered] == ["", "apps/gw1"]
    assert "ValidatingAdmissionPolicy" in d.gateway_planes["apps/gw0"].refused and trigger.n == 1
    assert d.probes()["apps/gw0"] == (None, d.gateway_planes["apps/gw0"].refused)
    assert writers["apps/gw0"][0].written == [] and writers["apps/gw0"][2].poked == []
    assert writers["apps/gw1"][0].written == ["h1"] and writers[""][0].written == ["hs"]
    d.deliver(res, None)  # type: ignore[arg-type]
    assert trigger.n == 1  # the same refusal: told once
    writers["apps/gw0"][1].error = None  # (the policy or the object changed)
    report = d.deliver(res, None)  # type: ignore[arg-type]
    assert d.gateway_planes["apps/gw0"].refused == "" and trigger.n == 2
    assert [dp.plane.key for dp in report.delivered] == ["", "apps/gw0", "apps/gw1"]


def test_another_error_and_a_refusal_of_the_shared_planes_write_are_raised() -> None:
    d, writers, _ = setup()
    res = result(1)
    d.state(res.planes[1])
    writers["apps/gw0"][0].error = ApiError(500, "InternalError", "etcd")
    with pytest.raises(ApiError):
        d.deliver(res, None)  # type: ignore[arg-type]
    writers["apps/gw0"][0].error = None
    writers[""][0].error = refusal()
    with pytest.raises(ApiError):
        d.deliver(res, None)  # type: ignore[arg-type]
