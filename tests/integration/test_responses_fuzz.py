"""Any POST /v1/responses body, however malformed, through the in-process app on the demo kind
and on an openai-kind upstream: every item type with fields missing, wrong-typed or null,
every kind of tool and tool_choice, text.format, and nesting a few hundred levels deep in
places nothing reads. The answer is never a 5xx, every error is OpenAI's shape, and a stream
that began ends with its terminal event."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.upstream_answers import openai_tool_chunks, openai_tool_completion
from tests.integration.conftest import make_config, raw_config, serve

KNOWN_IDS: list[str] = []
STATUSES: list[int] = []  # ids of stored responses and items, for references that resolve


def upstream(request: httpx.Request) -> httpx.Response:
    """The openai kind's upstream: two tool calls, as a stream when asked for one."""
    body = json.loads(request.content)
    assert isinstance(body["messages"], list)
    assert body["messages"]
    if body.get("stream"):
        chunks = openai_tool_chunks(include_usage=True)
        payload = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=payload)
    return httpx.Response(200, json=openai_tool_completion())


# -- values --------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-5, 10**12)
    | st.floats(allow_nan=False)
    | st.text(max_size=6)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def nest(levels: int, shape: str, leaf: Any) -> Any:
    value = leaf
    for level in range(levels):
        as_list = shape == "list" or (shape == "mixed" and level % 3)
        value = [value] if as_list else {"k": value}
    return value


# A value nested up to a few hundred levels (past the edge's limit too), of lists, objects or both.
deep = st.builds(nest, st.integers(1, 300), st.sampled_from(["list", "dict", "mixed"]), scalars)
junk = st.one_of(json_values, json_values, json_values, deep)
ODDS = 12  # about one field in ODDS is wrong or missing


