"""app/tool_loop/offer.py and rounds.py, pure: listed MCP tools offered as `LABEL__TOOL`
functions (a clash with the client's own function numbered, mapped back all the same), and a
round's calls sorted into run / approval / client / skipped, the MCP tools withdrawn after
`max_rounds` or `max_tool_calls`, a forced choice forced once, and usage summed over rounds."""

from __future__ import annotations

from typing import Any

from app.faces.responses.output import ItemIds
from app.faces.responses.request import translate
from app.mcp.types import McpTool, ServerRef
from app.tool_loop.hosted import HostedServer, ToolFilter
from app.tool_loop.offer import EMPTY_OBJECT, offer
from app.tool_loop.prepare import Prepared
from app.tool_loop.rounds import NOT_RUN, Rounds, add_usage

ADD = McpTool("add", "Add two integers.", {"type": "object", "properties": {"a": {}}}, None, None)
ECHO = McpTool("echo", None, {"type": "string"}, None, {"readOnlyHint": True})
CALC = HostedServer(0, ServerRef("calc"), ToolFilter(), "never")
ASKS = HostedServer(1, ServerRef("asks"), ToolFilter(), "always")
CLIENT_FUNCTION = {"type": "function", "name": "get_weather", "parameters": EMPTY_OBJECT}


def test_tools_are_offered_as_label__tool_in_the_servers_order() -> None:
    functions, names = offer([(CALC, [ADD, ECHO]), (ASKS, [ADD])], set())
    assert functions == [
        {
            "type": "function",
            "function": {
                "name": "calc__add",
                "parameters": ADD.input_schema,
                "description": "Add two integers.",
            },
        },
        # A schema that is not an object's is replaced; no description, none sent.
        {"type": "function", "function": {"name": "calc__echo", "parameters": EMPTY_OBJECT}},
        {
            "type": "function",
            "function": {
                "name": "asks__add",
                "parameters": ADD.input_schema,
                "description": "Add two integers.",
            },
        },
    ]
    assert names.get("calc__echo") is not None
    offered = names.get("asks__add")
    assert offered is not None
    assert (offered.server, offered.tool) == (ASKS, ADD)
    assert names.get("add") is None


def test_a_clash_with_a_client_function_gets_a_numbered_suffix() -> None:
    taken = {"calc__add", "calc__add_2"}
    functions, names = offer([(CALC, [ADD, ADD])], taken)
    assert [f["function"]["name"] for f in functions] == ["calc__add_3", "calc__add_4"]
    assert {"calc__add_3", "calc__add_4"} <= taken
    offered = names.get("calc__add_3")
    assert offered is not None
    assert offered.tool is ADD
    assert names.get("calc__add") is None


def rounds(body: dict[str, Any], *, max_rounds: int = 16, choice: Any = None) -> Rounds:
    # As prepare.py does: the Responses face never sees the cap the loop enforces itself.
    seen = {name: value for name, value in body.items() if name != "max_tool_calls"}
    translation = translate({"model": "mini", "input": "hi", **seen}, [])
    taken = {tool["function"]["name"] for tool in translation.wire.get("tools", ())}
    functions, names = offer([(CALC, [ADD]), (ASKS, [ECHO])], taken)
    prepared = Prepared(translation, names, functions, choice)
    return Rounds(prepared, body, ItemIds("abc"), max_rounds)


def offered_names(request: Any) -> list[str]:
    wire = request.model_dump(exclude_none=True)
    return [tool["function"]["name"] for tool in wire.get("tools") or ()]


def test_calls_are_sorted_into_run_approvals_and_the_clients() -> None:
    loop = rounds({"tools": [CLIENT_FUNCTION]})
    assert offered_names(loop.chat_request()) == ["get_weather", "calc__add", "asks__echo"]
    step = loop.sort(
        [
            ("c1", "calc__add", '{"a": 1}'),
            ("c2", "asks__echo", "{}"),
            ("c3", "get_weather", "{}"),
            ("c4", "unknown", "{}"),
        ]
    )
    [(call, offered, item)] = step.run
    assert call == ("c1", "calc__add", '{"a": 1}')
    assert offered.tool is ADD
    assert item["id"] == "mcp_abc001"
    assert (item["server_label"], item["name"], item["status"]) == ("calc", "add", "in_progress")
    assert step.approvals == [
        {
            "id": "mcpr_abc002",
            "type": "mcp_approval_request",
            "server_label": "asks",
            "name": "echo",
            "arguments": "{}",
        }
    ]
    assert step.client == [("c3", "get_weather", "{}"), ("c4", "unknown", "{}")]
    assert step.final  # approvals and the client's calls wait on the client


