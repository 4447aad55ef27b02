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

from tests.render.conftest import require_render
from titanium_gateway.cli import main as cli_main
from titanium_gateway.offline.load import LoadReport, load_objects
from titanium_gateway.offline.manifests import InputError
from titanium_gateway.offline.render_cmd import main
from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.render.result import RenderResult

ROOT = Path(__file__).parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"
HTTPS = ROOT / "examples" / "https"


def test_loader_defaults_and_lists(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Service, metadata: {name: s}}\n"
        "- {apiVersion: apps/v1, kind: Deployment, metadata: {name: ignored}}\n"
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
    assert len(report.ignored) == 1 and "Deployment" in report.ignored[0]
    snap = build_snapshot(objs)
    assert set(snap.namespaces) == {"default", "team", "infra"}
    assert snap.namespaces["infra"]["metadata"]["labels"] == {"kubernetes.io/metadata.name": "infra"}


def test_reference_grants_are_read_as_v1_from_either_served_version(tmp_path: Path) -> None:
    """ReferenceGrant v1 (Gateway API v1.5+) and v1beta1 (every bundle) have the same fields."""
    for version in ("v1", "v1beta1"):
        (tmp_path / f"{version}.yaml").write_text(
            f"apiVersion: gateway.networking.k8s.io/{version}\nkind: ReferenceGrant\n"
            f"metadata: {{name: g-{version}, namespace: backends}}\n"
            "spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: apps}],"
            " to: [{group: '', kind: Service}]}\n")
    report = LoadReport()
    grants = load_objects([tmp_path], report)
    assert report.ignored == [] and report.warnings == []
    assert [(g["metadata"]["name"], g["apiVersion"]) for g in grants] == [
        ("g-v1", "gateway.networking.k8s.io/v1"), ("g-v1beta1", "gateway.networking.k8s.io/v1")]


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
    (out / "gateways" / "apps" / "gone").mkdir(parents=True)
    (out / "gateways" / "apps" / "gone" / "twp.yaml").write_text("stale")
    assert main(["-f", str(HTTPS), "--assume-programmed", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["certificates.yaml", "events.yaml", "gateways", "status.yaml",
                                                     "twp.yaml"]
    # the Gateway's own data plane (the chart's default: one per Gateway)
    own = out / "gateways" / "apps" / "web-tls"
    assert sorted(p.name for p in own.iterdir()) == ["certificates.yaml", "twp.yaml"]
    assert not (out / "gateways" / "apps" / "gone" / "twp.yaml").exists()
    statuses = list(yaml.safe_load_all((out / "status.yaml").read_text()))
    gw = next(s for s in statuses if s["kind"] == "Gateway")
    assert {c["type"]: c["status"] for c in gw["status"]["conditions"]}["Programmed"] == "True"
    assert gw["status"]["addresses"] == [{"type": "IPAddress", "value": "203.0.113.21"}]
    certs = yaml.safe_load((own / "certificates.yaml").read_text())
    assert certs == [{"file": "apps.shop-tls.pfx", "hosts": ["*.example.com"], "source": "apps/shop-tls"}]
    assert yaml.safe_load((out / "certificates.yaml").read_text()) == []  # the shared data plane's: no Ingress
    assert yaml.safe_load((out / "events.yaml").read_text()) == []
    everything = "".join(p.read_text() for p in out.rglob("*.yaml"))
    assert "PRIVATE KEY" not in everything and "tls.key" not in everything
    twp = yaml.safe_load((own / "twp.yaml").read_text())
    assert [(ls["port"], ls["decryptSsl"]) for ls in twp["listeners"]] == [(8443, True)]
    assert yaml.safe_load((out / "twp.yaml").read_text())["listeners"] == []
    # one data plane for every Gateway: the shared one's files only, the address the chart's Service's
    shared = tmp_path / "shared"
    assert main(["-f", str(HTTPS), "--assume-programmed", "--data-plane-mode", "shared", "--out", str(shared)]) == 0
    assert sorted(p.name for p in shared.iterdir()) == ["certificates.yaml", "events.yaml", "status.yaml", "twp.yaml"]
    gw = next(s for s in yaml.safe_load_all((shared / "status.yaml").read_text()) if s["kind"] == "Gateway")
    assert gw["status"]["addresses"] == [{"type": "IPAddress", "value": "203.0.113.10"}]
    assert yaml.safe_load((shared / "twp.yaml").read_text())["listeners"][0]["port"] == 8443


def test_out_makes_no_pfx_but_still_reports_bad_certificates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command writes no TLS Secret files, so it validates each certificate but makes no PFX."""
    require_render()
    from titanium_gateway.render import certificates

    made: list[int] = []
    real = certificates._pfx
    monkeypatch.setattr(certificates, "_pfx", lambda *a: made.append(1) or real(*a))
    certificates._cache.clear()
    out = tmp_path / "o"
    assert main(["-f", str(HTTPS), "--out", str(out)]) == 0
    assert "apps.shop-tls.pfx" in (out / "gateways/apps/web-tls/certificates.yaml").read_text() and made == []
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in HTTPS.iterdir():
        text = f.read_text()
        if f.name == "15-secret.yaml":
            text = text.replace("tls.key:", "tls.key: bm90IGEga2V5  #")  # base64 of "not a key"
        (bad / f.name).write_text(text)
    assert main(["-f", str(bad), "--out", str(tmp_path / "o2")]) == 0
    status = (tmp_path / "o2" / "status.yaml").read_text()
    assert "InvalidCertificateRef" in status and "tls.key is not a PEM private key" in status


def test_options_reach_the_render(tmp_path: Path) -> None:
    require_render()
    out = tmp_path / "o"
    assert main(["-f", str(QUICKSTART), "--port-map", "80=9080", "--data-plane-ports", "9080",
                 "--data-plane-service", "elsewhere/none", "--controller-name", "example.com/other",
                 "--data-plane-mode", "shared", "--out", str(out)]) == 0
    # not our controller name: nothing is owned, no listener
    assert yaml.safe_load((out / "twp.yaml").read_text())["listeners"] == []
    assert (out / "status.yaml").read_text() == ""
    assert main(["-f", str(QUICKSTART), "--port-map", "80=9080", "--data-plane-ports", "9080",
                 "--data-plane-service", "elsewhere/none", "--data-plane-mode", "shared", "--out", str(out)]) == 0
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


# --- strict input ---------------------------------------------------------------------------------


def test_concatenated_documents_without_separator_are_an_error(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``cat examples/quickstart/*.yaml | render -f -``: the files run together without ``---``,
    so two documents' keys would merge. kubectl rejects the duplicate key; so do we."""
    text = "".join(p.read_text() for p in sorted(QUICKSTART.glob("*.yaml")))
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["-f", "-"]) == 2
    err = capsys.readouterr().err
    assert "<stdin>: document 3: line 55, column 1: duplicate key 'apiVersion'" in err
    assert "without --- between them" in err


def test_duplicate_key_in_json_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "list.json"
    second = '  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "name": "b"}}]}\n'
    path.write_text('{"apiVersion": "v1", "kind": "List", "items": [\n' + second)
    assert main(["-f", str(path), "--out", str(tmp_path / "o")]) == 2
    column = second.rindex('"name"') + 1
    assert f"{path}: document 1: line 2, column {column}: duplicate key 'name'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_unknown_fields_are_warned_with_file_document_and_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_render()
    route = tmp_path / "route.yaml"
    route.write_text(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: typo, namespace: apps}\n"
        "spec:\n  parentRef: [{name: web}]\n  rules:\n  - rulez: []\n    backendRefs: [{name: frontend, port: 80}]\n")
    assert main(["-f", str(QUICKSTART), "-f", str(route)]) == 0
    err = capsys.readouterr().err
    assert f"{route}:1: document 1: HTTPRoute apps/typo: unknown field 'spec.parentRef'" in err
    assert f"{route}:1: document 1: HTTPRoute apps/typo: unknown field 'spec.rules[0].rulez'" in err
    assert "Warnings (2):" in err
    # the route has no parentRefs: it takes no part, and the summary says so
    assert f"HTTPRoute apps/typo ({route}:1: document 1): it has no parentRefs" in err