def mostly(usual: st.SearchStrategy[Any], rare: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`usual` about ODDS - 1 times in ODDS (one_of would draw each as often)."""
    return st.sampled_from([True] * (ODDS - 1) + [False]).flatmap(lambda ok: usual if ok else rare)


def maybe(proper: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the right thing, sometimes anything."""
    return mostly(proper, junk)


def fields(
    required: dict[str, Any], optional: dict[str, Any] | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    """An object whose every field may be wrong (maybe), and sometimes missing (loose)."""
    wanted = {name: maybe(value) for name, value in required.items()}
    extra = {name: maybe(value) for name, value in (optional or {}).items()}
    both = st.fixed_dictionaries(wanted, optional=extra)
    loose = st.fixed_dictionaries({}, optional={**wanted, **extra})
    return mostly(both, loose)


names = st.sampled_from(["get_weather", "get_time", "apply_patch", "fs__read", "x", ""])
call_ids = st.sampled_from(["call_weather_01", "call_time_02", "c1", ""])
text = st.text(max_size=12)
# A placeholder for the id of something stored earlier in the run, filled in when sent (the
# strategies themselves must not depend on what earlier examples stored).
known_id = st.integers(0, 999).map(lambda n: f"known-ref-{n}")
KNOWN_REF = re.compile(r'"known-ref-(\d+)"')


def with_known_ids(encoded: str) -> str:
    def known(match: re.Match[str]) -> str:
        n = int(match.group(1))
        return json.dumps(KNOWN_IDS[n % len(KNOWN_IDS)] if KNOWN_IDS else f"resp_none{n}")

    return KNOWN_REF.sub(known, encoded)


parts = st.one_of(
    fields({"type": st.just("input_text"), "text": text}),
    fields({"type": st.just("output_text"), "text": text}, {"annotations": st.just([])}),
    fields({"type": st.just("refusal"), "refusal": text}),
    fields(
        {"type": st.just("input_image"), "image_url": st.just("data:image/png;base64,AAAA")},
        {"detail": st.sampled_from(["low", "high", "auto", "odd"])},
    ),
    fields(
        {"type": st.just("input_file")},
        {
            "file_data": st.just("data:application/pdf;base64,AAAA"),
            "file_id": st.just("file-1"),
            "filename": text,
        },
    ),
    fields({"type": text}),
)
content = st.one_of(text, st.lists(parts, max_size=4))
items = st.one_of(
    fields(
        {
            "role": st.sampled_from(["user", "assistant", "system", "developer", "tool", "robot"]),
            "content": content,
        },
        {"type": st.just("message"), "id": known_id, "status": st.just("completed")},
    ),
    fields(
        {
            "type": st.just("function_call"),
            "call_id": call_ids,
            "name": names,
            "arguments": st.sampled_from(["{}", '{"city":"Paris"}', "not json", ""]),
        },
        {
            "id": known_id,
            "status": st.just("completed"),
            "namespace": st.sampled_from([None, "fs", ""]),
        },
    ),
    fields(
        {
            "type": st.just("function_call_output"),
            "call_id": call_ids,
            "output": st.one_of(text, st.lists(parts, max_size=3)),
        },
        {"id": text, "status": st.just("completed")},
    ),
    fields(
        {"type": st.just("custom_tool_call"), "call_id": call_ids, "name": names, "input": text},
        {"id": known_id},
    ),
    fields(
        {
            "type": st.just("custom_tool_call_output"),
            "call_id": call_ids,
            "output": st.one_of(text, st.lists(parts, max_size=2)),
        }
    ),
    fields(
        {"type": st.just("reasoning"), "id": known_id, "summary": st.just([])},
        {
            "encrypted_content": st.one_of(text, st.just("eyJibG9ja3MiOiBbXX0=")),
            "content": st.lists(
                fields({"type": st.just("reasoning_text"), "text": text}), max_size=2
            ),
        },
    ),
    fields({"type": st.just("item_reference"), "id": st.one_of(known_id, text)}),
    fields({"id": known_id}),
    fields(
        {
            "type": st.sampled_from(
                [
                    "web_search_call",
                    "file_search_call",
                    "computer_call",
                    "local_shell_call",
                    "mcp_call",
                    "image_generation_call",
                    "compaction",
                    "zzz",
                ]
            )
        },
        {"id": text},
    ),
    junk,
)
items = mostly(items, junk)

schema = st.one_of(
    st.just({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    st.just({"type": "object", "properties": {}}),
    st.just(
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
        }
    ),
    deep.map(
        lambda value: {
            "type": "object",
            "properties": {"deep": {"type": "object", "default": value}},
        }
    ),
)
function_tool = fields(
    {"type": st.just("function"), "name": names, "parameters": schema},
    {"description": text, "strict": st.booleans()},
)
custom_tool = fields(
    {"type": st.just("custom"), "name": names},
    {
        "description": text,
        "format": st.one_of(
            st.just({"type": "text"}),
            st.just({"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}),
        ),
    },
)
hosted_tool = fields(
    {
        "type": st.sampled_from(
            [
                "web_search",
                "web_search_preview",
                "file_search",
                "code_interpreter",
                "image_generation",
                "computer_use_preview",
                "mcp",
                "local_shell",
                "shell",
                "apply_patch",
                "tool_search",
            ]
        )
    }
)
namespace_tool = fields(
    {
        "type": st.just("namespace"),
        "name": st.sampled_from(["fs", "", "a__b"]),
        "tools": st.lists(st.one_of(function_tool, custom_tool, hosted_tool, junk), max_size=3),
    }
)
tools = st.lists(
    mostly(st.one_of(function_tool, custom_tool, namespace_tool, hosted_tool), junk), max_size=4
)
tool_choice = st.one_of(
    st.sampled_from(["auto", "none", "required", "sometimes"]),
    fields(
        {"type": st.sampled_from(["function", "custom"]), "name": names},
        {"namespace": st.sampled_from(["fs", None])},
    ),
    fields(
        {
            "type": st.just("allowed_tools"),
            "mode": st.sampled_from(["auto", "required", "none"]),
            "tools": st.lists(fields({"type": st.just("function"), "name": names}), max_size=3),
        }
    ),
    fields({"type": st.sampled_from(["web_search", "file_search", "mcp", "zzz"])}),
)
text_format = fields(
    {
        "format": st.one_of(
            fields(
                {"type": st.just("json_schema"), "name": text, "schema": schema},
                {"strict": st.booleans(), "description": text},
            ),
            fields({"type": st.sampled_from(["text", "json_object", "yaml"])}),
        )
    },
    {"verbosity": st.sampled_from(["low", "medium", "high"])},
)
settings_fields = {
    "instructions": text,
    "tools": tools,
    "tool_choice": tool_choice,
    "parallel_tool_calls": st.booleans(),
    "text": text_format,
    "reasoning": fields(
        {},
        {
            "effort": st.sampled_from(["minimal", "low", "high", "xhigh", "odd"]),
            "summary": st.sampled_from(["auto", "detailed"]),
        },
    ),
    "max_output_tokens": st.integers(-1, 10**9),
    "temperature": st.floats(0, 2),
    "stream": st.booleans(),
    "store": st.booleans(),
    "previous_response_id": st.one_of(known_id, text),
    "include": st.lists(
        st.sampled_from(["reasoning.encrypted_content", "message.output_text.logprobs"]), max_size=2
    ),
    "metadata": st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
    "prompt_cache_key": text,
    "service_tier": st.sampled_from(["auto", "default", "flex"]),
}
required = {
    "model": st.sampled_from(["demo", "mini"] * 4 + ["nope"]),
    "input": st.one_of(text, st.lists(items, max_size=6)),
}
ordinary = st.fixed_dictionaries(
    {name: maybe(value) for name, value in required.items()},
    optional={name: maybe(value) for name, value in settings_fields.items()},
)
odd_fields = {
    "background": st.booleans(),
    "conversation": text,
    "unknown_field": junk,
    "prompt": junk,
    "truncation": junk,
}
odd = st.tuples(ordinary, st.fixed_dictionaries({}, optional=odd_fields)).map(
    lambda pair: {**pair[0], **pair[1]}
)
bodies = mostly(ordinary, st.one_of(odd, odd, junk))


def check_error(answer: httpx.Response) -> None:
    assert answer.status_code < 500, answer.text
    body = answer.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert isinstance(error["message"], str)
    assert error["message"]
    assert isinstance(error["type"], str)


def check_answer(answer: httpx.Response, sent: Any) -> None:
    if answer.status_code != 200:
        check_error(answer)
        return
    if answer.headers["content-type"].startswith("text/event-stream"):
        events = [
            json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")
        ]
        assert events[0]["type"] == "response.created", events[0]
        assert [event["sequence_number"] for event in events] == list(range(len(events)))
        assert events[-1]["type"] in ("response.completed", "response.incomplete"), events[-1]
        response = events[-1]["response"]
    else:
        response = answer.json()
        assert response["object"] == "response"
    assert response["status"] in ("completed", "incomplete")
    if sent.get("store") is not False:  # a 200 came from an object
        KNOWN_IDS.append(response["id"])
        KNOWN_IDS.extend(item["id"] for item in response["output"])


def test_no_body_is_a_5xx_and_every_error_is_openais_shape() -> None:
    raw = raw_config()
    raw["models"] = [m for m in raw["models"] if m["name"] in ("mini", "demo")]
    KNOWN_IDS.clear()
    STATUSES.clear()
    with asyncio.Runner() as runner:
        context = serve(make_config(raw), transport=httpx.MockTransport(upstream))
        client = runner.run(context.__aenter__())
        try:

            @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
            @given(body=bodies)
            def send(body: Any) -> None:
                encoded = with_known_ids(json.dumps(body)).encode()  # not always an object
                answer = runner.run(
                    client.post(
                        "/v1/responses",
                        content=encoded,
                        headers={"content-type": "application/json"},
                    )
                )
                STATUSES.append(answer.status_code)
                check_answer(answer, body)

            send()
        finally:
            runner.run(context.__aexit__(None, None, None))
    # The bodies are mostly well-formed: a fair share must have been answered, not refused.
    assert STATUSES.count(200) >= len(STATUSES) // 10, STATUSES
