"""make dev, the part inside the cluster's network (hack/kube/dev.sh runs it through exec.sh, once
the pod runner serves the cluster's pods).

1. ``helm upgrade --install`` of the chart with hack/kube/dev-values.yaml and then the user's
   own values files (``--values FILE``, from ``make dev DEV_VALUES=FILE``: later files win): the
   controller of this working tree and the reference data plane as the chart's own pods (the pod
   runner runs them); a value the release has (``helm get values``: set with ``helm upgrade
   --set`` by hand, say) that the upgrade changes is named first, so it is not lost unseen; on a
   release that was there already, the controller's pods are deleted so that the new ones run
   the working tree as it is now (the data plane keeps running);
2. the quick start's backends (examples/quickstart-backends/), its Gateway and HTTPRoute
   (examples/quickstart/10-*, 20-*) and the GRPCRoute of examples/grpc/ created where absent: an
   object that exists is left as it is, so a rerun never undoes your edits;
3. waits until the Gateway is Programmed and a request through its address answers, shows it,
   and writes the address to DIR/dev/gateway-address (for dev.sh's closing lines); then names
   every listener of every Gateway that is not in its good state (a Programmed Gateway can have
   an HTTPS listener whose certificate it may not read), with its conditions' reasons and
   messages.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import requests
import yaml

from tests.support.chartrelease import CHART, HELM_ENV
from tests.support.kubecluster import REPO, LocalCluster
from titanium_gateway.render.listenerevents import SOUND, listener_problem

VALUES = REPO / "hack" / "kube" / "dev-values.yaml"
QUICKSTART = [REPO / "examples" / "quickstart" / "10-gateway.yaml", REPO / "examples" / "quickstart" / "20-httproute.yaml",
              REPO / "examples" / "grpc" / "grpcroute.yaml"]
BACKENDS = REPO / "examples" / "quickstart-backends" / "backends.yaml"
HOST = "shop.example.com"


def log(msg: str) -> None:
    print(f"make dev: {msg}", file=sys.stderr, flush=True)


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def display(path: Path) -> str:
    """``path`` relative to the checkout when it is in it."""
    return rel(path) if path.resolve().is_relative_to(REPO) else str(path)


def create_absent(cluster: LocalCluster, files: list[Path]) -> None:
    """Create each object of ``files`` that does not exist; leave the others as they are."""
    created: list[str] = []
    kept: list[str] = []
    for f in files:
        for obj in yaml.safe_load_all(f.read_text()):
            if not obj:
                continue
            md = obj["metadata"]
            what = f"{obj['kind'].lower()}/{md['name']}"
            if what in created or what in kept:
                continue  # (the Namespace is in more than one file)
            if cluster.api.get_object(obj["kind"], md.get("namespace"), md["name"]) is None:
                cluster.api.create(obj)
                created.append(what)
            else:
                kept.append(what)
    if created:
        log("created " + ", ".join(created))
    if kept:
        log("left as they are (they exist; kubectl apply -f the files to reset them): " + ", ".join(kept))


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return not pod["metadata"].get("deletionTimestamp") and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def gateway(cluster: LocalCluster) -> dict[str, Any]:
    return cluster.api.get_object("Gateway", "apps", "web") or {}


def programmed_address(gw: dict[str, Any]) -> str:
    status = gw.get("status") or {}
    if not any(c.get("type") == "Programmed" and c.get("status") == "True" for c in status.get("conditions") or []):
        return ""
    return next((a.get("value", "") for a in status.get("addresses") or []), "")


#: A listener's conditions in their good state: the render's (its InvalidListener Events), and
#: Programmed, which the data plane's confirmation makes True.
GOOD = {**SOUND, "Programmed": "True"}


def listener_problems(gw: dict[str, Any]) -> list[str]:
    """Each listener of a Gateway with a condition not in its good state, as
    ``Gateway NS/NAME: listener "L" cannot serve: Type=Status (Reason): message; ...``."""
    md = gw.get("metadata") or {}
    found = (listener_problem(li, GOOD) for li in (gw.get("status") or {}).get("listeners") or [])
    return [f"Gateway {md.get('namespace')}/{md.get('name')}: {p}" for p in found if p]


def flatten(values: Any, prefix: str = "") -> dict[str, Any]:
    """Helm values as ``{"controller.replicas": 1, ...}`` (a list is one value)."""
    if not isinstance(values, dict) or (prefix and not values):
        return {prefix: values} if prefix else {}
    out: dict[str, Any] = {}
    for k, v in values.items():
        out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def dropped_values(current: dict[str, Any], files: list[Path]) -> list[str]:
    """The values the release has now (``helm get values``) that an upgrade with ``files``
    (merged in order) would change or drop, as ``key: now -> then``."""
    wanted: dict[str, Any] = {}
    for f in files:
        wanted.update(flatten(yaml.safe_load(f.read_text()) or {}))
    out = []
    for key, value in sorted(flatten(current).items()):
        if key not in wanted:
            out.append(f"{key}: {json.dumps(value)} -> the chart's default")
        elif wanted[key] != value:
            out.append(f"{key}: {json.dumps(value)} -> {json.dumps(wanted[key])}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", required=True)
    ap.add_argument("--release", default="titanium-gateway")
    ap.add_argument("--namespace", default="gateway-system")
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--values", action="append", type=Path, default=[], metavar="FILE",
                    help="a values file of yours, applied after hack/kube/dev-values.yaml (repeatable)")
    args = ap.parse_args()
    files = [VALUES, *args.values]
    cluster = LocalCluster(os.environ["TITANIUM_KUBE_DIR"])
    work = cluster.dir / "dev"
    work.mkdir(exist_ok=True)
    (work / "gateway-address").unlink(missing_ok=True)

    there = cluster.run(args.helm, "status", args.release, "--namespace", args.namespace, check=False,
                        env=HELM_ENV).returncode == 0
    if there:
        current = cluster.run(args.helm, "get", "values", args.release, "--namespace", args.namespace,
                              "--output", "json", env=HELM_ENV).stdout
        changed = dropped_values(json.loads(current or "{}") or {}, files)
        if changed:
            log("the release has values that this upgrade changes (set with helm by hand?); keep them in a values "
                "file of yours, make dev DEV_VALUES=FILE:\n  " + "\n  ".join(changed))
    log(f"helm upgrade --install {args.release} {rel(CHART)} " + " ".join(f"--values {display(f)}" for f in files))
    cluster.run(args.helm, "upgrade", "--install", args.release, str(CHART), "--namespace", args.namespace,
                "--create-namespace", *(a for f in files for a in ("--values", str(f))), timeout=300, env=HELM_ENV)
    selector = f"app.kubernetes.io/component=controller,app.kubernetes.io/instance={args.release}"
    old: list[str] = []
    if there:
        old = [p["metadata"]["name"] for p in cluster.api.list("Pod", args.namespace, label_selector=selector)]
        for name in old:
            cluster.api.delete("Pod", args.namespace, name)
        if old:
            log(f"restarting the controller with the working tree as it is now (deleted pod {', '.join(old)})")

    create_absent(cluster, [BACKENDS, *QUICKSTART])

    end = time.monotonic() + args.timeout
    # the controller of this working tree: a pod that is Ready (its caches are synced)
    while not any(ready(p) and p["metadata"]["name"] not in old
                  for p in cluster.api.list("Pod", args.namespace, label_selector=selector)):
        if time.monotonic() > end:
            log(f"no controller pod is Ready after {args.timeout:.0f} s: hack/kube/exec.sh kubectl -n {args.namespace} "
                f"describe pods -l {selector}; the pod runner's log: {rel(cluster.dir / 'logs' / 'dev-podrunner.log')}")
            return 1
        time.sleep(1)
    address = ""
    while not (address := programmed_address(gateway(cluster))):
        if time.monotonic() > end:
            log(f"the Gateway apps/web is not Programmed after {args.timeout:.0f} s; the controller's log: "
                f"hack/kube/exec.sh kubectl -n {args.namespace} logs deploy/{args.release}-controller")
            print(cluster.kubectl("get", "pods", "-A", "-o", "wide").stdout, end="", file=sys.stderr)
            return 1
        time.sleep(1)
    (work / "gateway-address").write_text(address)

    http = requests.Session()
    http.trust_env = False
    url = f"http://{address}/api/items"
    answer = None
    while time.monotonic() < end:
        try:
            answer = http.get(url, headers={"Host": HOST}, timeout=5)
            if answer.status_code == 200:
                break
        except requests.RequestException as e:
            answer = e
        time.sleep(1)
    print(cluster.kubectl("get", "gatewayclass,gateway,httproute", "-A").stdout, end="")
    problems = [p for gw in cluster.api.list("Gateway") for p in listener_problems(gw)]
    if problems:
        log(f"{len(problems)} listener(s) not in their good state (kubectl describe gateway; the Gateway's "
            "InvalidListener Events):\n  " + "\n  ".join(problems))
    if isinstance(answer, requests.Response) and answer.status_code == 200:
        try:
            pod = answer.json().get("pod", "?")
        except ValueError:
            pod = "?"
        log(f"curl -H 'Host: {HOST}' {url}: 200 from pod {pod}")
        return 0
    shown = f"{answer.status_code} {answer.text[:300]}" if isinstance(answer, requests.Response) else answer
    log(f"curl -H 'Host: {HOST}' {url} did not answer 200 within {args.timeout:.0f} s: {shown}")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
