"""x-request-id: the client's own echoed, or a new one, on every kind of response."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import httpx
import pytest
import respx

from tests.helpers.mock_upstream import openai_frames
from tests.helpers.upstream_answers import openai_text_chunks, openai_tool_completion
from tests.integration.conftest import OPENAI_URL, chat, sse_response

pytestmark = pytest.mark.anyio


class Scenario(NamedTuple):
    upstream: Callable[[respx.Router], object]
    method: str
    path: str
    body: Any
    headers: dict[str, str]
    status: int


def _nothing(upstream: respx.Router) -> None:
    return None


def _answers(upstream: respx.Router) -> None:
    upstream.post(OPENAI_URL).mock(side_effect=lambda _: httpx.Response(200, json=_COMPLETION))


def _streams(upstream: respx.Router) -> None:
    frames = openai_frames(openai_text_chunks("Hi"))
    upstream.post(OPENAI_URL).mock(side_effect=lambda _: sse_response(frames))


def _fails(upstream: respx.Router) -> None:
    upstream.post(OPENAI_URL).respond(500, json={"error": {"message": "upstream broke"}})


def _crashes(upstream: respx.Router) -> None:
    upstream.post(OPENAI_URL).mock(side_effect=RuntimeError("bug inside the proxy"))


_COMPLETION = openai_tool_completion()
_CHAT = "/v1/chat/completions"
SCENARIOS = {
    "ok": Scenario(_answers, "POST", _CHAT, chat(), {}, 200),
    "stream": Scenario(_streams, "POST", _CHAT, chat(stream=True), {}, 200),
    "models": Scenario(_nothing, "GET", "/v1/models", None, {}, 200),
    "health": Scenario(_nothing, "GET", "/health", None, {}, 200),
    "bad-request": Scenario(_nothing, "POST", _CHAT, {"model": "mini"}, {}, 400),
    "wrong-key": Scenario(_nothing, "POST", _CHAT, chat(), {"authorization": "Bearer no"}, 401),
    "unknown-model": Scenario(_nothing, "POST", _CHAT, chat("nope"), {}, 404),
    "unknown-path": Scenario(_nothing, "GET", "/v1/nowhere", None, {}, 404),
    "upstream-5xx": Scenario(_fails, "POST", _CHAT, chat(), {}, 502),
    "internal": Scenario(_crashes, "POST", _CHAT, chat(), {}, 500),
}


async def _send(
    proxy: httpx.AsyncClient, upstream: respx.Router, scenario: Scenario, request_id: str | None
) -> httpx.Response:
    scenario.upstream(upstream)
    headers = dict(scenario.headers)
    if request_id is not None:
        headers["x-request-id"] = request_id
    response = await proxy.request(
        scenario.method, scenario.path, json=scenario.body, headers=headers
    )
    assert response.status_code == scenario.status, response.text
    return response


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
async def test_client_request_id_is_echoed(
    proxy: httpx.AsyncClient, upstream: respx.Router, scenario: Scenario
) -> None:
    response = await _send(proxy, upstream, scenario, "client-req-42")

    assert response.headers.get_list("x-request-id") == ["client-req-42"]


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
async def test_request_id_is_generated_when_not_sent(
    proxy: httpx.AsyncClient, upstream: respx.Router, scenario: Scenario
) -> None:
    first = await _send(proxy, upstream, scenario, None)
    second = await _send(proxy, upstream, scenario, None)

    ids = first.headers.get_list("x-request-id") + second.headers.get_list("x-request-id")
    assert len(ids) == 2
    assert all(ids)
    assert ids[0] != ids[1]
