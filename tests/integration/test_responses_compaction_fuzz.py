"""Any compaction input through the in-process app on the openai kind and the demo kind:
`compaction` items (ToolRelay's, OpenAI's, broken ones), `compaction_trigger`s last or not,
among ordinary items, on `/v1/responses` (whole and streamed, stored and chained) and on
`/v1/responses/compact`. Never a 5xx; every error is OpenAI's shape; a trigger last is
answered with one compaction item and `/compact` with a `response.compaction`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.compaction.instructions import INSTRUCTIONS
from app.faces.responses.compaction import PREFIX, compaction_item
from tests.helpers.upstream_answers import openai_tool_completion
from tests.integration.conftest import make_config, raw_config, serve
from tests.integration.test_responses_fuzz import check_error, junk, maybe
from tests.integration.test_responses_fuzz import upstream as calling_upstream

STORED: list[str] = []
ANSWERED: list[tuple[str, int]] = []  # (path, status) of every request sent
text = st.text(max_size=20)
ours = st.builds(compaction_item, st.just("cmp_1"), text)
broken_content = st.one_of(
    st.just("gAAAAB-openai"), st.just(PREFIX + "%%%"), st.just(PREFIX), junk, st.none()
)
compactions = st.one_of(
    ours,
    ours.map(lambda item: {k: v for k, v in item.items() if k != "id"}),
    st.fixed_dictionaries({"type": st.just("compaction"), "encrypted_content": broken_content}),
    st.fixed_dictionaries({"type": st.just("compaction")}, optional={"id": junk}),
)
triggers = st.one_of(
    st.just({"type": "compaction_trigger"}),
    st.fixed_dictionaries({"type": st.just("compaction_trigger")}, optional={"extra": junk}),
)
ordinary = st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "content": text}),
    st.fixed_dictionaries(
        {"type": st.just("message"), "role": st.sampled_from(["assistant", "developer"])},
        optional={"content": maybe(text)},
    ),
    st.just({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}),
    st.just({"type": "function_call_output", "call_id": "c1", "output": "ok"}),
)
items = st.one_of(ordinary, ordinary, compactions, triggers, junk)
inputs = st.one_of(
    st.lists(items, max_size=6).flatmap(
        lambda got: st.sampled_from([got, [*got, {"type": "compaction_trigger"}]])
    ),
    text,
    junk,
)
bodies = st.fixed_dictionaries(
    {"model": maybe(st.sampled_from(["mini", "demo"])), "input": inputs},
    optional={
        "stream": st.booleans(),
        "store": st.booleans(),
        "instructions": maybe(text),
        "previous_response_id": st.integers(0, 99),
        "tools": maybe(st.just([{"type": "function", "name": "f"}])),
    },
)


def check(answer: httpx.Response, path: str, body: dict[str, Any]) -> None:
    ANSWERED.append((path, answer.status_code))
    if answer.status_code != 200:
        check_error(answer)
        return
    if path.endswith("/compact"):
        compacted = answer.json()
        assert compacted["object"] == "response.compaction"
        assert compacted["output"][-1]["type"] == "compaction"
        return
    if answer.headers["content-type"].startswith("text/event-stream"):
        events = [json.loads(line[6:]) for line in answer.text.splitlines() if line[:6] == "data: "]
        assert events[-1]["type"] in ("response.completed", "response.incomplete"), events[-1]
        response = events[-1]["response"]
    else:
        response = answer.json()
    given_input = body.get("input")
    if isinstance(given_input, list) and given_input[-1:] == [{"type": "compaction_trigger"}]:
        assert [item["type"] for item in response["output"]] == ["compaction"]
    if body.get("store") is not False:
        STORED.append(response["id"])


def upstream(request: httpx.Request) -> httpx.Response:
    """The fuzz's model: a summary when asked for one (a model that answers a compaction
    with no text is a 502, tested in test_responses_compaction.py), else two tool calls."""
    if INSTRUCTIONS[:40] not in request.content.decode() or json.loads(request.content).get(
        "stream"
    ):
        return calling_upstream(request)  # (a summary is asked for whole, never streamed)
    answer = openai_tool_completion()
    answer["choices"][0]["message"] = {"role": "assistant", "content": "Summary: nothing yet."}
    answer["choices"][0]["finish_reason"] = "stop"
    return httpx.Response(200, json=answer)


def test_no_compaction_input_is_a_5xx() -> None:
    raw = raw_config()
    raw["models"] = [m for m in raw["models"] if m["name"] in ("mini", "demo")]
    STORED.clear()
    ANSWERED.clear()
    with asyncio.Runner() as runner:
        context = serve(make_config(raw), transport=httpx.MockTransport(upstream))
        client = runner.run(context.__aenter__())
        try:

            @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
            @given(body=bodies, compact=st.booleans())
            def send(body: dict[str, Any], compact: bool) -> None:
                if "previous_response_id" in body:
                    n = body["previous_response_id"]
                    body["previous_response_id"] = STORED[n % len(STORED)] if STORED else "resp_x"
                path = "/v1/responses/compact" if compact else "/v1/responses"
                encoded = json.dumps(body).encode()  # `junk` may hold inf: sent as Infinity
                answer = runner.run(
                    client.post(path, content=encoded, headers={"content-type": "application/json"})
                )
                check(answer, path, body)

            send()
        finally:
            runner.run(context.__aexit__(None, None, None))
    # Enough was well-formed that both doors answered some, not only refused.
    for path in ("/v1/responses", "/v1/responses/compact"):
        assert (path, 200) in ANSWERED, ANSWERED
