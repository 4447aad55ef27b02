"""make dev's own logic (hack/kube/dev.py) without a cluster: the values a rerun would change
(so a value set by hand is never lost unseen) and the listener problems its summary names."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _dev() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev_loop", ROOT / "hack" / "kube" / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


dev = _dev()


def test_a_value_set_by_hand_that_the_upgrade_drops_is_named(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("controller:\n  secretNamespaces: [apps]\n")
    release = {"controller": {"image": {"tag": "working-tree"}, "replicas": 1, "secretNamespaces": ["apps"]}}
    # the dev values alone reset it; with the user's file it stays
    assert dev.dropped_values(release, [dev.VALUES]) == [
        'controller.secretNamespaces: ["apps"] -> the chart\'s default']
    assert dev.dropped_values(release, [dev.VALUES, mine]) == []
    mine.write_text("controller:\n  secretNamespaces: [apps, edge]\n")
    assert dev.dropped_values(release, [dev.VALUES, mine]) == [
        'controller.secretNamespaces: ["apps"] -> ["apps", "edge"]']
    assert dev.dropped_values({}, [dev.VALUES]) == []


def test_flatten() -> None:
    assert dev.flatten({"a": {"b": 1, "c": [1, 2], "d": {}}, "e": None}) == {"a.b": 1, "a.c": [1, 2], "a.d": {}, "e": None}


def test_listener_problems_name_each_condition_not_in_its_good_state() -> None:
    def cond(t: str, s: str, reason: str, message: str = "") -> dict[str, str]:
        return {"type": t, "status": s, "reason": reason, "message": message}

    gw = {"metadata": {"namespace": "apps", "name": "web"}, "status": {
        "conditions": [cond("Programmed", "True", "Programmed")],
        "listeners": [
            {"name": "http", "conditions": [cond("Accepted", "True", "Accepted"), cond("Conflicted", "False", "NoConflicts"),
                                            cond("Programmed", "True", "Programmed")]},
            {"name": "https", "conditions": [
                cond("Accepted", "True", "Accepted"),
                cond("ResolvedRefs", "False", "InvalidCertificateRef", "Secret apps/shop-tls cannot be read"),
                cond("Programmed", "False", "Invalid", "the listener is not valid")]},
        ]}}
    assert dev.listener_problems(gw) == [
        'Gateway apps/web: listener "https" cannot serve: ResolvedRefs=False (InvalidCertificateRef): Secret '
        'apps/shop-tls cannot be read; Programmed=False (Invalid): the listener is not valid']
    assert dev.listener_problems({"metadata": {"namespace": "apps", "name": "new"}}) == []