def test_empty_files_are_noted_and_binary_files_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_render()
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert main(["-f", str(QUICKSTART), "-f", str(empty)]) == 0
    assert f"{empty}: empty (no objects)" in capsys.readouterr().err
    binary = tmp_path / "cert.yaml"
    binary.write_bytes(b"\x30\x82\x01\x0a\x02\x82\x01\x01\x00\xc0")
    assert main(["-f", str(QUICKSTART), "-f", str(binary)]) == 2
    assert f"{binary}: not a UTF-8 text file" in capsys.readouterr().err


# --- what could not take part ---------------------------------------------------------------------

_NOT_TAKING_PART = """
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: orphan, namespace: apps}
spec: {gatewayClassName: missing, listeners: [{name: http, port: 80, protocol: HTTP}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: theirs}
spec: {controllerName: example.com/other}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: other, namespace: apps}
spec: {gatewayClassName: theirs, listeners: [{name: http, port: 80, protocol: HTTP}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: lost, namespace: team}
spec: {parentRefs: [{name: nowhere, namespace: infra}, {name: other, namespace: apps}, {kind: Service, group: "", name: mesh}]}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: no-class, namespace: apps}
spec: {defaultBackend: {service: {name: frontend, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: legacy, namespace: apps, annotations: {kubernetes.io/ingress.class: titanium}}
spec: {defaultBackend: {service: {name: frontend, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: nginx-one, namespace: apps}
spec: {ingressClassName: nginx, defaultBackend: {service: {name: frontend, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: unknown-class, namespace: apps}
spec: {ingressClassName: gone, defaultBackend: {service: {name: frontend, port: {number: 80}}}}
---
apiVersion: v1
kind: Secret
metadata: {name: elsewhere, namespace: vault}
type: kubernetes.io/tls
data: {tls.crt: "", tls.key: ""}
"""