def test_a_round_with_only_mcp_calls_run_is_not_final_one_with_none_is() -> None:
    loop = rounds({})
    loop.chat_request()
    assert not loop.sort([("c1", "calc__add", "{}")]).final
    assert loop.sort([]).final


def test_max_tool_calls_skips_the_calls_past_it_and_withdraws_the_tools() -> None:
    loop = rounds({"max_tool_calls": 1})
    loop.chat_request()
    step = loop.sort([("c1", "calc__add", "{}"), ("c2", "calc__add", "{}")])
    assert [call for call, _, _ in step.run] == [("c1", "calc__add", "{}")]
    assert step.skipped == [("c2", "calc__add", "{}")]
    assert loop.withdrawn
    done = [{**step.run[0][2], "output": "3", "status": "completed"}]
    loop.add_turn({"content": "thinking aloud", "thinking_blocks": []}, step, done)
    request = loop.chat_request()
    assert offered_names(request) == []
    wire = request.model_dump(exclude_none=True)
    turn, first, second = wire["messages"][-3:]
    assert turn["content"] == "thinking aloud"
    assert [call["id"] for call in turn["tool_calls"]] == ["c1", "c2"]
    assert (first["tool_call_id"], first["content"]) == ("c1", "3")
    assert (second["tool_call_id"], second["content"]) == ("c2", NOT_RUN)
    # Asked without the MCP tools, a call to one anyway is the client's.
    assert loop.sort([("c3", "calc__add", "{}")]).client == [("c3", "calc__add", "{}")]


def test_a_max_tool_calls_that_is_not_an_integer_caps_nothing() -> None:
    for cap in (True, 1.5, "1", None):
        loop = rounds({"max_tool_calls": cap})
        loop.chat_request()
        step = loop.sort([("c1", "calc__add", "{}"), ("c2", "calc__add", "{}")])
        assert len(step.run) == 2, cap
        assert not loop.withdrawn


def test_the_tools_are_withdrawn_after_max_rounds() -> None:
    loop = rounds({}, max_rounds=2)
    assert offered_names(loop.chat_request()) == ["calc__add", "asks__echo"]
    assert offered_names(loop.chat_request()) == ["calc__add", "asks__echo"]
    assert loop.withdrawn
    assert offered_names(loop.chat_request()) == []


def test_a_forced_mcp_choice_is_forced_in_the_first_round_only() -> None:
    loop = rounds({}, choice={"mcp_any": ["asks__echo"]})
    first = loop.chat_request().model_dump(exclude_none=True)
    assert [t["function"]["name"] for t in first["tools"]] == ["asks__echo"]
    assert first["tool_choice"] == "required"
    second = loop.chat_request().model_dump(exclude_none=True)
    assert len(second["tools"]) == 2
    assert second.get("tool_choice") in (None, "auto")


def test_a_clients_forced_choice_becomes_auto_after_the_first_round() -> None:
    loop = rounds({"tools": [CLIENT_FUNCTION], "tool_choice": "required"})
    assert loop.chat_request().model_dump(exclude_none=True)["tool_choice"] == "required"
    assert loop.chat_request().model_dump(exclude_none=True)["tool_choice"] == "auto"


def test_approved_calls_are_a_call_and_its_result_each() -> None:
    loop = rounds({})
    item = {"id": "mcp_1", "arguments": '{"a": 1}'}
    loop.add_approved([("calc__add", item)], [{"output": "1", "status": "completed"}])
    messages = loop.chat_request().model_dump(exclude_none=True)["messages"]
    call, result = messages[-2:]
    assert call["tool_calls"][0]["function"] == {"name": "calc__add", "arguments": '{"a": 1}'}
    assert (result["tool_call_id"], result["content"]) == ("mcp_1", "1")


def test_usage_is_summed_with_its_details() -> None:
    first = {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 4},
    }
    second = {
        "prompt_tokens": 20,
        "completion_tokens": 1,
        "total_tokens": 21,
        "prompt_tokens_details": {"cached_tokens": 6, "audio_tokens": 1},
        "completion_tokens_details": {"reasoning_tokens": 2},
    }
    total = add_usage(add_usage(None, first), second)
    assert total == {
        "prompt_tokens": 30,
        "completion_tokens": 6,
        "total_tokens": 36,
        "prompt_tokens_details": {"cached_tokens": 10, "audio_tokens": 1},
        "completion_tokens_details": {"reasoning_tokens": 2},
    }
    assert first["prompt_tokens"] == 10  # not changed in place
    assert add_usage(total, None) is total
    assert add_usage(None, "junk") is None
    assert add_usage({"prompt_tokens": 1}, {"prompt_tokens": True}) == {"prompt_tokens": 1}
