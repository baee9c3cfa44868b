"""Any POST /v1/responses body holding `additional_tools` input items (issue 38), however
malformed, through the in-process app on the demo kind and an openai-kind upstream: items with
every field missing, wrong-typed or odd (roles, tool lists of every tool kind and of junk,
namespaces), beside `tools`, in `previous_response_id` chains of stored responses that held
them, with tool_choice naming their tools. Never a 5xx, every error OpenAI's shape, a stream
that began ends with its terminal event (test_responses_fuzz.py's checks)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.conftest import make_config, raw_config, serve
from tests.integration.test_responses_fuzz import (
    KNOWN_IDS,
    check_answer,
    fields,
    items,
    junk,
    known_id,
    maybe,
    mostly,
    settings_fields,
    tool_choice,
    tools,
    upstream,
    with_known_ids,
)

STATUSES: list[int] = []

additional = fields(
    {
        "type": st.just("additional_tools"),
        "role": st.sampled_from(["developer"] * 6 + ["user", "system"]),
        "tools": tools,
    },
    {"id": st.sampled_from(["at_1", "", "at_x"])},
)
USER = {"type": "message", "role": "user", "content": "Run echo fuzz-ok"}
# Mostly additional_tools items, sometimes any other item, then the user's turn.
inputs = st.lists(st.one_of(additional, additional, additional, items), min_size=1, max_size=4)
inputs = inputs.map(lambda given: [*given, USER])
bodies = st.fixed_dictionaries(
    {"model": st.sampled_from(["demo", "mini"]), "input": maybe(inputs)},
    optional={
        "tools": maybe(tools),
        "tool_choice": maybe(tool_choice),
        "stream": st.booleans(),
        "store": st.booleans(),
        "previous_response_id": mostly(known_id, settings_fields["previous_response_id"]),
    },
)
bodies = mostly(bodies, junk)


def test_no_additional_tools_body_is_a_5xx() -> None:
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
                encoded = with_known_ids(json.dumps(body)).encode()
                answer = runner.run(
                    client.post(
                        "/v1/responses",
                        content=encoded,
                        headers={"content-type": "application/json"},
                    )
                )
                STATUSES.append(answer.status_code)
                check_answer(answer, body if isinstance(body, dict) else {})

            send()
        finally:
            runner.run(context.__aexit__(None, None, None))
    assert STATUSES.count(200) >= len(STATUSES) // 10, STATUSES