def test_the_summary_lists_what_could_not_take_part_and_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_render()
    path = tmp_path / "extra.yaml"
    path.write_text(_NOT_TAKING_PART)
    assert main(["-f", str(QUICKSTART), "-f", str(path), "--secret-namespaces", "apps"]) == 0
    err = capsys.readouterr().err
    where = lambda doc: f"({path}:{_doc_line(doc)}: document {doc})"  # noqa: E731
    expected = [
        f"Gateway apps/orphan {where(1)}: its GatewayClass missing is not in the input",
        f"Gateway apps/other {where(3)}: its GatewayClass theirs belongs to controller example.com/other",
        f"HTTPRoute team/lost {where(4)}: parent Gateway infra/nowhere is not in the input; parent Gateway apps/other "
        "is not ours (its GatewayClass theirs belongs to controller example.com/other); parent Service mesh is not a Gateway",
        f"Ingress apps/legacy {where(7)}: not served: it names its class only with the kubernetes.io/ingress.class "
        "annotation ('titanium'), which is read only with --watch-legacy-annotation, and no IngressClass of ours is the default",
        f"Ingress apps/nginx-one {where(8)}: not served: its IngressClass nginx belongs to controller k8s.io/ingress-nginx, "
        "not titanium.io/ingress-controller",
        f"Ingress apps/no-class {where(6)}: not served: it has no ingressClassName and no IngressClass of ours is the "
        'default (ingressclass.kubernetes.io/is-default-class: "true")',
        f"Ingress apps/unknown-class {where(9)}: not served: its IngressClass gone is not in the input",
    ]
    section = err.split("Not taking part (7):\n", 1)[1]
    assert [line.strip() for line in section.splitlines()[:7]] == expected
    assert "Secrets not read (outside --secret-namespaces): vault/elsewhere" in err
    assert ("Secrets and ConfigMaps assumed readable: those of namespace(s) apps only (--secret-namespaces; "
            "the chart's controller.secretNamespaces)") in err
    assert "Namespaces assumed (not in the input): gateway-system, infra, team" in err
    # with the flag the legacy annotation is read
    assert main(["-f", str(QUICKSTART), "-f", str(path), "--watch-legacy-annotation"]) == 0
    err = capsys.readouterr().err
    assert "Secrets and ConfigMaps assumed readable: those of every namespace (the default; " in err
    assert "Secrets not read" not in err
    assert "Ingress apps/legacy: owned" in err and "Ingress apps/legacy (" not in err


