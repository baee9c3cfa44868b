"""The history traps peers fell into on Converse (issue 30), each its own test, and the
tool-name and id mapping. Every body is checked against botocore's definition (shapes.py)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.openai_types import parse_chat_request
from app.translators.bedrock.names import tool_names
from app.translators.bedrock.request import build_request
from tests.unit.translators.bedrock.shapes import request_problems
from tests.unit.translators.bedrock.test_request import (
    HELLO,
    TARGET,
    TOOL,
    assistant,
    body,
    call,
    refusal,
    result,
)


def test_tool_choice_none_without_tool_history_sends_no_tools() -> None:
    assert "toolConfig" not in body(tools=[TOOL], tool_choice="none")


def test_trap_tool_history_under_tool_choice_none_keeps_the_tool_config() -> None:
    """LiteLLM #24158: Bedrock refuses toolUse/toolResult blocks without a toolConfig."""
    history = [HELLO, assistant(call("call_1")), result("call_1")]
    sent = body(messages=history, tools=[TOOL], tool_choice="none")
    assert [tool["toolSpec"]["name"] for tool in sent["toolConfig"]["tools"]] == ["get_weather"]
    assert "toolChoice" not in sent["toolConfig"]


def test_trap_tool_history_without_any_tools_gets_specs_for_the_called_names() -> None:
    history = [HELLO, assistant(call("call_1"), call("call_2", name="lookup")), result("call_1")]
    sent = body(messages=[*history, result("call_2")])
    names = [tool["toolSpec"]["name"] for tool in sent["toolConfig"]["tools"]]
    assert names == ["get_weather", "lookup"]


def test_trap_parallel_results_go_in_one_user_turn_first_in_it() -> None:
    """LiteLLM #5277, Bifrost #1164: one user message holding every result of the turn."""
    history = [
        HELLO,
        assistant(call("call_1"), call("call_2", '{"city":"Oslo"}')),
        result("call_1", "18C"),
        result("call_2", "3C"),
        {"role": "user", "content": "and tomorrow?"},
    ]
    sent = body(messages=history, tools=[TOOL])
    assert [turn["role"] for turn in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["messages"][2]["content"] == [
        {"toolResult": {"toolUseId": "call_1", "content": [{"text": "18C"}]}},
        {"toolResult": {"toolUseId": "call_2", "content": [{"text": "3C"}]}},
        {"text": "and tomorrow?"},
    ]
    assert sent["messages"][1]["content"][1] == {
        "toolUse": {"toolUseId": "call_2", "name": "get_weather", "input": {"city": "Oslo"}}
    }


def test_trap_empty_text_blocks_are_left_out() -> None:
    """LiteLLM #7169: Bedrock refuses blank text blocks."""
    history = [
        {"role": "user", "content": [{"type": "text", "text": ""}, {"type": "text", "text": "q"}]},
        assistant(call("call_1"), content="  "),
        result("call_1", ""),
        {"role": "user", "content": " \n"},
    ]
    sent = body(messages=history, tools=[TOOL])
    assert sent["messages"] == [
        {"role": "user", "content": [{"text": "q"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "toolUse": {
                        "toolUseId": "call_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    }
                }
            ],
        },
        {"role": "user", "content": [{"toolResult": {"toolUseId": "call_1", "content": []}}]},
    ]


@pytest.mark.parametrize("arguments", ["", "  ", "{}"])
def test_trap_empty_arguments_become_an_empty_object(arguments: str) -> None:
    history = [HELLO, assistant(call("call_1", arguments)), result("call_1")]
    sent = body(messages=history, tools=[TOOL])
    assert sent["messages"][1]["content"][0]["toolUse"]["input"] == {}


def test_non_object_arguments_refused_naming_the_call() -> None:
    history = [HELLO, assistant(call("call_1", "[1]")), result("call_1")]
    assert refusal(messages=history).param == "messages[1].tool_calls[0].function.arguments"


def test_trap_json_array_result_goes_as_text_and_an_object_as_json() -> None:
    history = [
        HELLO,
        assistant(call("call_1"), call("call_2"), call("call_3")),
        result("call_1", "[1, 2]"),
        result("call_2", '{"t": 21}'),
        result("call_3", [{"type": "text", "text": '"plain"'}]),
    ]
    results = body(messages=history, tools=[TOOL])["messages"][2]["content"]
    assert [block["toolResult"]["content"] for block in results] == [
        [{"text": "[1, 2]"}],
        [{"json": {"t": 21}}],
        [{"text": '"plain"'}],
    ]
    assert all("status" not in block["toolResult"] for block in results)


def test_trap_tool_names_outside_the_pattern_are_mapped_both_ways() -> None:
    """History names from another upstream (`functions.get_weather`, a 70-character name)
    and a client tool already named like a replacement: every name sent fits Bedrock's
    pattern, distinct names stay distinct, and the map back gives the client's own."""
    long_name = "n" * 70
    history = [
        HELLO,
        assistant(
            call("functions.get_weather:0", name="functions.get_weather"),
            call("c2", name=long_name),
        ),
        result("functions.get_weather:0"),
        result("c2"),
    ]
    request = parse_chat_request(
        orjson.dumps({"model": "claude", "messages": history, "tools": [TOOL]})
    )
    sent: dict[str, Any] = orjson.loads(build_request(request, TARGET).body)
    assert request_problems(sent) == ""
    uses = [block["toolUse"] for block in sent["messages"][1]["content"]]
    assert uses[0]["name"] != "functions.get_weather"
    assert uses[1]["name"] != long_name
    assert len({uses[0]["name"], uses[1]["name"], "get_weather"}) == 3
    names = tool_names(request)
    assert names.client(uses[0]["name"]) == "functions.get_weather"
    assert names.client(uses[1]["name"]) == long_name
    assert names.client("get_weather") == "get_weather"
    results = [block["toolResult"]["toolUseId"] for block in sent["messages"][2]["content"]]
    assert results == [uses[0]["toolUseId"], "c2"]  # ids keep matching their calls
    assert uses[0]["toolUseId"] == "functions.get_weather:0"  # ':' and '.' are allowed in ids


def test_tool_name_mapping_is_deterministic_and_avoids_client_names() -> None:
    odd = "a.b"
    first = tool_names(
        parse_chat_request(
            orjson.dumps(
                {
                    "model": "m",
                    "messages": [HELLO, assistant(call("c", name=odd)), result("c")],
                }
            )
        )
    )
    taken = first.bedrock(odd)
    clashing = {"type": "function", "function": {"name": taken}}
    second = tool_names(
        parse_chat_request(
            orjson.dumps(
                {
                    "model": "m",
                    "tools": [clashing],
                    "messages": [HELLO, assistant(call("c", name=odd)), result("c")],
                }
            )
        )
    )
    assert second.bedrock(taken) == taken
    assert second.bedrock(odd) not in (taken, odd)
    assert second.client(second.bedrock(odd)) == odd


def test_long_tool_ids_are_shortened_the_same_way_for_call_and_result() -> None:
    long_id = "call_" + "x" * 80
    history = [HELLO, assistant(call(long_id)), result(long_id)]
    sent = body(messages=history, tools=[TOOL])
    used = sent["messages"][1]["content"][0]["toolUse"]["toolUseId"]
    assert len(used) <= 64
    assert sent["messages"][2]["content"][0]["toolResult"]["toolUseId"] == used
