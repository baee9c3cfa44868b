"""Shared pytest options, and the real Redis the store tests use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.helpers.redis_server import RedisServer, shared_url, wait_until_up


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


@pytest.fixture(scope="session")
def redis_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The tests' Redis: `.ci/run`'s (TOOLRELAY_TEST_REDIS_URL), else a private one."""
    url = shared_url()
    if url is not None:
        wait_until_up(url)
        yield url
        return
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server_url: str) -> str:
    """The tests' Redis, emptied for this test."""
    client = redis.Redis.from_url(redis_server_url)
    try:
        client.flushdb()
    finally:
        client.close()
    return redis_server_url


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of this test's own, running; the test may stop and restart it."""
    server = RedisServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