def _doc_line(doc: int) -> int:
    """The line where document ``doc`` of _NOT_TAKING_PART starts (after its ``---``)."""
    lines = _NOT_TAKING_PART.split("\n")
    starts = [0] + [i + 1 for i, line in enumerate(lines) if line == "---"]
    start = starts[doc - 1]
    while not lines[start].strip():
        start += 1
    return start + 1


# --- options and the chart's defaults --------------------------------------------------------------


def test_default_data_plane_service_is_the_charts(tmp_path: Path) -> None:
    require_render()
    out = tmp_path / "o"
    assert main(["-f", str(QUICKSTART), "--out", str(out), "--data-plane-mode", "shared"]) == 0
    gw = next(s for s in yaml.safe_load_all((out / "status.yaml").read_text()) if s["kind"] == "Gateway")
    assert gw["status"]["addresses"] == [{"type": "IPAddress", "value": "203.0.113.10"}]
    # NAME alone is in --data-plane-namespace, as for the controller
    assert main(["-f", str(QUICKSTART), "--out", str(out), "--data-plane-service", "titanium-gateway-data-plane",
                 "--data-plane-namespace", "elsewhere", "--data-plane-mode", "shared"]) == 0
    gw = next(s for s in yaml.safe_load_all((out / "status.yaml").read_text()) if s["kind"] == "Gateway")
    assert gw["status"].get("addresses", []) == []


def test_config_parts_and_secret_namespaces_reach_the_render(tmp_path: Path) -> None:
    require_render()
    from titanium_gateway.offline.args import options_from_args
    from titanium_gateway.offline.render_cmd import _parser

    assert options_from_args(_parser().parse_args(["-f", "x", "--config-parts", "3"])).max_parts == 3
    out = tmp_path / "o"
    assert main(["-f", str(HTTPS), "--out", str(out), "--secret-namespaces", "other,more"]) == 0
    gw = next(s for s in yaml.safe_load_all((out / "status.yaml").read_text()) if s["kind"] == "Gateway")
    listener = gw["status"]["listeners"][0]
    resolved = next(c for c in listener["conditions"] if c["type"] == "ResolvedRefs")
    assert resolved["status"] == "False" and resolved["reason"] == "InvalidCertificateRef"
    # not "not found": the Secret may well be there, the controller may not read it
    assert resolved["message"].startswith("Secret apps/shop-tls cannot be read: the controller reads Secrets in "
                                          "more, other only (--secret-namespaces; chart values "
                                          "controller.secretNamespaces, controller.secretsClusterWide)")
    assert yaml.safe_load((out / "gateways/apps/web-tls/certificates.yaml").read_text()) == []
    assert main(["-f", str(HTTPS), "--out", str(out), "--secret-namespaces", "apps"]) == 0
    assert len(yaml.safe_load((out / "gateways/apps/web-tls/certificates.yaml").read_text())) == 1


def _chart_controller_environ() -> dict[str, str]:
    docs = [d for d in yaml.safe_load_all((ROOT / "manifests" / "titanium-gateway.yaml").read_text()) if d]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-controller")]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = {"POD_NAMESPACE": "gateway-system", "POD_NAME": "controller-0"}
    for item in container["env"]:
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif item["valueFrom"].get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            env[item["name"]] = "gateway-system"
        else:
            env[item["name"]] = "stand-in"
    return env


