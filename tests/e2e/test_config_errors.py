"""`python -m app --config X` with a config that cannot be loaded: a non-zero exit and one line
on stderr naming the file and the offending key, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import run_app

pytestmark = pytest.mark.e2e

GOOD_PROVIDER = "providers:\n  oa: {kind: openai, base_url: http://127.0.0.1:9/v1}\n"

BAD_CONFIGS: dict[str, tuple[str, str]] = {
    "unknown-kind": ("providers:\n  oa: {kind: cohere}\n", "providers.oa.kind"),
    "unknown-top-level-key": (GOOD_PROVIDER + "telemetry: true\n", "telemetry"),
    "unknown-provider-key": (
        "providers:\n  oa: {kind: openai, apikey: x}\n",
        "providers.oa.apikey",
    ),
    "model-with-unknown-provider": (
        GOOD_PROVIDER + "models:\n  - {name: m, provider: nowhere, model: x}\n",
        "models[0].provider",
    ),
    "model-without-name": (
        GOOD_PROVIDER + "models:\n  - {provider: oa, model: x}\n",
        "models[0].name",
    ),
    "negative-timeout": (
        "providers:\n  oa: {kind: openai, timeout: -1}\n",
        "providers.oa.timeout",
    ),
    "top-level-list": ("- providers\n", ""),
    "invalid-yaml": ("providers:\n  oa: {kind: openai\n", ""),
}


def _assert_one_line_error(stderr: str, *mentions: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got:\n{stderr}"
    assert "Traceback" not in stderr
    for mention in mentions:
        assert mention in lines[0]


@pytest.mark.parametrize(("config_yaml", "key"), BAD_CONFIGS.values(), ids=BAD_CONFIGS.keys())
def test_bad_config_stops_startup_with_one_line(tmp_path: Path, config_yaml: str, key: str) -> None:
    path = tmp_path / "bad-config.yaml"
    path.write_text(config_yaml)

    result = run_app("--config", str(path), "--host", "127.0.0.1", "--port", "0")

    assert result.returncode != 0
    _assert_one_line_error(result.stderr, str(path), key)


def test_missing_config_file_stops_startup_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "does-not-exist.yaml"

    result = run_app("--config", str(path), "--host", "127.0.0.1", "--port", "0")

    assert result.returncode != 0
    _assert_one_line_error(result.stderr, str(path))


def test_config_path_defaults_to_the_environment_variable(tmp_path: Path) -> None:
    path = tmp_path / "from-env.yaml"
    path.write_text("bogus: 1\n")

    result = run_app("--host", "127.0.0.1", "--port", "0", env={"TOOLRELAY_CONFIG": str(path)})

    assert result.returncode != 0
    _assert_one_line_error(result.stderr, str(path), "bogus")


PRICE_FILES: dict[str, str | None] = {
    "missing": None,
    "not-json": "{this is not json",
    "not-an-object": "[1, 2]",
}


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("content", PRICE_FILES.values(), ids=PRICE_FILES.keys())
def test_a_bad_price_file_stops_startup_with_one_line(
    tmp_path: Path, content: str | None, workers: str
) -> None:
    """CONTRACT ("Spend"): a price file missing or not JSON is a config error like any other:
    one line naming the setting and the file, exit status 2 (it was a traceback, status 3).
    The relative path is read from the config file's folder, not the working directory."""
    if content is not None:
        (tmp_path / "prices.json").write_text(content)
    path = tmp_path / "config.yaml"
    store = "  store: {kind: redis, url: 'redis://127.0.0.1:9/0'}\n"  # never reached
    path.write_text(GOOD_PROVIDER + "server:\n  spend: {prices: prices.json}\n" + store)

    result = run_app("--config", str(path), "--port", "0", "--workers", workers)

    assert result.returncode == 2
    _assert_one_line_error(result.stderr, "server.spend.prices", str(tmp_path / "prices.json"))


def test_eval_with_a_missing_price_file_stops_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "providers:\n  demo: {kind: demo}\nmodels:\n  - {name: d, provider: demo, model: x}\n"
        "server:\n  spend: {prices: prices.json}\n"
    )

    result = run_app("eval", "--config", str(path), "--models", "d")

    assert result.returncode == 2
    _assert_one_line_error(result.stderr, "server.spend.prices", str(tmp_path / "prices.json"))
