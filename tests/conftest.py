"""Shared pytest options."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-transcripts",
        action="store_true",
        default=False,
        help="rewrite the transcripts' expected files from the translators' output (review them!)",
    )


@pytest.fixture
def update_transcripts(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-transcripts"))