def test_render_defaults_are_what_the_chart_gives_the_controller() -> None:
    """docs/render-cli.md: a render without options shows what a default install will get."""
    from titanium_gateway.controller.options import parse_options
    from titanium_gateway.offline.args import options_from_args
    from titanium_gateway.offline.render_cmd import _parser

    controller = parse_options([], _chart_controller_environ()).to_render_options()
    render = options_from_args(_parser().parse_args(["-f", "x"]))
    # the Secrets too: with no namespaces listed the chart reads certificates in every namespace,
    # as the offline render reads every Secret it is given
    assert controller.secret_namespaces == ()
    assert render == controller


@settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "40")), deadline=None, derandomize=True)
@given(
    flags=st.fixed_dictionaries({}, optional={
        "controller-name": st.sampled_from(["a.example/x", "titaniumproxy.com/gateway-controller"]),
        "ingress-controller-name": st.sampled_from(["b.example/y"]),
        "port-map": st.sampled_from(["80=80", "80=8080,443=8443,8000=9000"]),
        "data-plane-ports": st.sampled_from(["80,443", "8080"]),
        "data-plane-service": st.sampled_from(["svc", "ns/svc"]),
        "data-plane-namespace": st.sampled_from(["gateway-system", "edge"]),
        "config-parts": st.sampled_from(["0", "7", "64"]),
        "secret-namespaces": st.sampled_from(["a,b", "b, a"]),
        "data-plane-mode": st.sampled_from(["shared", "per-gateway"]),
        "gateway-namespaces": st.sampled_from(["a,b", "b, a"]),
        "gateway-address-ranges": st.sampled_from(["198.51.100.0/24", "192.0.2.7, 2001:db8::/64"]),
    }),
    legacy=st.booleans(),
)
def test_every_render_changing_controller_option_means_the_same_on_render(flags: dict[str, str], legacy: bool) -> None:
    from titanium_gateway.controller.options import parse_options
    from titanium_gateway.offline.args import options_from_args
    from titanium_gateway.offline.render_cmd import _parser

    argv = [f"--{k}={v}" for k, v in flags.items()] + (["--watch-legacy-annotation"] if legacy else [])
    controller_argv = list(argv)
    if "data-plane-service" not in flags:
        controller_argv.append("--data-plane-service=titanium-gateway-data-plane")
    if "data-plane-namespace" not in flags:
        controller_argv.append("--data-plane-namespace=gateway-system")
    if "data-plane-mode" not in flags:  # (the chart's default, the render's too)
        controller_argv.append("--data-plane-mode=per-gateway")
    if flags.get("data-plane-mode", "per-gateway") == "per-gateway":
        controller_argv.append("--data-plane-template=/etc/titanium-gateway/data-plane.yaml")
    copts = parse_options(controller_argv, {})
    args = _parser().parse_args(["-f", "x", *argv])
    assert options_from_args(args) == copts.to_render_options()
    assert tuple(args.secret_namespaces) == copts.secret_namespaces


# --- the summary's counts and the Ingress selection agree with the render --------------------------


def test_config_counts_agree_with_the_parsed_document() -> None:
    from tests.render.conftest import case_names, render_case
    from titanium_gateway.offline.summary import config_counts, counts_from_bytes

    for case in case_names():
        result = render_case(case)
        expected = {"listeners": 0, "routes": 0, "clusters": 0}
        for data in [result.config, *(d for _, d in result.parts)]:
            doc = yaml.load(data, Loader=yaml.CSafeLoader)  # noqa: S506
            for key in expected:
                expected[key] += len(doc.get(key) or [])
        assert config_counts(result) == expected, case
        assert counts_from_bytes(result) == expected, case


