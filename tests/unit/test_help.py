"""`python -m app --help` and `python -m app eval --help` as a user reads them (CONTRACT.md,
"Smaller rules (turn five)"): no source file named, and every option's default shown."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app import __main__ as entry
from app.eval import command

REPO = Path(__file__).parents[2]
HELPS = {"serve": ["--help"], "eval": ["eval", "--help"]}


def help_text(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "app", *args], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("args", HELPS.values(), ids=HELPS.keys())
def test_help_names_no_source_file(args: list[str]) -> None:
    text = help_text(*args)

    assert not re.search(r"[\w/]+\.py\b", text), text
    assert "app/" not in text


def test_eval_help_describes_config_and_shows_defaults() -> None:
    text = " ".join(help_text("eval", "--help").split())

    assert re.search(r"--config CONFIG path to config\.yaml \(default: \$TOOLRELAY_CONFIG", text)
    assert re.search(r"--repeat N .*\(default: 1\)", text), text
    assert re.search(r"--concurrency N .*\(default: 4\)", text), text


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.dest != "help"]


PARSERS = {"serve": entry, "eval": command}


@pytest.mark.parametrize("module", PARSERS.values(), ids=PARSERS.keys())
def test_every_option_shows_its_default_or_that_it_is_required(module: object) -> None:
    parser: argparse.ArgumentParser = module.build_parser()  # type: ignore[attr-defined]
    for action in options(parser):
        shown = (action.help or "") % {"default": action.default, "prog": parser.prog}
        assert action.required or "default" in shown, action.option_strings
