"""The chart's NOTES.txt (what `helm install` prints), rendered offline.

`helm template` never renders NOTES.txt and `helm install --dry-run` needs a cluster, so the test
renders a copy of the chart in which NOTES.txt is also an ordinary template; `--debug` prints
it although it is not YAML."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import CHART, NAMESPACE, RELEASE, Helm


@pytest.fixture(scope="module")
def notes_chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chart = tmp_path_factory.mktemp("notes") / "titanium-gateway"
    shutil.copytree(CHART, chart)
    shutil.copy(chart / "templates" / "NOTES.txt", chart / "templates" / "notes-rendered.yaml")
    return chart


def notes(helm: Helm, chart: Path, values: dict) -> str:
    proc = helm.run("template", RELEASE, str(chart), "--namespace", NAMESPACE, "--values",
                    helm.values_file(values), "--show-only", "templates/notes-rendered.yaml", "--debug",
                    check=False)
    text = proc.stdout + proc.stderr
    marker = "# Source: titanium-gateway/templates/notes-rendered.yaml\n"
    assert marker in text, text[-2000:]
    return text.split(marker, 1)[1]


def test_a_moving_data_plane_tag_is_warned(helm: Helm, notes_chart: Path) -> None:
    out = notes(helm, notes_chart, {})
    assert "WARNING: the data plane runs ghcr.io/justcoding121/titanium:latest, a tag that moves" in out
    assert "installed in namespace gateway-system" in out


@pytest.mark.parametrize("image", [{"tag": "7.1.0"}, {"digest": "sha256:" + "a" * 64}])
def test_a_pinned_data_plane_image_is_not_warned(helm: Helm, notes_chart: Path, image: dict) -> None:
    out = notes(helm, notes_chart, {"dataPlane": {"image": image}})
    assert "WARNING" not in out
    assert "installed in namespace gateway-system" in out
