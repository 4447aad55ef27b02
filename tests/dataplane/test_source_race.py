"""A projected volume that changes while the data plane loads it is loaded again on the next poll.

The kubelet (and the local pod runner) swap a volume's ``..data`` link at any moment; when the
swap lands between reading ``twp.yaml`` and the end of the load, the next poll must see the new
content (it once recorded the post-load directory as "seen" and kept serving the old config until
some later change: a Gateway stayed Programmed=False through a whole conformance test).
"""

from __future__ import annotations

import hashlib

import pytest

pytest.importorskip("aiohttp")

from tests.dataplane.docs import cluster, document, dump, listener, route  # noqa: E402
from titanium_gateway.reference_dataplane import source as source_mod  # noqa: E402
from tools.podrunner.volumes import AtomicWriter, FileEntry  # noqa: E402


def _doc(body: str) -> bytes:
    raw = dump(document([route("r", 1, directResponse={"status": 200, "body": body})], [cluster("be", [])],
                        listeners=[listener(18080)]))
    return raw if isinstance(raw, bytes) else raw.encode()


def test_a_swap_during_the_load_is_seen_by_the_next_poll(tmp_path, monkeypatch):
    writer = AtomicWriter(str(tmp_path))
    one, two = _doc("one"), _doc("two")
    writer.write({"twp.yaml": FileEntry(one, 0o444)})
    real_read = source_mod.read_file
    swapped = []

    def read_then_swap(directory, name):
        data = real_read(directory, name)
        if name == "twp.yaml" and not swapped:
            swapped.append(True)
            writer.write({"twp.yaml": FileEntry(two, 0o444)})  # the swap lands mid-load
        return data

    monkeypatch.setattr(source_mod, "read_file", read_then_swap)
    src = source_mod.ConfigSource(tmp_path)
    first = src.poll()
    assert first is not None and first.config_hash == hashlib.sha256(one).hexdigest()
    second = src.poll()
    assert second is not None and second.config_hash == hashlib.sha256(two).hexdigest()
    assert src.poll() is None  # and then nothing more to load


def test_a_swap_during_an_unchanged_reload_is_seen_by_the_next_poll(tmp_path, monkeypatch):
    """The same bytes rewritten (a new ..data directory) load nothing; a swap to new content that
    lands during that check is still loaded on the next poll."""
    writer = AtomicWriter(str(tmp_path))
    one, two = _doc("one"), _doc("two")
    writer.write({"twp.yaml": FileEntry(one, 0o444)})
    src = source_mod.ConfigSource(tmp_path)
    assert src.poll().config_hash == hashlib.sha256(one).hexdigest()
    writer.write({"twp.yaml": FileEntry(one, 0o400)})  # same bytes, another mode: a new ..data
    real_read = source_mod.read_file
    swapped = []

    def read_then_swap(directory, name):
        data = real_read(directory, name)
        if name == "twp.yaml" and not swapped:
            swapped.append(True)
            writer.write({"twp.yaml": FileEntry(two, 0o444)})
        return data

    monkeypatch.setattr(source_mod, "read_file", read_then_swap)
    assert src.poll() is None  # unchanged content: nothing new to serve
    assert swapped
    state = src.poll()
    assert state is not None and state.config_hash == hashlib.sha256(two).hexdigest()
