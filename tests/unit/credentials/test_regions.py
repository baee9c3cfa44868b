"""A Bedrock provider's `region` checked against botocore's own endpoint data at start-up: a
typo (`us-eats-1`) is one warning naming the provider, the region and the closest known
ones, instead of every request failing to connect to a host that does not exist."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.config import parse_config
from app.credentials.regions import warn_unknown_regions
from app.main import create_app

REPO = Path(__file__).parents[3]


def config(**bedrock: Any) -> Any:
    providers = {"aws": {"kind": "bedrock", "api_key": "k", **bedrock}, "oa": {"kind": "openai"}}
    return parse_config({"providers": providers}, "c.yaml", {})


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_an_unknown_region_is_one_warning_naming_provider_region_and_the_closest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        warn_unknown_regions(config(region="us-eats-1"))

    [line] = warnings(caplog)
    assert "'aws'" in line
    assert "'us-eats-1'" in line
    assert "us-east-1" in line


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-3", "us-gov-west-1"])
def test_a_known_region_is_not_warned_about(caplog: pytest.LogCaptureFixture, region: str) -> None:
    with caplog.at_level(logging.WARNING):
        warn_unknown_regions(config(region=region))

    assert warnings(caplog) == []


def test_an_explicit_base_url_skips_the_check(caplog: pytest.LogCaptureFixture) -> None:
    """A VPC endpoint or a proxy: the region then only signs, and may be anything AWS's
    signer accepts."""
    with caplog.at_level(logging.WARNING):
        warn_unknown_regions(config(region="my-lab-1", base_url="http://127.0.0.1:9"))

    assert warnings(caplog) == []


def test_the_server_warns_at_start_up(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), TestClient(create_app(config(region="us-eats-1"))):
        pass

    assert any("'us-eats-1'" in line for line in warnings(caplog))


def test_botocore_is_not_imported_without_a_bedrock_provider() -> None:
    """Start-up without Bedrock never pays for botocore's import and endpoint data."""
    code = (
        "import sys\n"
        "from app.config import parse_config\n"
        "from app.credentials.regions import warn_unknown_regions\n"
        "warn_unknown_regions(parse_config({'providers': {'oa': {'kind': 'openai'}}}, 'c', {}))\n"
        "assert 'botocore' not in sys.modules, 'botocore imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
