"""Kubelet-style volume projection: the ..data swap and the payload of each volume type."""

from __future__ import annotations

import base64
import os
import threading

import pytest

from tools.podrunner.volumes import AtomicWriter, FileEntry, Sources, VolumeNotReady, payload_for_volume

POD = {"metadata": {"name": "p-1", "namespace": "ns", "uid": "u-1", "labels": {"app": "x"},
                    "annotations": {"a": "1"}},
       "spec": {"nodeName": "n0", "serviceAccountName": "sa"}, "status": {"podIP": "198.18.1.9"}}


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read()


def test_atomic_writer_swaps_data_and_links(tmp_path):
    w = AtomicWriter(str(tmp_path / "v"))
    assert w.write({"twp.yaml": FileEntry(b"one", 0o444), "sub/x": FileEntry(b"x", 0o444)})
    d = str(tmp_path / "v")
    assert os.readlink(os.path.join(d, "twp.yaml")) == "..data/twp.yaml"
    first = os.readlink(os.path.join(d, "..data"))
    assert first.startswith("..") and os.path.isdir(os.path.join(d, first))
    assert _read(os.path.join(d, "twp.yaml")) == "one"
    assert _read(os.path.join(d, "sub", "x")) == "x"
    assert oct(os.stat(os.path.join(d, "twp.yaml")).st_mode & 0o777) == oct(0o444)
    # An unchanged payload writes nothing.
    assert not w.write({"twp.yaml": FileEntry(b"one", 0o444), "sub/x": FileEntry(b"x", 0o444)})
    assert os.readlink(os.path.join(d, "..data")) == first
    # A change: a new timestamped directory, the old one removed, a dropped key's link removed.
    assert w.write({"twp.yaml": FileEntry(b"two", 0o444), "new": FileEntry(b"n", 0o444)})
    second = os.readlink(os.path.join(d, "..data"))
    assert second != first and not os.path.exists(os.path.join(d, first))
    assert sorted(n for n in os.listdir(d) if not n.startswith("..")) == ["new", "twp.yaml"]
    assert _read(os.path.join(d, "twp.yaml")) == "two"
    assert w.current() == {"twp.yaml": FileEntry(b"two", 0o444), "new": FileEntry(b"n", 0o444)}


def test_atomic_writer_readers_never_see_a_mix(tmp_path):
    """Two files always change together: a reader through ..data sees both old or both new."""
    d = str(tmp_path / "v")
    w = AtomicWriter(d)
    w.write({"a": FileEntry(b"0", 0o644), "b": FileEntry(b"0", 0o644)})
    stop = threading.Event()
    mixed = []

    def read() -> None:
        while not stop.is_set():
            try:
                data = os.path.realpath(os.path.join(d, "..data"))
                a = _read(os.path.join(data, "a"))
                b = _read(os.path.join(data, "b"))
            except FileNotFoundError:
                continue  # an old directory removed between realpath and open: retry
            if a != b:
                mixed.append((a, b))

    t = threading.Thread(target=read)
    t.start()
    for i in range(1, 200):
        w.write({"a": FileEntry(str(i).encode(), 0o644), "b": FileEntry(str(i).encode(), 0o644)})
    stop.set()
    t.join()
    assert mixed == []


def test_atomic_writer_rejects_escaping_paths(tmp_path):
    with pytest.raises(ValueError):
        AtomicWriter(str(tmp_path)).write({"../x": FileEntry(b"", 0o644)})


def _sources(cms=None, secrets=None, token=None):
    cms = cms or {}
    secrets = secrets or {}
    return Sources(lambda ns, n: cms.get((ns, n)), lambda ns, n: secrets.get((ns, n)), token)


def test_config_map_secret_projected_payloads():
    cm = {"data": {"twp.yaml": "doc"}, "binaryData": {"bin": base64.b64encode(b"\x00\x01").decode()}}
    sec = {"data": {"tls.crt": base64.b64encode(b"CRT").decode(), "tls.key": base64.b64encode(b"KEY").decode()}}
    src = _sources({("ns", "cm"): cm}, {("ns", "s"): sec})
    assert payload_for_volume(POD, {"name": "v", "configMap": {"name": "cm"}}, src) == {
        "twp.yaml": FileEntry(b"doc", 0o644), "bin": FileEntry(b"\x00\x01", 0o644)}
    # Secret with items (the suite's tls-backend: tls.crt -> crt, tls.key -> key).
    vol = {"name": "v", "secret": {"secretName": "s", "items": [{"key": "tls.crt", "path": "crt"},
                                                                 {"key": "tls.key", "path": "key", "mode": 0o400}]}}
    assert payload_for_volume(POD, vol, src) == {"crt": FileEntry(b"CRT", 0o644), "key": FileEntry(b"KEY", 0o400)}
    # The chart's projected config volume: a root ConfigMap, optional missing parts, a Secret.
    vol = {"name": "config", "projected": {"defaultMode": 0o444, "sources": [
        {"configMap": {"name": "cm"}},
        {"configMap": {"name": "cm-part-1", "optional": True}},
        {"secret": {"name": "s"}}]}}
    assert payload_for_volume(POD, vol, src) == {
        "twp.yaml": FileEntry(b"doc", 0o444), "bin": FileEntry(b"\x00\x01", 0o444),
        "tls.crt": FileEntry(b"CRT", 0o444), "tls.key": FileEntry(b"KEY", 0o444)}
    assert payload_for_volume(POD, {"name": "t", "emptyDir": {}}, src) is None


def test_missing_sources_wait_unless_optional():
    src = _sources()
    with pytest.raises(VolumeNotReady, match='configmap "cm" not found'):
        payload_for_volume(POD, {"name": "v", "configMap": {"name": "cm"}}, src)
    assert payload_for_volume(POD, {"name": "v", "secret": {"secretName": "s", "optional": True}}, src) == {}
    src = _sources({("ns", "cm"): {"data": {"a": "1"}}})
    with pytest.raises(VolumeNotReady, match="no key 'b'"):
        payload_for_volume(POD, {"name": "v", "configMap": {"name": "cm", "items": [{"key": "b", "path": "b"}]}}, src)


def test_service_account_volume_with_token_and_downward_api():
    calls = []

    def token(pod, source):
        calls.append(source)
        return "TOKEN"

    src = _sources({("ns", "kube-root-ca.crt"): {"data": {"ca.crt": "CA"}}}, token=token)
    vol = {"name": "kube-api-access-x", "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                        "fieldPath": "metadata.namespace"}}]}}]}}
    assert payload_for_volume(POD, vol, src) == {
        "token": FileEntry(b"TOKEN", 420), "ca.crt": FileEntry(b"CA", 420), "namespace": FileEntry(b"ns", 420)}
    assert calls == [{"expirationSeconds": 3607, "path": "token"}]
    vol = {"name": "d", "downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "a", "fieldRef": {"fieldPath": "metadata.annotations['a']"}}]}}
    assert payload_for_volume(POD, vol, src) == {"labels": FileEntry(b'app="x"', 0o644), "a": FileEntry(b"1", 0o644)}
