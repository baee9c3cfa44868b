"""A local Azure OpenAI on 127.0.0.1, screening requests as Azure does and answering in Azure's
own shapes (PROTOCOLS.md H.3, and Azure's content-streaming docs):

- routes: `/openai/deployments/{deployment}/chat/completions?api-version=V` (and
  `/embeddings`), or the v1 API's `/openai/v1/chat/completions` with the deployment as
  `model`; an unknown deployment is Azure's 404 `DeploymentNotFound`, a deployments route
  without `api-version` its 404 too;
- the key in `api-key` (or a Bearer token), else Azure's 401;
- answers with `prompt_filter_results` and each choice's `content_filter_results`; streams
  open with a chunk of `choices: []`, `object: ""` and the prompt's filter results, carry
  filter results beside every delta, and end (asynchronous filter) with a filter-only chunk
  after the finish; a prompt holding BLOCKED is refused by the filter (400 `content_filter`).

The openai SDK's `AzureOpenAI` client accepts what it answers (tests/e2e/test_azure_sdk.py),
so the double speaks Azure's protocol, not only what our code expects."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.helpers.mock_upstream import Exchange, MockUpstream, Reply, openai_frames
from tests.helpers.upstream_answers import CALLS

DEPLOYMENT_ROUTE = re.compile(r"/openai/deployments/([^/]+)/(chat/completions|embeddings)")
V1_ROUTES = {
    "/openai/v1/chat/completions": "chat/completions",
    "/openai/v1/embeddings": "embeddings",
}
BLOCKED = "BLOCKED"
SAFE = {"filtered": False, "severity": "safe"}
FILTERS = dict.fromkeys(("hate", "self_harm", "sexual", "violence"), SAFE)
PROMPT_FILTERS = [{"prompt_index": 0, "content_filter_results": FILTERS}]
MODEL = "gpt-4o-2024-11-20"
TEXT = "Sunny in Paris."
USAGE = {"prompt_tokens": 19, "completion_tokens": 9, "total_tokens": 28}


def azure_error(http_status: int, code: str, message: str, **extra: Any) -> Reply:
    return Reply(http_status, json={"error": {"code": code, "message": message, **extra}})


class MockAzure(MockUpstream):
    """`with MockAzure(api_key, deployments={"my-gpt": ...}) as azure:`; answers by script:
    both tools called while the conversation holds no tool result and tools were offered,
    else text."""

    def __init__(self, api_key: str, deployments: tuple[str, ...] = ("my-gpt",)) -> None:
        super().__init__(screen=self._answer)
        self.api_key = api_key
        self.deployments = deployments

    def _answer(self, exchange: Exchange) -> Reply:
        url = urlsplit(exchange.path)
        route = _route(url.path, parse_qs(url.query), exchange.body)
        if isinstance(route, Reply):
            return route
        deployment, operation = route
        if deployment not in self.deployments:
            message = "The API deployment for this resource does not exist."
            return azure_error(404, "DeploymentNotFound", message)
        bearer = exchange.headers.get("authorization", "").removeprefix("Bearer ")
        if self.api_key not in (exchange.headers.get("api-key"), bearer):
            message = "Access denied due to invalid subscription key or wrong API endpoint."
            return azure_error(401, "401", message)
        if operation == "embeddings":
            return _embeddings(exchange.body)
        return _chat(exchange.body)


def _route(path: str, query: dict[str, list[str]], body: Any) -> tuple[str, str] | Reply:
    found = DEPLOYMENT_ROUTE.fullmatch(path)
    if found is not None:
        if not query.get("api-version"):
            return azure_error(404, "404", "Resource not found")
        return found.group(1), found.group(2)
    operation = V1_ROUTES.get(path)
    if operation is None:
        return azure_error(404, "404", "Resource not found")
    model = body.get("model") if isinstance(body, dict) else None
    return (model if isinstance(model, str) else ""), operation


def _chat(body: dict[str, Any]) -> Reply:
    messages = body.get("messages") or []
    if any(BLOCKED in str(message.get("content")) for message in messages):
        filtered = {**FILTERS, "violence": {"filtered": True, "severity": "high"}}
        inner = {"code": "ResponsibleAIPolicyViolation", "content_filter_result": filtered}
        message = (
            "The response was filtered due to the prompt triggering Azure OpenAI's content "
            "management policy."
        )
        return azure_error(
            400, "content_filter", message, param="prompt", status=400, innererror=inner
        )
    calling = bool(body.get("tools")) and not any(m.get("role") == "tool" for m in messages)
    if body.get("stream"):
        return Reply(frames=openai_frames(_stream(calling, body)))
    return Reply(json=_completion(calling))


def _completion(calling: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None if calling else TEXT}
    if calling:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in CALLS
        ]
    choice = {
        "index": 0,
        "message": message,
        "finish_reason": "tool_calls" if calling else "stop",
        "logprobs": None,
        "content_filter_results": {} if calling else FILTERS,
    }
    return {
        "id": "chatcmpl-azure-1",
        "object": "chat.completion",
        "created": 1748977994,
        "model": MODEL,
        "system_fingerprint": "fp_azure",
        "prompt_filter_results": PROMPT_FILTERS,
        "choices": [choice],
        "usage": USAGE,
    }


def _chunk(choices: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-azure-1",
        "object": "chat.completion.chunk",
        "created": 1748977994,
        "model": MODEL,
        "system_fingerprint": "fp_azure",
        "choices": choices,
        **fields,
    }


def _delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
    return _chunk([{**choice, "content_filter_results": FILTERS}])


def _stream(calling: bool, body: dict[str, Any]) -> list[dict[str, Any]]:
    opening = {"id": "", "object": "", "created": 0, "model": "", "choices": []}
    chunks = [{**opening, "prompt_filter_results": PROMPT_FILTERS}]
    chunks.append(
        _chunk(
            [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": ""},
                    "finish_reason": None,
                    "logprobs": None,
                    "content_filter_results": {},
                }
            ]
        )
    )
    if calling:
        for index, (call_id, name, arguments) in enumerate(CALLS):
            first = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            chunks.append(_delta({"tool_calls": [first]}))
            for part in (arguments[:10], arguments[10:]):
                chunks.append(
                    _delta({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
                )
        chunks.append(_delta({}, "tool_calls"))
    else:
        chunks += [_delta({"content": TEXT[:6]}), _delta({"content": TEXT[6:]}), _delta({}, "stop")]
    offsets = {"check_offset": 0, "start_offset": 0, "end_offset": len(TEXT)}
    chunks.append(
        _chunk(
            [
                {
                    "index": 0,
                    "finish_reason": None,
                    "content_filter_results": FILTERS,
                    "content_filter_offsets": offsets,
                }
            ],
            object="",
        )
    )
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append(_chunk([], usage=USAGE))
    return chunks


def _embeddings(body: Any) -> Reply:
    given = body.get("input") if isinstance(body, dict) else None
    texts = [given] if isinstance(given, str) else list(given or [])
    data = [
        {"object": "embedding", "index": n, "embedding": [0.5, -0.25, float(len(str(text)))]}
        for n, text in enumerate(texts)
    ]
    usage = {"prompt_tokens": 3 * len(texts), "total_tokens": 3 * len(texts)}
    return Reply(
        json={"object": "list", "data": data, "model": "text-embedding-3-small", "usage": usage}
    )
