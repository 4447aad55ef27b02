"""make dev, the part inside the cluster's network (hack/kube/dev.sh runs it through exec.sh, once
the pod runner serves the cluster's pods).

1. ``helm upgrade --install`` of the chart with hack/kube/dev-values.yaml: the controller of this
   working tree and the reference data plane as the chart's own pods (the pod runner runs them);
   on a release that was there already, the controller's pods are deleted so that the new ones
   run the working tree as it is now (the data plane keeps running);
2. the quick start's backends (examples/quickstart-backends/), its Gateway and HTTPRoute
   (examples/quickstart/10-*, 20-*) and the GRPCRoute of examples/grpc/ created where absent: an
   object that exists is left as it is, so a rerun never undoes your edits;
3. waits until the Gateway is Programmed and a request through its address answers, shows it,
   and writes the address to DIR/dev/gateway-address (for dev.sh's closing lines).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import requests
import yaml

from tests.support.chartrelease import CHART, HELM_ENV
from tests.support.kubecluster import REPO, LocalCluster

VALUES = REPO / "hack" / "kube" / "dev-values.yaml"
QUICKSTART = [REPO / "examples" / "quickstart" / "10-gateway.yaml", REPO / "examples" / "quickstart" / "20-httproute.yaml",
              REPO / "examples" / "grpc" / "grpcroute.yaml"]
BACKENDS = REPO / "examples" / "quickstart-backends" / "backends.yaml"
HOST = "shop.example.com"


def log(msg: str) -> None:
    print(f"make dev: {msg}", file=sys.stderr, flush=True)


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", required=True)
    ap.add_argument("--release", default="titanium-gateway")
    ap.add_argument("--namespace", default="gateway-system")
    ap.add_argument("--timeout", type=float, default=240)
    args = ap.parse_args()
    cluster = LocalCluster(os.environ["TITANIUM_KUBE_DIR"])
    work = cluster.dir / "dev"
    work.mkdir(exist_ok=True)
    (work / "gateway-address").unlink(missing_ok=True)

    there = cluster.run(args.helm, "status", args.release, "--namespace", args.namespace, check=False,
                        env=HELM_ENV).returncode == 0
    log(f"helm upgrade --install {args.release} {rel(CHART)} --values {rel(VALUES)}")
    cluster.run(args.helm, "upgrade", "--install", args.release, str(CHART), "--namespace", args.namespace,
                "--create-namespace", "--values", str(VALUES), timeout=300, env=HELM_ENV)
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
