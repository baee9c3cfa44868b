"""`python -m app eval` as a user runs it, offline against the demo models: exit codes, the
table, the JSON it writes (the three models differ as they should), and the HTML page opened
in headless Chromium, screenshotted and checked as a person would (not blank, models named)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).parents[2]
MODELS = "demo,demo-text,demo-sloppy"


def run_eval(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "app", "eval", "--config", str(REPO / "config.yaml"), *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, check=False, cwd=REPO
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    folder = tmp_path_factory.mktemp("eval")
    json_path, html_path = folder / "eval.json", folder / "eval.html"
    done = run_eval(
        "--models", MODELS, "--repeat", "2", "--json", str(json_path), "--html", str(html_path)
    )
    assert done.returncode == 0, done.stderr
    return json_path, html_path, done.stdout


def test_the_table_names_every_model(report: tuple[Path, Path, str]) -> None:
    _, _, table = report
    for model in MODELS.split(","):
        assert model in table
    assert "structured" in table


def test_the_json_shows_the_three_models_differ(report: tuple[Path, Path, str]) -> None:
    json_path, _, _ = report
    models: dict[str, Any] = {m["model"]: m for m in json.loads(json_path.read_text())["models"]}
    assert list(models) == MODELS.split(",")
    demo, text, sloppy = models["demo"], models["demo-text"], models["demo-sloppy"]
    assert demo["cases"] == 16  # 8 cases, twice
    assert (demo["structured_rate"], demo["recovered_rate"], demo["valid_rate"]) == (1.0, 0.0, 1.0)
    assert (text["structured_rate"], text["recovered_rate"], text["valid_rate"]) == (0.0, 1.0, 1.0)
    assert 0 < sloppy["recovered_rate"] < 1
    assert sloppy["valid_rate"] < 1
    assert sloppy["violations"]["missing_required"] > 0
    for summary in models.values():
        assert set(summary["latency_ms"]) == {"p50", "p95"}
        assert summary["tokens"]["prompt"] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--models", "demo,gpt-9"], "not configured"),
        (["--models", "demo", "--suite", "/nonexistent/suite.yaml"], "cannot read"),
        (["--models", "demo", "--repeat", "0"], "at least 1"),
        (["--models", "demo", "--config", "/nonexistent.yaml"], "cannot read"),
    ],
)
def test_a_bad_argument_exits_2_with_one_clear_line(args: list[str], message: str) -> None:
    done = run_eval(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def png_colours(png: bytes) -> int:
    """How many distinct byte values the decompressed image data holds: a blank page is a few
    (white, its filter bytes); charts in several colours, text and lines are many."""
    position, data = 8, b""
    while position < len(png):
        length = int.from_bytes(png[position : position + 4], "big")
        kind = png[position + 4 : position + 8]
        if kind == b"IDAT":
            data += png[position + 8 : position + 8 + length]
        position += 12 + length
    return len(set(zlib.decompress(data)))


@pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="Debian's chromium is not installed (.ci/run installs it)",
)
def test_the_html_page_renders_its_charts_in_a_real_browser(
    report: tuple[Path, Path, str], tmp_path: Path
) -> None:
    _, html_path, _ = report
    screenshot = tmp_path / "eval.png"
    browser = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    subprocess.run(
        [*browser, "--window-size=1000,1250", f"--screenshot={screenshot}", html_path.as_uri()],
        capture_output=True,
        timeout=90,
        check=True,
    )
    assert png_colours(screenshot.read_bytes()) > 64
    dom = subprocess.run(
        [*browser, "--dump-dom", html_path.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    ).stdout
    assert dom.count("<svg") == 3
    for model in MODELS.split(","):
        assert f">{model}</text>" in dom  # each chart's legend names it


def test_deployments_adds_a_row_per_deployment(tmp_path: Path) -> None:
    """`--deployments`: each host of a model run on its own, named as logs and metrics name
    it; the good host and the sloppy one come apart."""
    config = tmp_path / "config.yaml"
    config.write_text(
        """providers:
  demo: {kind: demo}
models:
  - name: mixed
    deployments: [{provider: demo, model: demo}, {provider: demo, model: demo-sloppy}]
    tool_calls: {recover: auto, on_invalid: fallback, min_valid_rate: 0.9}
"""
    )
    json_path = tmp_path / "eval.json"
    command = [sys.executable, "-m", "app", "eval", "--config", str(config), "--models", "mixed"]
    done = subprocess.run(
        [*command, "--deployments", "--json", str(json_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert "tool calling per deployment" in done.stdout
    for key in ("mixed#0:demo/demo", "mixed#1:demo/demo-sloppy"):
        assert key in done.stdout
    document = json.loads(json_path.read_text())
    assert [m["model"] for m in document["models"]] == ["mixed"]
    rows = {row["deployment"]: row for row in document["deployments"]}
    assert list(rows) == ["mixed#0:demo/demo", "mixed#1:demo/demo-sloppy"]
    assert {row["model"] for row in rows.values()} == {"mixed"}
    assert set(rows["mixed#0:demo/demo"]) == set(document["models"][0]) | {"deployment"}
    assert rows["mixed#0:demo/demo"]["valid_rate"] == 1.0
    assert rows["mixed#1:demo/demo-sloppy"]["valid_rate"] < 1.0
