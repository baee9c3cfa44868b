"""Any conversation the OpenAI API accepts reaches Anthropic, Gemini and Bedrock in a form each
accepts (as tests/helpers/anthropic_rules.py, gemini_rules.py and bedrock_rules.py encode their
400s; Bedrock's with botocore's own validator too), or is refused with a 400 for one of the
reasons named here: nothing else."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings

from app.config import ProviderConfig
from app.errors import InvalidRequest
from app.openai_types import parse_chat_request
from app.translators import TRANSLATORS
from app.translators.base import Target
from tests.helpers import anthropic_rules, bedrock_rules, gemini_rules
from tests.helpers.openai_conversations import TOOLS, conversations

BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
TARGETS = {
    "anthropic": Target(
        "claude", "an", ProviderConfig(kind="anthropic", api_key="k"), "claude-sonnet-4-5"
    ),
    "gemini": Target(
        "gemini", "gm", ProviderConfig(kind="gemini", api_key="k"), "gemini-2.5-flash"
    ),
    "bedrock": Target(
        "claude", "aws", ProviderConfig(kind="bedrock", region="us-east-1"), BEDROCK_MODEL
    ),
}
CHECKS = {
    "anthropic": anthropic_rules.request_problems,
    "gemini": lambda body: gemini_rules.request_problems(body, {}),
    "bedrock": lambda body: [
        problem
        for problem in [bedrock_rules.request_problem(BEDROCK_MODEL, body, stream=False)]
        if problem is not None
    ],
}


def says_something(messages: list[dict[str, Any]]) -> bool:
    """Whether any turn (not system) carries a call or non-blank text: the only conversations
    either kind may refuse are those with nothing in them to send."""
    for message in messages:
        if message["role"] in ("system", "developer"):
            continue
        if message.get("tool_calls") or message["role"] == "tool":
            return True
        content = message.get("content") or ""
        texts = [content] if isinstance(content, str) else [p["text"] for p in content]
        if any(text.strip() for text in texts):
            return True
    return False


def check(kind: str, messages: list[dict[str, Any]]) -> None:
    request = parse_chat_request(orjson.dumps({"model": "m", "messages": messages, "tools": TOOLS}))
    refusal: InvalidRequest | None = None
    try:
        upstream = TRANSLATORS[kind].build_request(request, TARGETS[kind])
    except InvalidRequest as refused:
        refusal = refused
    if refusal is not None:
        # The one named refusal: a conversation with nothing in it the kind can send
        # (upstream: "messages: at least one message is required").
        assert not says_something(messages), refusal.message
        assert refusal.param == "messages"
        return
    assert CHECKS[kind](orjson.loads(upstream.body)) == []


@given(conversations())
@settings(max_examples=400, deadline=None)
def test_every_openai_conversation_reaches_anthropic_in_a_form_it_accepts(
    messages: list[dict[str, Any]],
) -> None:
    check("anthropic", messages)


@given(conversations())
@settings(max_examples=400, deadline=None)
def test_every_openai_conversation_reaches_gemini_in_a_form_it_accepts(
    messages: list[dict[str, Any]],
) -> None:
    check("gemini", messages)


@given(conversations())
@settings(max_examples=400, deadline=None)
def test_every_openai_conversation_reaches_bedrock_in_a_form_it_accepts(
    messages: list[dict[str, Any]],
) -> None:
    check("bedrock", messages)
