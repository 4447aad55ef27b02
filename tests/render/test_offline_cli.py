"""The offline ``titanium-gateway render`` command: inputs, outputs, exit codes."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from titanium_gateway.cli import main as cli_main
from titanium_gateway.offline import InputError, LoadReport, build_snapshot, load_objects, main

from .conftest import require_render

ROOT = Path(__file__).parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"
HTTPS = ROOT / "examples" / "https"


def test_loader_defaults_and_lists(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Service, metadata: {name: s}}\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: ignored}}\n"
        "---\n"
        "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: HTTPRoute\n"
        "metadata: {name: r, namespace: team, creationTimestamp: 2020-01-01T00:00:00Z}\n"
        "spec: {parentRefs: [{name: g, namespace: infra}]}\n"
    )
    (tmp_path / "a.json").write_text(json.dumps({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
                                                  "metadata": {"name": "c", "namespace": "dropped"}}))
    (tmp_path / "notes.txt").write_text("not a manifest")
    report = LoadReport()
    objs = load_objects([tmp_path], report)
    assert [o["kind"] for o in objs] == ["GatewayClass", "Service", "HTTPRoute"]  # a.json sorts first
    gc, svc, route = objs
    assert "namespace" not in gc["metadata"]
    assert svc["metadata"]["namespace"] == "default" and svc["metadata"]["generation"] == 1
    assert route["apiVersion"] == "gateway.networking.k8s.io/v1"  # v1beta1 served as v1
    assert route["metadata"]["creationTimestamp"] == "2020-01-01T00:00:00Z"  # kept as a string
    assert gc["metadata"]["creationTimestamp"] < svc["metadata"]["creationTimestamp"]  # file order
    assert len({o["metadata"]["uid"] for o in objs}) == 3
    assert len(report.ignored) == 1 and "ConfigMap" in report.ignored[0]
    snap = build_snapshot(objs)
    assert set(snap.namespaces) == {"default", "team", "infra"}
    assert snap.namespaces["infra"]["metadata"]["labels"] == {"kubernetes.io/metadata.name": "infra"}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("kind: Service\nmetadata: {name: x}\n", "document 1: Service without apiVersion"),
        ("apiVersion: v1\nkind: Service\nmetadata: {}\n", "without metadata.name"),
        ("---\napiVersion: v1\nkind: Service\nmetadata: {name: ok}\n---\nfoo: [unclosed\n", "document 2: invalid YAML"),
        ("- just\n- a list\n", "expected an object"),
        ("apiVersion: v1\nkind: List\nitems:\n- {kind: Service, metadata: {name: x}}\n", "document 1, item 1"),
    ],
)
def test_bad_input_is_exit_2_naming_file_and_document(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, needle: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(InputError, match="bad.yaml"):
        load_objects([bad])
    out = tmp_path / "out"
    assert main(["-f", str(QUICKSTART), "-f", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "bad.yaml" in err
    assert not out.exists(), "nothing may be written on bad input"


@pytest.mark.parametrize(
    "argv",
    [[], ["-f"], ["-f", "missing-file.yaml"], ["-f", str(QUICKSTART), "--port-map", "80:8080"],
     ["-f", str(QUICKSTART), "--data-plane-ports", "0"], ["-f", str(QUICKSTART), "--bogus"],
     ["-f", str(QUICKSTART), "--data-plane-service", "a/b/c"]],
)
def test_usage_errors_are_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_help_is_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "--assume-programmed" in capsys.readouterr().out


def test_stdout_is_twp_and_stderr_the_summary(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    require_render()
    assert cli_main(["render", "-f", str(QUICKSTART)]) == 0
    captured = capsysbinary.readouterr()
    doc = yaml.safe_load(captured.out)
    assert doc["schemaVersion"] == "7.1" and len(doc["routes"]) == 2
    err = captured.err.decode()
    assert "Gateway apps/web: Accepted=True, Programmed=False (Pending)" in err
    assert "HTTPRoute apps/shop" in err and "2 route(s), 3 cluster(s)" in err


def test_out_dir_files(tmp_path: Path) -> None:
    require_render()
    out = tmp_path / "o"
    (tmp_path / "o").mkdir()
    (out / "twp.part-7.yaml").write_text("stale")
    assert main(["-f", str(HTTPS), "--assume-programmed", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["certificates.yaml", "events.yaml", "status.yaml", "twp.yaml"]
    statuses = list(yaml.safe_load_all((out / "status.yaml").read_text()))
    gw = next(s for s in statuses if s["kind"] == "Gateway")
    assert {c["type"]: c["status"] for c in gw["status"]["conditions"]}["Programmed"] == "True"
    assert gw["status"]["addresses"] == [{"type": "IPAddress", "value": "203.0.113.10"}]
    certs = yaml.safe_load((out / "certificates.yaml").read_text())
    assert certs == [{"file": "apps.shop-tls.pfx", "hosts": ["*.example.com"], "source": "apps/shop-tls"}]
    assert yaml.safe_load((out / "events.yaml").read_text()) == []
    everything = "".join(p.read_text() for p in out.iterdir())
    assert "PRIVATE KEY" not in everything and "tls.key" not in everything
    twp = yaml.safe_load((out / "twp.yaml").read_text())
    assert [(ls["port"], ls["decryptSsl"]) for ls in twp["listeners"]] == [(8443, True)]


def test_options_reach_the_render(tmp_path: Path) -> None:
    require_render()
    out = tmp_path / "o"
    assert main(["-f", str(QUICKSTART), "--port-map", "80=9080", "--data-plane-ports", "9080",
                 "--data-plane-service", "elsewhere/none", "--controller-name", "example.com/other",
                 "--out", str(out)]) == 0
    # not our controller name: nothing is owned, no listener
    assert yaml.safe_load((out / "twp.yaml").read_text())["listeners"] == []
    assert (out / "status.yaml").read_text() == ""
    assert main(["-f", str(QUICKSTART), "--port-map", "80=9080", "--data-plane-ports", "9080",
                 "--data-plane-service", "elsewhere/none", "--out", str(out)]) == 0
    assert [ls["port"] for ls in yaml.safe_load((out / "twp.yaml").read_text())["listeners"]] == [9080]
    gw = next(s for s in yaml.safe_load_all((out / "status.yaml").read_text()) if s["kind"] == "Gateway")
    assert gw["status"].get("addresses", []) == []


def test_render_not_available_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import titanium_gateway.render as pkg

    monkeypatch.delattr(pkg, "render", raising=False)
    assert main(["-f", str(QUICKSTART)]) == 1
    assert "render core is not available" in capsys.readouterr().err


def test_stdin_and_kubectl_list(monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    require_render()
    docs = load_objects([QUICKSTART])
    listing = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": docs})
    monkeypatch.setattr("sys.stdin", io.StringIO(listing))
    assert main(["-f", "-"]) == 0
    from_stdin = capsysbinary.readouterr().out
    assert main(["-f", str(QUICKSTART)]) == 0
    assert capsysbinary.readouterr().out == from_stdin


@settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "25")), deadline=None, derandomize=True)
@given(text=st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(["---", "apiVersion: v1", "kind: Service", "kind: List", "items:", "- a", "metadata:",
                              "  name: x", "  namespace: [1]", "{", "]", "? x", "!!binary x", "&a *a", "\t", "data: 1"]),
             max_size=12).map("\n".join),
))
def test_loader_only_raises_input_error(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "in.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        objs = load_objects([path])
    except InputError as exc:
        assert "in.yaml" in str(exc)
        return
    build_snapshot(objs)


@pytest.mark.parametrize("example", [QUICKSTART, HTTPS], ids=["quickstart", "https"])
def test_examples_are_healthy(example: Path) -> None:
    """The examples must stay a good first impression: everything accepted, resolved, programmed."""
    require_render()
    from titanium_gateway.render import render
    from titanium_gateway.render.options import RenderOptions

    result = render(build_snapshot(load_objects([example])), RenderOptions(assume_programmed=True))
    bad = []
    for st_ in result.statuses:
        blocks = [st_.status] + list(st_.status.get("listeners") or []) + list(st_.status.get("parents") or [])
        for block in blocks:
            for cond in block.get("conditions") or []:
                healthy = "False" if cond["type"] == "Conflicted" else "True"
                if cond["status"] != healthy:
                    bad.append(f"{st_.kind} {st_.namespace}/{st_.name}: {cond['type']}={cond['status']} {cond['message']}")
    assert not bad
    assert not result.events
    assert {s.kind for s in result.statuses} >= {"GatewayClass", "Gateway", "HTTPRoute"}


_OTHER_PARENT = {
    "parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "theirs"},
    "controllerName": "example.com/other",
    "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
                    "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1}],
}
_STALE_OURS = {
    "parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gone"},
    "controllerName": "titaniumproxy.com/gateway-controller",
    "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
                    "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1}],
}


def _with_route_status(tmp_path: Path) -> Path:
    docs = [d for d in load_objects([QUICKSTART])]
    for d in docs:
        if d["kind"] == "HTTPRoute":
            d["status"] = {"parents": [_OTHER_PARENT, _STALE_OURS]}
    # a route the render does not report on (only another controller's Gateway) with our stale entry
    orphan = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
              "metadata": {"namespace": "apps", "name": "moved"},
              "spec": {"parentRefs": [{"name": "theirs"}]},
              "status": {"parents": [_STALE_OURS, _OTHER_PARENT]}}
    theirs = [
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "other"},
         "spec": {"controllerName": "example.com/other"}},
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"namespace": "apps", "name": "theirs"},
         "spec": {"gatewayClassName": "other", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}},
    ]
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([*docs, *theirs, orphan]))
    return path


def test_status_yaml_keeps_other_controllers_route_parents(tmp_path: Path) -> None:
    """Spec audit F6: status.yaml is the HTTPRoute status the controller ends with: other
    controllers' entries of the input status kept (first, as the writer merges them), ours
    replaced by the render's, our stale entries dropped; a route the render no longer reports
    on but carrying our entry gets a document without it."""
    require_render()
    from titanium_gateway.render import render
    from titanium_gateway.render.options import RenderOptions
    from titanium_gateway.writers.status import merged_status as writer_merged_status

    src = _with_route_status(tmp_path)
    out = tmp_path / "o"
    assert main(["-f", str(src), "--out", str(out)]) == 0
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all((out / "status.yaml").read_text())}
    shop = docs[("HTTPRoute", "shop")]["status"]["parents"]
    assert [p["controllerName"] for p in shop] == ["example.com/other", "titaniumproxy.com/gateway-controller"]
    assert shop[0] == _OTHER_PARENT
    assert shop[1]["parentRef"]["name"] == "web"
    assert docs[("HTTPRoute", "moved")]["status"] == {"parents": [_OTHER_PARENT]}
    # the same merge as the controller's status writer
    snapshot = build_snapshot(load_objects([src]))
    result = render(snapshot, RenderOptions())
    (ours,) = [s for s in result.statuses if s.kind == "HTTPRoute" and s.name == "shop"]
    cur = snapshot.httproutes["apps/shop"]
    assert yaml.safe_load(yaml.safe_dump(writer_merged_status("HTTPRoute", cur, dict(ours.status),
                                                              "titaniumproxy.com/gateway-controller"))) == {"parents": shop}
    # the render itself stays ours-only; other kinds are unchanged by the merge
    assert [p["controllerName"] for p in ours.status["parents"]] == ["titaniumproxy.com/gateway-controller"]
    plain = tmp_path / "plain"
    assert main(["-f", str(QUICKSTART), "--out", str(plain)]) == 0
    before = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all((plain / "status.yaml").read_text())}
    assert docs[("Gateway", "web")] == before[("Gateway", "web")]
    assert docs[("GatewayClass", "titanium")] == before[("GatewayClass", "titanium")]


def test_status_merge_helpers() -> None:
    from titanium_gateway.render.statusmerge import apply_merge_patch, final_status, merged_status

    ours = {"parentRef": {"name": "web"}, "controllerName": "me"}
    cur = {"status": {"parents": [_OTHER_PARENT, {"parentRef": {"name": "old"}, "controllerName": "me"}, "junk"]}}
    assert merged_status("HTTPRoute", cur, {"parents": [ours]}, "me") == {"parents": [_OTHER_PARENT, ours]}
    assert final_status("HTTPRoute", None, {"parents": [ours]}, "me") == {"parents": [ours]}
    gw = {"status": {"conditions": [1], "listeners": [2], "stale": {"a": 1}}}
    assert merged_status("Gateway", gw, {"conditions": []}, "me") == {"stale": None, "listeners": None, "conditions": []}
    assert final_status("Gateway", gw, {"conditions": [3]}, "me") == {"conditions": [3]}
    assert apply_merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    assert final_status("Ingress", {"status": "garbage"}, {"loadBalancer": {"ingress": []}}, "me") == {
        "loadBalancer": {"ingress": []}
    }
