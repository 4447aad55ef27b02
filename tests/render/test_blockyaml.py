"""blockyaml writes exactly what PyYAML writes (the golden status.yaml files depend on it)."""

from __future__ import annotations

import os
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from titanium_gateway.offline.outputs import certificate_list, event_list, status_documents
from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.twp import blockyaml

from .conftest import case_names, case_objects, render_case

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "200"))


@pytest.mark.parametrize("case", case_names())
def test_golden_outputs_are_written_as_pyyaml_writes_them(case: str) -> None:
    result = render_case(case)
    snapshot = build_snapshot(case_objects(case))
    docs = [*status_documents(result, snapshot), *status_documents(result), event_list(result), certificate_list(result)]
    for doc in docs:
        assert blockyaml.dump(doc) == blockyaml.pyyaml_dump(doc)


_text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["True", "yes", "on", "null", "~", "", " x", "x ", "a: b", "a #b", "- x", "1", "0x1f", "1.5", "1e3",
                     "2024-01-01", "1970-01-01T00:00:00Z", "'q'", '"q"', "a\nb", "a\tb", "é", "\u2028", "*a", "&a", "!t",
                     "%x", "@x", "`x", "|", ">", "?", "x" * 1200, "word " * 300, "Accepted", "gateway.networking.k8s.io"]),
)
_key = st.one_of(st.sampled_from(["type", "status", "on", "yes", "1", "a b", "", "k" * 130]), st.text(max_size=8))
_leaf = st.one_of(_text, st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))
_tree = st.recursive(
    _leaf,
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(_key, kids, max_size=4),
                           st.dictionaries(_key, kids, max_size=3).map(MappingProxyType), st.lists(kids, max_size=3).map(tuple)),
    max_leaves=30,
)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(value=st.one_of(st.dictionaries(_key, _tree, max_size=5), st.lists(_tree, max_size=5)))
def test_any_plain_data_is_written_as_pyyaml_writes_it(value: Any) -> None:
    assert blockyaml.dump(value) == blockyaml.pyyaml_dump(blockyaml.plain(value))
