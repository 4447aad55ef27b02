"""The real command, ``titanium-gateway controller``, as a separate process: JSON logs without
secrets, Programmed end to end, SIGTERM -> exit 0 with the Lease released."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import yaml

from tests.integration.conftest import Env


def test_cli_process_sigterm_releases_lease_and_logs_no_secrets(env: Env, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(env.server.kubeconfig()))
    env.service("api")
    env.gateway()
    env.route()
    proc_env = {k: v for k, v in os.environ.items() if not k.startswith("TITANIUM_GATEWAY_")}
    proc_env.update({"TITANIUM_ADMIN_TOKEN": env.rel.token, "TITANIUM_GATEWAY_KUBECONFIG": str(kubeconfig),
                     "TITANIUM_GATEWAY_MIN_RECONCILE_MS": "100", "POD_NAME": "ctrl-proc"})
    args = [sys.executable, "-m", "titanium_gateway", "controller", *env.rel.controller_args(),
            f"--admin-port={env.fleet.port}", "--health-port=0", "--verbose",
            "--lease-duration=4", "--renew-deadline=3", "--retry-period=0.5"]
    proc = subprocess.Popen(args, env=proc_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        env.wait_programmed(timeout=30)
        assert env.must("Lease", env.rel.namespace, env.rel.lease)["spec"]["holderIdentity"] == "ctrl-proc"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=5)
    assert proc.returncode == 0, err[-3000:]
    assert env.must("Lease", env.rel.namespace, env.rel.lease)["spec"].get("holderIdentity", "") == ""
    lines = [json.loads(x) for x in err.splitlines() if x.strip()]
    assert lines and all({"ts", "level", "logger", "msg"} <= set(x) for x in lines)
    assert any(x["msg"] == "config written" and x.get("config_hash") for x in lines)
    assert env.rel.token not in err
    assert "PRIVATE KEY" not in err


def test_cli_rejects_unknown_env_var_with_exit_2() -> None:
    env = dict(os.environ, TITANIUM_GATEWAY_DATA_PLANE_SERVICE="x", TITANIUM_GATEWAY_NOPE="1")
    p = subprocess.run([sys.executable, "-m", "titanium_gateway", "controller"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "TITANIUM_GATEWAY_NOPE" in p.stderr
