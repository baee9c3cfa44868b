"""Hypothesis strategies for request bodies, mostly well-formed and sometimes anything, on the
three client APIs, for the fuzz of the cloud kinds (tests/integration/test_cloud_kinds_fuzz.py):
chat completions (every role, content as a string, parts or null, tool calls with odd names,
ids and arguments, tools with odd schemas, every tool_choice, response_format,
reasoning_effort, stream options, n, stop, token limits, junk fields), Anthropic Messages
(every block, tools, tool_choice, thinking), and Responses (tests/integration/
test_responses_fuzz.py's `bodies`, reused, with plain requests among them). Their building
blocks are the Responses fuzz's (`fields`, `maybe`, `mostly`, `junk`...), imported. A drawn
body names its model TARGET, for `aimed` to replace with the kind's."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.helpers.openai_conversations import TOOLS as CONVERSATION_TOOLS
from tests.helpers.openai_conversations import conversations
from tests.integration import test_responses_fuzz as responses_fuzz
from tests.integration.test_responses_fuzz import (
    call_ids,
    fields,
    junk,
    maybe,
    mostly,
    names,
    schema,
    text,
)

TARGET = "target-model"  # stands for the kind's model name in a drawn body
WEATHER_FUNCTION = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}

# -- /v1/chat/completions ------------------------------------------------------------------

tool_names = st.one_of(names, st.sampled_from(["a b", "x" * 70, "ns.tool", "tool-1", "ünï", "é"]))
arguments = st.sampled_from(
    ["{}", '{"city":"Paris"}', "not json", "", "[1,2]", "null", '"s"', '{"a":', " {} ", "{}{}"]
)
chat_parts = st.one_of(
    fields({"type": st.just("text"), "text": text}, {"cache_control": st.just({"type": "x"})}),
    fields(
        {
            "type": st.just("image_url"),
            "image_url": fields(
                {"url": st.sampled_from(["data:image/png;base64,AAAA", "https://x.test/a.png"])},
                {"detail": st.sampled_from(["low", "high", "auto", "odd"])},
            ),
        }
    ),
    fields(
        {
            "type": st.just("input_audio"),
            "input_audio": fields({"data": st.just("AAAA"), "format": st.just("wav")}),
        }
    ),
    fields({"type": st.just("file"), "file": fields({}, {"file_data": text, "file_id": text})}),
    fields({"type": st.just("refusal"), "refusal": text}),
    fields({"type": text}),
)
chat_content = st.one_of(st.none(), text, st.lists(chat_parts, max_size=3))
tool_call = fields(
    {
        "id": call_ids,
        "type": st.just("function"),
        "function": fields({"name": tool_names, "arguments": arguments}),
    }
)
chat_message = fields(
    {
        "role": st.sampled_from(["system", "developer", "user", "assistant", "tool", "function"]),
        "content": chat_content,
    },
    {
        "name": text,
        "tool_calls": st.lists(tool_call, max_size=3),
        "tool_call_id": call_ids,
        "refusal": text,
        "reasoning_content": text,
    },
)
chat_tool = fields(
    {
        "type": st.just("function"),
        "function": fields(
            {"name": tool_names, "parameters": schema},
            {"description": text, "strict": st.booleans()},
        ),
    }
)
chat_tool_choice = st.one_of(
    st.sampled_from(["auto", "none", "required", "any"]),
    fields({"type": st.just("function"), "function": fields({"name": tool_names})}),
    fields(
        {
            "type": st.just("allowed_tools"),
            "allowed_tools": fields(
                {
                    "mode": st.sampled_from(["auto", "required"]),
                    "tools": st.lists(
                        fields({"type": st.just("function"), "function": fields({"name": names})}),
                        max_size=2,
                    ),
                }
            ),
        }
    ),
)
response_format = st.one_of(
    fields({"type": st.sampled_from(["text", "json_object", "yaml"])}),
    fields(
        {
            "type": st.just("json_schema"),
            "json_schema": fields({"name": text, "schema": schema}, {"strict": st.booleans()}),
        }
    ),
)
chat_settings = {
    "tools": st.one_of(st.just(CONVERSATION_TOOLS), st.lists(mostly(chat_tool, junk), max_size=3)),
    "tool_choice": chat_tool_choice,
    "parallel_tool_calls": st.booleans(),
    "response_format": response_format,
    "reasoning_effort": st.sampled_from(["minimal", "low", "medium", "high", "xhigh", "none", "x"]),
    "stream": st.booleans(),
    "stream_options": fields({}, {"include_usage": st.booleans()}),
    "n": st.integers(-1, 3),
    "stop": st.one_of(text, st.lists(text, max_size=5)),
    "max_tokens": st.integers(-1, 10**6),
    "max_completion_tokens": st.integers(-1, 10**6),
    "temperature": st.floats(0, 2),
    "top_p": st.floats(0, 1),
    "seed": st.integers(-1, 2**40),
    "user": text,
    "metadata": st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
    "unknown_field": junk,
}
chat_messages = st.one_of(conversations(), st.lists(mostly(chat_message, junk), max_size=5))
# A third of the bodies are requests the OpenAI API takes, with every setting right.
well_formed_chat = st.fixed_dictionaries(
    {"model": st.just(TARGET), "messages": conversations(), "tools": st.just(CONVERSATION_TOOLS)},
    optional={name: chat_settings[name] for name in ("tool_choice", "stream", "max_tokens")},
)
fuzzed_chat = mostly(
    st.fixed_dictionaries(
        {"model": maybe(st.just(TARGET)), "messages": maybe(chat_messages)},
        optional={name: maybe(value) for name, value in chat_settings.items()},
    ),
    junk,
)
chat_bodies = st.one_of(well_formed_chat, fuzzed_chat, fuzzed_chat)

# -- /v1/messages --------------------------------------------------------------------------

tool_use_ids = st.sampled_from(["toolu_01", "toolu_02", "call_weather_01", "a b", ""])
blocks = st.one_of(
    fields(
        {"type": st.just("text"), "text": text}, {"cache_control": st.just({"type": "ephemeral"})}
    ),
    fields(
        {
            "type": st.just("image"),
            "source": fields(
                {
                    "type": st.just("base64"),
                    "media_type": st.just("image/png"),
                    "data": st.just("AAAA"),
                }
            ),
        }
    ),
    fields(
        {
            "type": st.just("tool_use"),
            "id": tool_use_ids,
            "name": tool_names,
            "input": st.one_of(st.just({"city": "Paris"}), st.just({}), junk),
        }
    ),
    fields(
        {"type": st.just("tool_result"), "tool_use_id": tool_use_ids},
        {
            "content": st.one_of(
                text,
                st.lists(fields({"type": st.just("text"), "text": text}), max_size=2),
                st.just('{"temp": 18}'),
                st.just("[1, 2]"),
            ),
            "is_error": st.booleans(),
        },
    ),
    fields({"type": st.just("thinking"), "thinking": text, "signature": text}),
    fields({"type": st.just("redacted_thinking"), "data": text}),
    fields({"type": text}),
)
anthropic_message = fields(
    {
        "role": mostly(st.sampled_from(["user", "assistant"]), st.sampled_from(["system", "tool"])),
        "content": st.one_of(text, st.lists(blocks, max_size=3)),
    }
)
anthropic_tool = st.one_of(
    fields({"name": tool_names, "input_schema": schema}, {"description": text}),
    fields({"type": st.just("web_search_20250305"), "name": st.just("web_search")}),
)


@st.composite
def anthropic_conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A history Anthropic takes: a user's text, then assistant turns (text, calls or both),
    each call answered by a result in the user turn after it (with text or not)."""
    words = st.sampled_from(["Hi", "Paris?", "It is 18C.", "ok", " padded "])
    messages: list[dict[str, Any]] = [{"role": "user", "content": draw(words)}]
    for turn in range(draw(st.integers(0, 3))):
        count = draw(st.integers(0, 2))
        ids = [f"toolu_{turn}{n}" for n in range(count)]
        said = [{"type": "text", "text": draw(words)}] if draw(st.booleans()) or not ids else []
        calls = [
            {"type": "tool_use", "id": i, "name": draw(names.filter(bool)), "input": {}}
            for i in ids
        ]
        messages.append({"role": "assistant", "content": said + calls})
        results: list[Any] = [
            {"type": "tool_result", "tool_use_id": i, "content": draw(words)} for i in ids
        ]
        results += [{"type": "text", "text": draw(words)}] if draw(st.booleans()) or not ids else []
        messages.append({"role": "user", "content": results})
    return messages