def test_config_counts_of_a_config_cut_short_by_an_item_larger_than_a_part() -> None:
    import dataclasses

    from tests.render.conftest import case_names, case_objects, case_options
    from titanium_gateway.offline.summary import config_counts

    render = require_render()
    case = next(c for c in case_names() if c.startswith("seed-config-parts"))
    options, snap_kwargs = case_options(case)
    result = render(build_snapshot(case_objects(case), **snap_kwargs), dataclasses.replace(options, part_limit_bytes=100))
    assert "more than the part limit" in result.delivery_error
    expected = {"listeners": 0, "routes": 0, "clusters": 0}
    for data in [result.config, *(d for _, d in result.parts)]:
        doc = yaml.load(data, Loader=yaml.CSafeLoader)  # noqa: S506
        for key in expected:
            expected[key] += len(doc.get(key) or [])
    assert result.document is not None and expected["routes"] < len(result.document.routes)
    assert config_counts(result) == expected


def test_not_served_ingresses_are_exactly_those_the_render_leaves_out() -> None:
    from tests.render.conftest import case_names, case_objects, render_case
    checked = 0
    for case in case_names():
        snapshot = build_snapshot(case_objects(case))
        if not snapshot.ingresses:
            continue
        result = render_case(case)
        owned = {f"{s.namespace}/{s.name}" for s in result.statuses if s.kind == "Ingress"}
        not_served = {f"{r.namespace}/{r.name}" for r in result.not_ours if r.kind == "Ingress"}
        for key in snapshot.ingresses:
            assert (key in not_served) != (key in owned), (case, key)
            checked += 1
    assert checked > 20


@settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "150")), deadline=None, derandomize=True)
@given(
    classes=st.lists(st.tuples(st.sampled_from(["titanium", "nginx", "other"]),
                               st.sampled_from(["titanium.io/ingress-controller", "k8s.io/ingress-nginx"]),
                               st.sampled_from([None, "true", "false", "TRUE"])), max_size=3, unique_by=lambda c: c[0]),
    class_name=st.sampled_from([None, "", "titanium", "nginx", "other", "gone"]),
    legacy=st.sampled_from([None, "titanium", "nginx", "other", 7, ""]),
    watch=st.booleans(),
)
def test_ingress_selection_reasons_agree_with_the_render(classes: list[tuple[str, str, str | None]], class_name: str | None,
                                                        legacy: object, watch: bool) -> None:
    from titanium_gateway.render import render
    from titanium_gateway.render.options import RenderOptions

    objs: list[dict] = []
    for name, controller, default in classes:
        meta: dict = {"name": name}
        if default is not None:
            meta["annotations"] = {"ingressclass.kubernetes.io/is-default-class": default}
        objs.append({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": meta,
                     "spec": {"controller": controller}})
    ing: dict = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i", "namespace": "a"},
                 "spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}}}
    if class_name is not None:
        ing["spec"]["ingressClassName"] = class_name
    if legacy is not None:
        ing["metadata"]["annotations"] = {"kubernetes.io/ingress.class": legacy}
    options = RenderOptions(watch_legacy_annotation=watch)
    snapshot = build_snapshot([*objs, ing])
    result = render(snapshot, options)
    owned = any(s.kind == "Ingress" for s in result.statuses)
    why = next((r.reason for r in result.not_ours if r.key == ("Ingress", "a", "i")), None)
    assert (why is None) == owned, why
    assert why is None or why.strip(), why


# --- the command table ------------------------------------------------------------------------------


