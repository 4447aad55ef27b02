"""make dev, the part inside the cluster's network (hack/kube/dev.sh runs it through exec.sh).

The chart installed (or upgraded) with Helm, its controller Deployment at 0 replicas; the
data-plane pods served by the stub data plane (tests/support/kubelet.py: there is no kubelet);
the controller of this working tree started as the chart's ServiceAccount (TokenRequest);
examples/quickstart applied; the statuses shown.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.chartrelease import CHART, HELM_ENV, ChartRelease
from tests.support.kubecluster import REPO, LocalCluster

LB_IP = "198.18.250.1"


def log(msg: str) -> None:
    print(f"make dev: {msg}", file=sys.stderr, flush=True)


def stop_pid(pid_file: Path) -> None:
    """Stop what an earlier make dev started (SIGTERM, then SIGKILL)."""
    try:
        pid = int(pid_file.read_text())
    except (FileNotFoundError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(150):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", required=True)
    ap.add_argument("--release", default="titanium-gateway")
    ap.add_argument("--namespace", default="gateway-system")
    ap.add_argument("--timeout", type=float, default=180)
    args = ap.parse_args()
    cluster = LocalCluster(os.environ["TITANIUM_KUBE_DIR"])
    run_dir, logs = cluster.dir / "run", cluster.dir / "logs"
    work = cluster.dir / "dev"
    work.mkdir(exist_ok=True)

    log(f"helm upgrade --install {args.release} {CHART.relative_to(REPO)} (controller.replicas=0: it runs locally)")
    cluster.run(args.helm, "upgrade", "--install", args.release, str(CHART), "--namespace", args.namespace,
                "--create-namespace", "--set", "controller.replicas=0", timeout=300, env=HELM_ENV)
    release = ChartRelease.attach(cluster, args.helm, args.release, args.namespace, workdir=work)
    rel = release.rel

    # the data-plane pods: the stub data plane stands in for the kubelet and the Titanium image
    stop_pid(run_dir / "dev-kubelet.pid")
    with open(logs / "dev-kubelet.log", "ab") as out, cluster.inside():
        kubelet = subprocess.Popen([sys.executable, "-m", "tests.support.kubelet", "--cluster-dir", str(cluster.dir),
                                    "--namespace", args.namespace, "--release", args.release, "--helm", args.helm],
                                   cwd=REPO, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    (run_dir / "dev-kubelet.pid").write_text(str(kubelet.pid))
    # what a cloud load balancer would write on the data-plane Service
    cluster.api.patch("Service", args.namespace, rel.data_plane,
                      {"status": {"loadBalancer": {"ingress": [{"ip": LB_IP}]}}}, subresource="status")

    # the controller of this working tree, as the chart's ServiceAccount
    stop_pid(run_dir / "dev-controller.pid")
    ctrl = release.start_controller("titanium-gateway-dev", health_port=8081, log_path=logs / "dev-controller.log",
                                    detach=True, token_seconds=86400)
    (run_dir / "dev-controller.pid").write_text(str(ctrl.pid))
    log(f"controller running as {release.service_account_user} (pid {ctrl.pid}, log {logs / 'dev-controller.log'})")

    files = sorted(p for p in (REPO / "examples" / "quickstart").glob("*.yaml") if not p.name.startswith("00-"))
    log("kubectl apply " + " ".join(str(f.relative_to(REPO)) for f in files) + " (00-*: what the chart installs)")
    apply_args = [a for f in files for a in ("-f", str(f))]
    print(cluster.kubectl("apply", *apply_args).stdout, end="")

    end = time.monotonic() + args.timeout
    while time.monotonic() < end:
        p = cluster.kubectl("get", "gateway", "-n", "apps", "web", "-o",
                            "jsonpath={.status.conditions[?(@.type=='Programmed')].status}", check=False)
        if p.stdout.strip() == "True":
            break
        if not ctrl.alive():
            log(f"the controller exited; its log:\n{ctrl.log()[-4000:]}")
            return 1
        time.sleep(1)
    else:
        log(f"the Gateway is not Programmed after {args.timeout:.0f} s (see {logs / 'dev-controller.log'})")
    print(cluster.kubectl("get", "gatewayclass,gateway,httproute", "-A").stdout, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
