"""Log output to standard error: JSON lines (one object per record, the request line's fields
at the top level) or text, at the configured level. A record that carries `fields` (the
request line) renders them; message content and keys never reach a record in the first
place (app/request_record.py)."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import orjson

from app.server_config import LogConfig

FIELDS = "fields"
"""The LogRecord attribute holding a request line's fields (`extra={"fields": ...}`)."""


class FieldsLine:
    """A request line's message as `key=value` pairs, rendered only if a handler formats it."""

    __slots__ = ("fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def __str__(self) -> str:
        return " ".join(
            f"{name}={','.join(value) if isinstance(value, list) else value}"
            for name, value in self.fields.items()
            if value is not None
        )


class JsonFormatter(logging.Formatter):
    """One JSON object per record. The timestamp's seconds are formatted once per second, not
    once per record (strftime is most of a small record's cost)."""

    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._stamp = ""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, FIELDS, None)
        line = self.head(record.created, record.levelname, record.name)
        if isinstance(fields, dict):
            line["message"] = fields.get("event", "request")  # a request line, or an event's
            line |= fields
        else:
            line["message"] = record.getMessage()
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line).decode()

    def head(self, created: float, level: str, logger_name: str) -> dict[str, Any]:
        """The keys every line starts with: time, level, logger."""
        second = int(created)
        if second != self._second:
            self._second = second
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        millis = int((created - second) * 1000)
        return {
            "time": f"{self._stamp}.{millis:03d}Z",
            "level": level.lower(),
            "logger": logger_name,
        }


TEXT_FORMAT = "%(levelname)s %(name)s: %(message)s"


class _RequestLines:
    """The proxy's own handler, for `log_request`'s direct write (None until logging is
    configured)."""

    handler: logging.StreamHandler[Any] | None = None


_REQUEST_LINES = _RequestLines()


def log_request(logger: logging.Logger, fields: dict[str, Any]) -> None:
    """A request line at INFO (the caller has checked the level), exactly as the logging
    module would write it through the handler configure_logging installed, written straight
    to that handler's stream: this is the one record every request makes, and the logging
    module's record, locks and formatter cost twice the line itself (bench/RESULTS.md, issue
    40). Whenever anyone else listens (another handler on the root, one on the logger, a
    filter: pytest's caplog, an embedding application), it goes through logging as usual."""
    handler = _REQUEST_LINES.handler
    if handler is None or not _only_our_handler(logger, handler):
        logger.info("%s", FieldsLine(fields), extra={FIELDS: fields})
        return
    formatter = handler.formatter
    if isinstance(formatter, JsonFormatter):
        line = formatter.head(time.time(), "INFO", logger.name)
        line["message"] = fields.get("event", "request")
        line |= fields
        text = orjson.dumps(line).decode()
    else:
        text = f"INFO {logger.name}: {FieldsLine(fields)}"
    try:
        with handler.lock:  # type: ignore[union-attr]  # set by Handler.__init__
            handler.stream.write(text + handler.terminator)
            handler.stream.flush()
    except (OSError, ValueError):  # a closed or broken stream: logging's own handling
        logger.info("%s", FieldsLine(fields), extra={FIELDS: fields})


def _only_our_handler(logger: logging.Logger, handler: logging.Handler) -> bool:
    """Whether logging would hand a record of `logger` to `handler` alone, unfiltered: no
    logger on the way to the root has a handler or a filter or stops propagation, and the
    root's one handler is ours."""
    node: logging.Logger | None = logger
    while node is not None and node is not logging.root:
        if node.handlers or node.filters or not node.propagate:
            return False
        node = node.parent
    root = logging.root
    if root.filters or handler.filters or len(root.handlers) != 1:
        return False
    return root.handlers[0] is handler


QUIET_LIBRARIES = ("botocore", "google.auth", "urllib3")
"""Libraries that log credentials at debug level (botocore writes SigV4's canonical request,
session token included): warnings only, whatever the proxy's level."""


def configure_logging(config: LogConfig, level: str | None = None) -> None:
    """The root logger's one handler, to stderr; `level` (the command line's) overrides the
    config's. Records skip what no format here shows (the caller's frame, thread and process
    names): the logging docs' own advice, and a third of a record's cost."""
    logging._srcfile = None  # no findCaller() per record
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stderr)
    if config.format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    _REQUEST_LINES.handler = handler
    root.setLevel((level or config.level).upper())
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)
