"""`log_request` writes the request line straight to the proxy's own handler's stream (issue
40): the line must be the one the logging module would have written, in both formats, and
anyone else listening (a second handler, a filter) must still get the record."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Callable, Iterator

import pytest

from app.ops import logs
from app.ops.logs import FIELDS, FieldsLine, configure_logging, log_request
from app.server_config import LogConfig

FIELDS_OF_A_LINE = {
    "request_id": "3f2a",
    "method": "POST",
    "path": "/v1/chat/completions",
    "status": 200,
    "key": "team-a",
    "model": "gpt",
    "provider": "openai",
    "deployment": None,
    "duration_ms": 12.5,
    "tried": ["openai/gpt-4o", "azure/gpt-4o"],
    "attempts": 2,
}


@pytest.fixture
def configured() -> Iterator[Callable[[LogConfig], io.StringIO]]:
    """Logging configured as the proxy does, its handler writing to a stream standing in for
    stderr; the root logger put back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level

    def configure(config: LogConfig) -> io.StringIO:
        configure_logging(config)
        stream = io.StringIO()
        handler = root.handlers[0]
        assert isinstance(handler, logging.StreamHandler)
        handler.setStream(stream)
        return stream

    yield configure
    root.handlers[:] = handlers
    root.setLevel(level)
    logs._REQUEST_LINES.handler = None


def _not_through_logging(*args: object, **kwargs: object) -> logging.LogRecord:
    raise AssertionError("the line went through the logging module")


def _as_logging_writes_it(logger: logging.Logger) -> str:
    """The line the logging module writes for the same record, through the same handler."""
    message = FieldsLine(dict(FIELDS_OF_A_LINE))
    record = logging.LogRecord(logger.name, logging.INFO, "", 0, "%s", (message,), None)
    setattr(record, FIELDS, dict(FIELDS_OF_A_LINE))
    handler = logging.getLogger().handlers[0]
    return handler.format(record) + "\n"


def test_a_text_line_is_the_one_logging_writes(
    configured: Callable[[LogConfig], io.StringIO],
) -> None:
    stderr = configured(LogConfig(format="text"))
    logger = logging.getLogger("toolrelay.http")
    log_request(logger, dict(FIELDS_OF_A_LINE))
    assert stderr.getvalue() == _as_logging_writes_it(logger)
    assert stderr.getvalue().startswith("INFO toolrelay.http: request_id=3f2a method=POST")
    assert "tried=openai/gpt-4o,azure/gpt-4o" in stderr.getvalue()
    assert "deployment" not in stderr.getvalue()


def test_a_json_line_is_the_one_logging_writes(
    configured: Callable[[LogConfig], io.StringIO],
) -> None:
    stderr = configured(LogConfig(format="json"))
    logger = logging.getLogger("toolrelay.http")
    log_request(logger, dict(FIELDS_OF_A_LINE))
    written = json.loads(stderr.getvalue())
    expected = json.loads(_as_logging_writes_it(logger))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", written.pop("time"))
    expected.pop("time")
    assert written == expected
    assert list(written)[:3] == ["level", "logger", "message"]
    assert written["message"] == "request"
    assert written["tried"] == FIELDS_OF_A_LINE["tried"]
    assert stderr.getvalue().count("\n") == 1


def test_another_listener_gets_the_record(configured: Callable[[LogConfig], io.StringIO]) -> None:
    stderr = configured(LogConfig(format="text"))
    logger = logging.getLogger("toolrelay.http")
    heard: list[logging.LogRecord] = []

    class Listener(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            heard.append(record)

    listener = Listener()
    logging.getLogger().addHandler(listener)
    log_request(logger, dict(FIELDS_OF_A_LINE))
    assert [getattr(record, FIELDS)["key"] for record in heard] == ["team-a"]
    assert stderr.getvalue() == _as_logging_writes_it(logger)


def test_a_parent_logger_with_a_handler_gets_the_record(
    configured: Callable[[LogConfig], io.StringIO],
) -> None:
    stderr = configured(LogConfig(format="text"))
    parent = logging.getLogger("toolrelay")
    heard = io.StringIO()
    listener = logging.StreamHandler(heard)
    parent.addHandler(listener)
    try:
        log_request(logging.getLogger("toolrelay.http"), dict(FIELDS_OF_A_LINE))
    finally:
        parent.removeHandler(listener)
    assert "request_id=3f2a" in heard.getvalue()
    assert stderr.getvalue() == _as_logging_writes_it(logging.getLogger("toolrelay.http"))


def test_a_closed_stream_goes_through_logging(
    configured: Callable[[LogConfig], io.StringIO],
) -> None:
    """The logging module's own error handling (a message on stderr, no exception) applies."""
    stderr = configured(LogConfig(format="text"))
    stderr.close()
    logging.raiseExceptions = False
    try:
        log_request(logging.getLogger("toolrelay.http"), dict(FIELDS_OF_A_LINE))
    finally:
        logging.raiseExceptions = True
