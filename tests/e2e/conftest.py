"""e2e tests need Docker (a reachable daemon) and pytest-kind; without them they are skipped
with the reason, so `make test` never fails on a machine without Docker. Run them with
`make e2e` (hack/e2e.sh builds the images first)."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=1)
def skip_reason() -> str | None:
    if shutil.which("docker") is None:
        return "e2e needs Docker: the docker client is not installed"
    try:
        proc = subprocess.run(["docker", "info"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"e2e needs Docker: docker info failed ({exc})"
    if proc.returncode != 0:
        return "e2e needs Docker: no Docker daemon is reachable (docker info failed)"
    if importlib.util.find_spec("pytest_kind") is None:
        return "e2e needs pytest-kind (pip install -e '.[e2e]')"
    if not os.environ.get("TITANIUM_E2E"):
        return "e2e needs the images hack/e2e.sh builds: run `make e2e`"
    return None


def pytest_collection_modifyitems(config, items):
    ours = [item for item in items if HERE in Path(str(item.fspath)).resolve().parents]
    if not ours:
        return
    reason = skip_reason()
    if reason:
        for item in ours:
            item.add_marker(pytest.mark.skip(reason=reason))
