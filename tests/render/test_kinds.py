"""The table of kinds (titanium_gateway/kinds.py) agrees with what asks it."""

from __future__ import annotations

import dataclasses
import pathlib
import re

from titanium_gateway import kinds
from titanium_gateway.render.result import RELEASED_STATUS
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.render.statusmerge import SHARED_LISTS

PACKAGE = pathlib.Path(kinds.__file__).parent


def test_every_row_has_a_snapshot_collection_and_every_collection_a_row():
    collections = {f.name for f in dataclasses.fields(Snapshot)
                   if f.name not in ("unreadable", "gateway_api", "confirmed_config_hash", "probe_message",
                                     "plane_probes", "now", "extra")}
    assert {row.field for row in kinds.KINDS} == collections


def test_a_kind_whose_status_we_write_can_be_released_and_only_its_shared_list_is_merged():
    assert set(RELEASED_STATUS) == set(kinds.STATUS_KINDS)
    assert {row.kind: row.status for row in kinds.KINDS if row.status in (kinds.PARENTS,
                                                                                          kinds.ANCESTORS)} == SHARED_LISTS
    for kind in kinds.ROUTE_KINDS:
        assert RELEASED_STATUS[kind] == {"parents": []}


def test_a_kind_watched_with_another_is_watched_where_that_kind_is_served():
    for row in kinds.KINDS:
        if row.informer == kinds.DISCOVERED:
            assert row.crd in kinds.BY_KIND and kinds.BY_KIND[row.crd].crd == row.crd
            assert row.versions and row.versions[0] == row.resource.version
        else:
            assert not row.crd and not row.gateway_api


def test_the_order_of_statuses_follows_the_table_and_unknown_kinds_come_last():
    ranks = [kinds.rank(row.kind) for row in kinds.KINDS]
    assert ranks == sorted(ranks)
    assert kinds.rank(kinds.GATEWAY_CLASS.kind) < kinds.rank(kinds.GATEWAY.kind) < kinds.rank(kinds.HTTP_ROUTE.kind)
    assert kinds.rank("Unknown") > max(ranks)


def test_a_kind_of_the_other_routes_is_spelled_in_the_table_only():
    """Every module asks the table: a route kind's name is written nowhere else in the package."""
    for row in kinds.OTHER_ROUTES:
        spelled = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                   if re.search(rf"[\"']{row.kind}[\"']", p.read_text())]
        assert spelled == ["kinds.py"], (row.kind, spelled)


def test_a_kind_is_spelled_in_at_most_four_files():
    """The table answers for every Gateway API and Ingress kind: its name (quoted) appears in few
    files besides it (a feature name, a field check keyed by kind, a docstring). (The core kinds,
    Service, Secret and the like, also name informers and the objects the controller makes.)"""
    sources = {str(p.relative_to(PACKAGE)): p.read_text() for p in PACKAGE.rglob("*.py")}
    for row in kinds.KINDS:
        if row.resource.group in ("", "discovery.k8s.io"):
            continue
        spelled = sorted(name for name, text in sources.items() if re.search(rf"[\"']{row.kind}[\"']", text))
        assert len(spelled) <= 4, (row.kind, spelled)