def test_commands_and_the_executable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main([]) == 2
    assert "migrate-ingress" in capsys.readouterr().out
    assert cli_main(["bogus"]) == 2
    assert "unknown command 'bogus'" in capsys.readouterr().err
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "titanium_gateway", "render", "-f", str(QUICKSTART), "--out", str(tmp_path / "o")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "HTTPRoute apps/shop" in proc.stderr and (tmp_path / "o" / "twp.yaml").exists()
    proc = subprocess.run([sys.executable, "-m", "titanium_gateway", "render", "-f", str(tmp_path / "missing.yaml")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no such file or directory" in proc.stderr


def test_version(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``--version`` prints the installed distribution's version; a source tree that is not
    installed falls back to the package's ``__version__``."""
    import importlib.metadata
    import re

    import titanium_gateway
    from titanium_gateway import cli

    declared = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.M).group(1)  # type: ignore[union-attr]
    assert cli_main(["--version"]) == 0
    assert capsys.readouterr().out == f"titanium-gateway {declared}\n"
    assert cli_main(["--help"]) == 0 and "--version" in capsys.readouterr().out

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    monkeypatch.setattr(titanium_gateway, "__version__", "9.9.9-source")
    assert cli.version() == "9.9.9-source"


def test_a_large_input_gets_a_condensed_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Above 200 owned objects the healthy HTTPRoutes are counted, not listed; every object with
    a problem, and every Gateway, still is."""
    require_render()
    routes = [{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
               "metadata": {"name": f"r{i:03d}", "namespace": "apps"},
               "spec": {"parentRefs": [{"name": "web"}], "hostnames": [f"h{i}.example.com"],
                        "rules": [{"backendRefs": [{"name": "frontend" if i else "missing", "port": 8080}]}]}}
              for i in range(250)]
    path = tmp_path / "routes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": routes}))
    assert main(["-f", str(QUICKSTART), "-f", str(path)]) == 0
    err = capsys.readouterr().err
    assert "Gateway apps/web: Accepted=True" in err
    assert "HTTPRoute apps/r000: 1 parent(s)" in err and "BackendNotFound" in err  # the broken one is listed
    assert "HTTPRoute apps/r001" not in err
    assert "HTTPRoute: 250 not listed: every parent Accepted, references resolved" in err  # 249 + the quickstart's shop
    assert len(err.splitlines()) < 40


def test_a_field_of_a_newer_release_is_warned_as_such_and_its_500_shows_in_the_summary(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_render()
    route = tmp_path / "route.yaml"
    route.write_text(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: retried, namespace: apps}\n"
        "spec:\n  parentRefs: [{name: web}]\n  hostnames: [retry.example.com]\n  rules:\n"
        "  - name: main\n    backendRefs: [{name: frontend, port: 8080}]\n    retry: {attempts: 2, codes: [503]}\n")
    out = tmp_path / "out"
    assert main(["-f", str(QUICKSTART), "-f", str(route), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert (f"{route}:1: document 1: HTTPRoute apps/retried: field 'spec.rules[0].retry' is from Gateway API v1.7"
            " (experimental in v1.6.3), newer than the v1.6.3 standard schemas; not supported, the rule answers 500"
            in err)
    assert "spec.rules[0].name" not in err  # standard since v1.4: known to the schemas, and it changes no traffic
    assert "unknown field" not in err
    assert "parent apps/web: Accepted=False (UnsupportedValue)" in err
    assert "Accepted: rule 'main': spec.rules[0].retry is not supported" in err  # (the rule's name said)
    twp = yaml.safe_load((out / "gateways/apps/web/twp.yaml").read_text())
    (retried,) = [r for r in twp["routes"] if r["id"].startswith("httproute/apps/retried/")]
    assert retried["directResponse"]["status"] == 500
    assert retried["directResponse"]["body"] == "UnsupportedValue"  # the why is in status (above)


def test_foreign_annotation_events_show_in_the_summary_and_events_yaml(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_render()
    ing = tmp_path / "ingress.yaml"
    ingress = ("apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\n  namespace: apps\n"
               "  annotations: {{nginx.ingress.kubernetes.io/whitelist-source-range: 10.0.0.0/8}}\n"
               "spec:\n  ingressClassName: {cls}\n  rules:\n  - host: {name}.ingress.example.net\n    http:\n      paths:\n"
               "      - {{path: /, pathType: Prefix, backend: {{service: {{name: frontend, port: {{number: 8080}}}}}}}}\n")
    ing.write_text("apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: titanium}\n"
                   "spec: {controller: titanium.io/ingress-controller}\n---\n"
                   + ingress.format(name="shop", cls="titanium") + "---\n" + ingress.format(name="theirs", cls="nginx"))
    out = tmp_path / "out"
    assert main(["-f", str(QUICKSTART), "-f", str(ing), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    message = ("nginx.ingress.kubernetes.io/whitelist-source-range '10.0.0.0/8' is not enforced here (a client address"
               " allow-list): only titanium.io/ annotations are read; the equivalent is"
               " titanium.io/whitelist-source-range: '10.0.0.0/8'")
    assert f"Event Warning ForeignAnnotation on Ingress apps/shop: {message}" in err
    assert "on Ingress apps/theirs" not in err
    events = yaml.safe_load((out / "events.yaml").read_text())
    assert [(e["involvedObject"]["name"], e["reason"], e["message"]) for e in events] == [
        ("shop", "ForeignAnnotation", message)]


def test_the_gateway_api_v1_6_kinds_are_read_as_the_controller_reads_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ListenerSet, BackendTLSPolicy, the other route kinds and the ConfigMaps of CA certificates
    are read (v1); ConfigMaps outside --secret-namespaces are not, as the controller's watch does
    not see them, and the policy's status says so."""
    require_render()
    case = ROOT / "tests" / "render" / "testdata" / "backendtlspolicy-honoured" / "in.yaml"
    out = tmp_path / "out"
    assert main(["-f", str(case), "--secret-namespaces", "gateway-system", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "ConfigMaps not read (outside --secret-namespaces): apps/shop-ca, apps/pay-ca" in err
    assert "ignored" not in err
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all((out / "status.yaml").read_text())}
    conditions = docs[("BackendTLSPolicy", "shop-https")]["status"]["ancestors"][0]["conditions"]
    assert any("cannot be read: the controller reads ConfigMaps in gateway-system only" in c["message"]
               for c in conditions)
    assert main(["-f", str(ROOT / "tests" / "render" / "testdata" / "other-route-kinds" / "in.yaml"),
                 "--out", str(tmp_path / "other")]) == 0
    assert "GRPCRoute apps/greeter: 3 parent(s)" in capsys.readouterr().err


def test_stdout_holds_a_document_per_data_plane_with_a_data_plane_per_gateway(
        capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """With a data plane per Gateway, stdout is one YAML stream: each Gateway's twp.yaml, and the
    shared data plane's when it serves something (here an Ingress), each after a comment naming it."""
    require_render()
    case = ROOT / "tests" / "render" / "testdata" / "pergateway-isolation" / "in.yaml"
    assert main(["-f", str(case)]) == 0
    out = capsysbinary.readouterr().out.decode()
    docs = list(yaml.safe_load_all(out))
    assert [[r["id"] for r in d["routes"]] for d in docs] == [
        ["ingress/infra/legacy/r0p0"],
        ["httproute/infra/status/r0m0", "httproute/infra/billing/r0m0"],
        ["httproute/infra/status/r0m0", "httproute/infra/www/r0m0"]]
    assert [line for line in out.splitlines() if line.startswith("#")] == [
        "# twp.yaml: the shared data plane (Ingresses)",
        "# gateways/infra/internal/twp.yaml: the data plane of Gateway infra/internal",
        "# gateways/infra/public/twp.yaml: the data plane of Gateway infra/public"]
    # each document's bytes are what --out writes
    result = render_snapshot_of(case)
    assert (out.split("\n---\n")[1].split("\n", 1)[1] + "\n").encode() == result.plane("infra/internal").config


def render_snapshot_of(path: Path) -> RenderResult:
    from titanium_gateway.offline.load import load_objects
    from titanium_gateway.offline.snapshot import build_snapshot
    from titanium_gateway.render import render
    from titanium_gateway.render.options import RenderOptions

    return render(build_snapshot(load_objects([path])), RenderOptions(
        data_plane_service=("gateway-system", "titanium-gateway-data-plane"), data_plane_mode="per-gateway"))
