"""A conversation that opens with the assistant's turn (a chat UI's greeting): OpenAI takes it,
Converse refuses it ("A conversation must start with a user message"), so a short user turn
goes first and the client is told why in x-toolrelay-warning. Found by the history property
test (tests/unit/translators/test_history_property.py)."""

from __future__ import annotations

import orjson

from app.config import ProviderConfig
from app.openai_types import parse_chat_request
from app.translators import TRANSLATORS
from app.translators.base import Target
from app.translators.bedrock.messages import LEADING_USER_TEXT
from tests.helpers import bedrock_rules

MODEL = "amazon.nova-pro-v1:0"
PROVIDER = ProviderConfig(kind="bedrock", region="us-east-1")
TARGET = Target("nova", "aws", PROVIDER, MODEL, prompt_cache="off")  # whole bodies compared


def test_a_leading_assistant_turn_gets_a_user_turn_before_it() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    request = parse_chat_request(orjson.dumps({"model": "nova", "messages": messages}))
    built = TRANSLATORS["bedrock"].build_request(request, TARGET)
    body = orjson.loads(built.body)
    assert [turn["role"] for turn in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][0]["content"] == [{"text": LEADING_USER_TEXT}]
    assert bedrock_rules.request_problem(MODEL, body, stream=False) is None
    assert built.warning is not None
    assert "user turn" in built.warning


def test_a_conversation_opened_by_the_user_is_sent_as_it_is() -> None:
    messages = [{"role": "user", "content": "Hi"}]
    request = parse_chat_request(orjson.dumps({"model": "nova", "messages": messages}))
    built = TRANSLATORS["bedrock"].build_request(request, TARGET)
    assert orjson.loads(built.body)["messages"] == [{"role": "user", "content": [{"text": "Hi"}]}]
    assert built.warning is None
