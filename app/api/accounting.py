"""What happens once a request is over, whatever its outcome: its limits settled (places freed,
real tokens counted), its metrics, its one log line and its trace span. Called by
RequestMiddleware after the last byte went out."""

from __future__ import annotations

import logging

from app.ops.logs import log_request
from app.ops.metrics import NONE
from app.ops.usage import cache_counts
from app.request_record import RequestRecord
from app.state import ProxyState

logger = logging.getLogger("toolrelay.http")

API_PREFIX = "/v1/"
"""Only API requests are counted in the request metrics (not /health or /metrics scrapes)."""


async def request_ended(proxy: ProxyState, record: RequestRecord, elapsed: float) -> None:
    tokens = record.tokens()
    ops = proxy.ops
    if record.lease is not None:
        used = 0 if tokens is None else tokens[0] + tokens[1]
        await ops.admission.settle(record.lease, record.key, record.model, used)
    if proxy.spend is not None:
        await proxy.spend.settle(record)
    if record.path.startswith(API_PREFIX):
        _count(proxy, record, elapsed, tokens)
    if logger.isEnabledFor(logging.INFO):
        fields = record.fields(elapsed * 1000)
        for name in ("error_code", "error_param"):  # an upstream's may echo a secret back
            if fields.get(name) is not None:
                fields[name] = proxy.redact(fields[name])
        log_request(logger, fields)
    if record.capture is not None:
        proxy.console.log(record, elapsed)
    if record.span is not None:
        record.span.end(
            status=record.status,
            model=record.model,
            key=record.key.name,
            input_tokens=None if tokens is None else tokens[0],
            output_tokens=None if tokens is None else tokens[1],
        )


def _count(
    proxy: ProxyState, record: RequestRecord, elapsed: float, tokens: tuple[int, int] | None
) -> None:
    model, provider = record.model or NONE, record.provider or NONE
    series = proxy.ops.metrics.series(model, provider, record.key.name, str(record.status))
    series.requests.inc()
    if record.model is None:
        return
    series.duration.observe(elapsed)
    if record.overhead_ms is not None:
        series.overhead.observe(record.overhead_ms / 1000)
    if record.first_token_ms is not None:
        series.first_token.observe(record.first_token_ms / 1000)
    if tokens is not None:
        series.prompt_tokens.inc(tokens[0])
        series.completion_tokens.inc(tokens[1])
        read, written = cache_counts(record.usage)
        series.cache_read_tokens.inc(read)
        series.cache_write_tokens.inc(written)
    if record.cost_usd is not None:
        proxy.ops.metrics.count_spend(model, provider, record.key.name, record.cost_usd)
