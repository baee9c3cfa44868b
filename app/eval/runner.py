"""Runs a suite against models through the server's own routing, translation and tool-call
audit (app.routing.dispatch.answer on a ProxyState built as the server builds it), with at
most `concurrency` requests in flight and progress reported after each one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from app.config import Config
from app.errors import ProxyError
from app.eval.scoring import CaseResult, score
from app.eval.suite import Case, Suite
from app.main import build_state
from app.openai_types import parse_chat_request
from app.request_record import RequestRecord
from app.routing.dispatch import answer
from app.state import ProxyState


@dataclass(frozen=True, slots=True)
class Job:
    model: str
    case: Case
    repeat: int


Progress = Callable[[CaseResult], None]


async def run_suite(
    config: Config,
    suite: Suite,
    models: list[str],
    *,
    repeat: int = 1,
    concurrency: int = 4,
    progress: Progress | None = None,
) -> list[CaseResult]:
    """Every case of the suite for every model, `repeat` times; results in job order."""
    proxy = build_state(config)
    limit = asyncio.Semaphore(concurrency)
    jobs = [Job(m, case, r) for m in models for r in range(repeat) for case in suite.cases]

    async def run(job: Job) -> CaseResult:
        async with limit:
            result = await _one(proxy, suite, job)
        if progress is not None:
            progress(result)
        return result

    try:
        return list(await asyncio.gather(*(run(job) for job in jobs)))
    finally:
        await proxy.aclose()


async def _one(proxy: ProxyState, suite: Suite, job: Job) -> CaseResult:
    body = suite.request_body(job.case, job.model)
    record = RequestRecord(f"eval-{job.model}-{job.case.id}-{job.repeat}", "POST", "eval")
    started = time.perf_counter()
    try:
        result = await answer(proxy, parse_chat_request(orjson.dumps(body)), record)
    except ProxyError as failure:
        elapsed = (time.perf_counter() - started) * 1000
        code = failure.code or str(failure.status)
        return score(job.case, job.model, elapsed, None, None, error=code)
    finally:
        if proxy.spend is not None:  # a budget's reservation is settled as a server's is
            await proxy.spend.settle(record)
    elapsed = (time.perf_counter() - started) * 1000
    scored = score(job.case, job.model, elapsed, result.completion, result.audit)
    scored.cost_usd = record.cost_usd
    return scored
