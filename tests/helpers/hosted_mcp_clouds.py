"""The cloud kinds' doubles scripted like hosted_mcp.py's models (tests/e2e/
test_hosted_mcp_clouds.py): Claude on Bedrock (Converse, whole and stream), Gemini and Claude on
Vertex AI (generateContent / rawPredict and their streams), an Azure OpenAI deployment. Each
first screens the request as its validating double does (key, token or signature; the body by
its kind's rules; a Gemini call's thought signature must come back), then does what
hosted_mcp.SCRIPT says: call the scripted functions until a tool result is in the
conversation, then answer "RESULT: <result>". They are here, not in hosted_mcp.py, because
that module is another test's, and four more doubles do not fit it."""

from __future__ import annotations

from typing import Any

from tests.helpers.codex_upstreams import tool_result
from tests.helpers.google_token_server import GoogleTokenServer
from tests.helpers.hosted_mcp import SCRIPT, answer_text, openai_reply
from tests.helpers.mock_anthropic import message, message_events
from tests.helpers.mock_azure import FILTERS, PROMPT_FILTERS, MockAzure
from tests.helpers.mock_bedrock import MockBedrock, converse_answer, converse_stream
from tests.helpers.mock_gemini import gemini_answer, issued_signatures
from tests.helpers.mock_upstream import Exchange, Frame, Reply, anthropic_frames
from tests.helpers.mock_vertex import ROUTE, MockVertex

SIGNATURE = "VmVydGV4IHNpZ25lZCBpdA=="
"""The thought signature the Vertex Gemini double puts on each call (it must come back)."""


def calling(conversation: list[dict[str, Any]]) -> bool:
    """The script's rule: call while no tool result is in the conversation."""
    return tool_result(conversation) is None and bool(SCRIPT.calls)


def said(conversation: list[dict[str, Any]]) -> str:
    return answer_text(str(tool_result(conversation)))


class ScriptedBedrock(MockBedrock):
    """Converse (whole) or ConverseStream, by the route the proxy chose; toolUse ids as
    Bedrock gives them."""

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen_request(exchange)
        if refusal is not None:
            return refusal
        messages = exchange.body["messages"]
        calls = [
            (f"tooluse_{i}", name, args) for i, (name, args) in enumerate(SCRIPT.calls)
        ] if calling(messages) else []  # fmt: skip
        text = "" if calls else said(messages)
        if exchange.path.partition("?")[0].endswith("/converse-stream"):
            return converse_stream(text, calls)
        return converse_answer(text, calls)


def claude_reply(body: dict[str, Any], stream: bool) -> Reply:
    """Claude's Messages answer (Vertex's rawPredict, or its events for streamRawPredict)."""
    if calling(body["messages"]):
        uses = [
            {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args}
            for i, (name, args) in enumerate(SCRIPT.calls)
        ]
        whole = message(uses, "tool_use")
    else:
        whole = message([{"type": "text", "text": said(body["messages"])}], "end_turn")
    return Reply(frames=anthropic_frames(message_events(whole))) if stream else Reply(json=whole)


def gemini_reply(body: dict[str, Any], stream: bool) -> Reply:
    """Gemini's answer, each call signed (as Gemini 2.5+ signs a turn's calls)."""
    parts: list[dict[str, Any]]
    if calling(body["contents"]):
        parts = [
            {"functionCall": {"name": name, "args": args}, "thoughtSignature": SIGNATURE}
            for name, args in SCRIPT.calls
        ]
    else:
        parts = [{"text": said(body["contents"])}]
    answer = gemini_answer(parts)
    return Reply(frames=[Frame(answer)]) if stream else Reply(json=answer)


class ScriptedVertex(MockVertex):
    """`publishers/google` (Gemini) and `publishers/anthropic` (Claude) on one double; the
    token must be one the token endpoint double issued."""

    def __init__(self, tokens: GoogleTokenServer) -> None:
        super().__init__(lambda token: token in tokens.issued)

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen_request(exchange)
        if refusal is not None:
            return refusal
        route = ROUTE.fullmatch(exchange.path)
        assert route is not None  # the screen refused every other path
        stream = route["method"].startswith("stream")
        if route["publisher"] == "anthropic":
            return claude_reply(exchange.body, stream)
        reply = gemini_reply(exchange.body, stream)
        self.issued.update(issued_signatures(reply))
        return reply


class ScriptedAzure(MockAzure):
    """The script as an Azure deployment answers it: the openai kind's script in Azure's
    shapes (prompt filter results, each choice's filter results, a stream opening with a
    `choices: []` chunk and closing with the asynchronous filter's chunk)."""

    def _answer(self, exchange: Exchange) -> Reply:
        screened = super()._answer(exchange)
        if screened.status != 200:
            return screened
        reply = openai_reply(exchange)
        if reply.frames is None:
            whole = reply.json | {"prompt_filter_results": PROMPT_FILTERS}
            for choice in whole["choices"]:
                choice["content_filter_results"] = FILTERS
            return Reply(json=whole)
        return Reply(frames=azure_frames([frame.data for frame in reply.frames]))


def azure_frames(chunks: list[Any]) -> list[Frame]:
    """OpenAI chunks (then "[DONE]") as Azure streams them."""
    opening = {"id": "", "object": "", "created": 0, "model": "", "choices": []}
    framed: list[Any] = [opening | {"prompt_filter_results": PROMPT_FILTERS}]
    for chunk in chunks:
        if not isinstance(chunk, dict) or not chunk["choices"]:
            framed.append(chunk)
            continue
        choices = [choice | {"content_filter_results": FILTERS} for choice in chunk["choices"]]
        framed.append(chunk | {"choices": choices})
        if chunk["choices"][0].get("finish_reason"):
            closing = {"index": 0, "finish_reason": None, "content_filter_results": FILTERS}
            framed.append(chunk | {"object": "", "choices": [closing]})
    return [Frame(chunk) for chunk in framed]
