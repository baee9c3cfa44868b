"""`usage.cost` read by the real SDKs from a proxy process (CONTRACT.md, "Spend: prices, cost,
budgets"): the openai SDK on chat (stream and not) and Responses, the anthropic SDK on the
Messages API (native to an anthropic upstream, stream and not). Expected costs worked out from
the formula: uncached prompt x input + cache reads x cache_read + cache writes x cache_write +
completion x output."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    GEMINI_KEY,
    PROVIDER_KEY,
    KindMocks,
    RunningProxy,
    keyed_config,
    run_proxy,
)
from tests.helpers.mock_anthropic import MockAnthropic
from tests.helpers.mock_upstream import MockUpstream, Reply, anthropic_frames, openai_frames

pytestmark = pytest.mark.e2e

# claude at 3 / 15 / 0.3 / 3.75 USD per million: 100 uncached, 2000 read, 400 written, 50 out:
# 0.0003 + 0.0006 + 0.0015 + 0.00075
ANTHROPIC_USAGE = {
    "input_tokens": 100,
    "cache_read_input_tokens": 2000,
    "cache_creation_input_tokens": 400,
    "output_tokens": 50,
}
CLAUDE_COST = 0.00315
# gpt at 0.15 / 0.6 / 0.075: 1000 prompt (200 cached), 100 completion:
# 800 x 0.15e-6 + 200 x 0.075e-6 + 100 x 0.6e-6 = 0.00012 + 0.000015 + 0.00006
OPENAI_USAGE = {
    "prompt_tokens": 1000,
    "completion_tokens": 100,
    "total_tokens": 1100,
    "prompt_tokens_details": {"cached_tokens": 200},
}
GPT_COST = 0.000195


@pytest.fixture(scope="module")
def proxy(
    kind_mocks: KindMocks, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    oa, gemini, an = kind_mocks
    config = keyed_config(
        f"""  oa: {{kind: openai, base_url: "{oa.base_url}/v1", api_key: {PROVIDER_KEY}}}
  gm: {{kind: gemini, base_url: "{gemini.base_url}", api_key: {GEMINI_KEY}}}
  an: {{kind: anthropic, base_url: "{an.base_url}", api_key: {ANTHROPIC_KEY}}}""",
        """  - {name: gpt, provider: oa, model: gpt-4o-mini,
     price: {input: 0.15, output: 0.6, cache_read: 0.075}}
  - {name: claude, provider: an, model: claude-sonnet-4-5,
     price: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("spend-cost")) as running:
        yield running


@pytest.fixture(scope="module")
def openai_client(proxy: RunningProxy) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=proxy.base_url, api_key=CLIENT_KEY, max_retries=0) as sdk:
        yield sdk


@pytest.fixture(scope="module")
def anthropic_client(proxy: RunningProxy) -> Iterator[anthropic.Anthropic]:
    base_url = f"http://127.0.0.1:{proxy.port}"
    with anthropic.Anthropic(base_url=base_url, api_key=CLIENT_KEY, max_retries=0) as sdk:
        yield sdk


def _completion() -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Sunny."},
                "finish_reason": "stop",
            }
        ],
        "usage": copy.deepcopy(OPENAI_USAGE),
    }


def _chunks() -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1}
    base["model"] = "gpt-4o-mini"
    delta = {"role": "assistant", "content": "Sunny."}
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**base, "choices": [], "usage": copy.deepcopy(OPENAI_USAGE)},
    ]


def _message() -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Sunny."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": dict(ANTHROPIC_USAGE),
    }


def _message_events() -> list[dict[str, Any]]:
    start = {**_message(), "content": [], "stop_reason": None}
    start["usage"] = {**ANTHROPIC_USAGE, "output_tokens": 1}
    text = {"type": "text_delta", "text": "Sunny."}
    return [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": text},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 50},
        },
        {"type": "message_stop"},
    ]


QUESTION: Any = [{"role": "user", "content": "Weather in Paris?"}]


def test_openai_sdk_reads_the_cost_of_a_chat_answer(
    oa: MockUpstream, openai_client: openai.OpenAI
) -> None:
    oa.add(Reply(json=_completion()))
    raw = openai_client.chat.completions.with_raw_response.create(model="gpt", messages=QUESTION)
    assert raw.headers["x-toolrelay-cost"] == "0.000195"
    usage = raw.parse().usage
    assert usage is not None
    assert usage.model_extra == {"cost": GPT_COST}
    assert getattr(usage, "cost") == GPT_COST  # noqa: B009 (an extra field, untyped)


def test_openai_sdk_reads_the_cost_in_the_streams_usage_chunk(
    oa: MockUpstream, openai_client: openai.OpenAI
) -> None:
    oa.add(Reply(frames=openai_frames(_chunks())))
    stream = openai_client.chat.completions.create(
        model="gpt", messages=QUESTION, stream=True, stream_options={"include_usage": True}
    )
    usages = [chunk.usage for chunk in stream if chunk.usage is not None]
    assert len(usages) == 1
    assert getattr(usages[0], "cost") == GPT_COST  # noqa: B009


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_openai_sdk_reads_the_cost_of_a_response(
    an: MockAnthropic, openai_client: openai.OpenAI, stream: bool
) -> None:
    if stream:
        an.answer(Reply(frames=anthropic_frames(_message_events())))
        with openai_client.responses.stream(model="claude", input="Weather in Paris?") as events:
            response = events.get_final_response()
    else:
        an.answer(Reply(json=_message()))
        response = openai_client.responses.create(model="claude", input="Weather in Paris?")
    assert response.usage is not None
    details = response.usage.input_tokens_details.to_dict()
    assert details == {"cached_tokens": 2000, "cache_write_tokens": 400}
    assert getattr(response.usage, "cost") == CLAUDE_COST  # noqa: B009


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_anthropic_sdk_reads_the_cost_of_a_message(
    an: MockAnthropic, anthropic_client: anthropic.Anthropic, stream: bool
) -> None:
    fields: Any = {"model": "claude", "max_tokens": 100, "messages": QUESTION}
    if stream:
        an.answer(Reply(frames=anthropic_frames(_message_events())))
        with anthropic_client.messages.stream(**fields) as events:
            deltas = [e for e in events if e.type == "message_delta"]
            final = events.get_final_message()
        assert getattr(deltas[0].usage, "cost") == CLAUDE_COST  # noqa: B009
        assert final.usage.cache_creation_input_tokens == 400
    else:
        an.answer(Reply(json=_message()))
        raw = anthropic_client.messages.with_raw_response.create(**fields)
        assert raw.headers["x-toolrelay-cost"] == "0.00315"
        message = raw.parse()
        assert getattr(message.usage, "cost") == CLAUDE_COST  # noqa: B009
        assert message.usage.cache_read_input_tokens == 2000