messages_settings = {
    "system": st.one_of(
        text, st.lists(fields({"type": st.just("text"), "text": text}), max_size=2)
    ),
    "tools": st.lists(mostly(anthropic_tool, junk), max_size=3),
    "tool_choice": fields(
        {"type": st.sampled_from(["auto", "any", "tool", "none", "odd"])},
        {"name": tool_names, "disable_parallel_tool_use": st.booleans()},
    ),
    "thinking": st.one_of(
        fields({"type": st.just("enabled"), "budget_tokens": st.integers(0, 5000)}),
        fields({"type": st.sampled_from(["disabled", "adaptive"])}),
    ),
    "output_config": fields({}, {"effort": st.sampled_from(["low", "high", "odd"])}),
    "stream": st.booleans(),
    "stop_sequences": st.lists(text, max_size=3),
    "temperature": st.floats(0, 1),
    "top_k": st.integers(-1, 100),
    "metadata": fields({}, {"user_id": text}),
    "unknown_field": junk,
}
messages_bodies = mostly(
    st.fixed_dictionaries(
        {
            "model": maybe(st.just(TARGET)),
            "max_tokens": maybe(st.integers(1, 4096)),
            "messages": maybe(
                st.one_of(
                    anthropic_conversations(),
                    st.lists(mostly(anthropic_message, junk), min_size=1, max_size=5),
                )
            ),
        },
        optional={name: maybe(value) for name, value in messages_settings.items()},
    ),
    junk,
)


def aimed(body: Any, model: str) -> Any:
    """The body with the drawn model names (the target, and the Responses fuzz's own) naming
    `model`; an unknown or junk name is left as drawn."""
    if isinstance(body, dict) and body.get("model") in (TARGET, "demo", "mini"):
        return {**body, "model": model}
    return body


# A third of the Responses bodies are plain requests, with function tools or none.
well_formed_responses = st.fixed_dictionaries(
    {
        "model": st.just(TARGET),
        "input": st.one_of(
            st.sampled_from(["Weather in Paris?", "Time in Tokyo?"]),
            st.just([{"role": "user", "content": "Weather in Paris?"}]),
        ),
    },
    optional={"stream": st.booleans(), "tools": st.just([WEATHER_FUNCTION])},
)
fuzzed_responses = responses_fuzz.bodies
BODIES: dict[str, st.SearchStrategy[Any]] = {
    "chat": chat_bodies,
    "responses": st.one_of(well_formed_responses, fuzzed_responses, fuzzed_responses),
    "messages": messages_bodies,
}
