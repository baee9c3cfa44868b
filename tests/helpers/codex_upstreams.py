"""The scripted upstreams tests/e2e/test_codex.py puts Codex in front of, one per kind (openai,
gemini, anthropic, Claude on Bedrock, Gemini and Claude on Vertex AI). Each is its kind's
validating double (key or SigV4 signature or token, and body, checked first) answering like a
model would: the agent turn calls the shell tool `exec_command` with COMMAND, the turn after
the tool result answers ANSWER. They live here, not in the test module, because six doubles
and the test's checks do not fit one module."""

from __future__ import annotations

import json
from typing import Any

from tests.helpers.google_token_server import GoogleTokenServer
from tests.helpers.mock_anthropic import MockAnthropic, message_events
from tests.helpers.mock_anthropic import message as anthropic_message
from tests.helpers.mock_bedrock import MockBedrock, converse_stream
from tests.helpers.mock_gemini import MockGemini, gemini_answer, issued_signatures
from tests.helpers.mock_upstream import (
    OPENAI_PATH,
    Exchange,
    Frame,
    MockUpstream,
    Reply,
    anthropic_frames,
    openai_frames,
    refused,
)
from tests.helpers.mock_vertex import ROUTE, MockVertex
from tests.helpers.upstream_answers import openai_text_chunks

COMMAND = "echo codex-ok > out.txt"
ANSWER = "done"
SIGNATURE = "Q29kZXggb24gR2VtaW5p"
CALL_ID = "call_codex_1"  # the call id as the openai kind's upstream gives it
TOOLU_ID = "toolu_codex_1"  # ... as Claude's Messages API (Anthropic, Vertex) gives it
TOOLUSE_ID = "tooluse_codex_1"  # ... as Bedrock's Converse gives it


def tool_result(messages: list[dict[str, Any]]) -> str | None:
    """What the shell tool returned, once the conversation has a tool result, in any kind's
    shape: an OpenAI tool message, a Gemini functionResponse, an Anthropic tool_result, a
    Converse toolResult."""
    for message in messages:
        if message.get("role") == "tool":
            return str(message["content"])
        for part in message.get("parts") or ():
            if "functionResponse" in part:
                return json.dumps(part["functionResponse"]["response"])
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return json.dumps(block.get("content"))
            if isinstance(block, dict) and "toolResult" in block:
                return json.dumps(block["toolResult"]["content"])
    return None


class ScriptedOpenAI(MockUpstream):
    """Answers by what it is asked: call `exec_command`, then (given its result) say done."""

    def __init__(self, api_key: str) -> None:
        super().__init__(screen=self._reply)
        self.api_key = api_key

    def _reply(self, exchange: Exchange) -> Reply | None:
        if (refusal := refused(exchange, OPENAI_PATH, self.api_key)) is not None:
            return refusal
        if tool_result(exchange.body["messages"]) is not None:
            return Reply(frames=openai_frames(openai_text_chunks(ANSWER)))
        arguments = json.dumps({"cmd": COMMAND})
        call = {"index": 0, "id": CALL_ID, "type": "function"}
        call["function"] = {"name": "exec_command", "arguments": arguments}
        chunks = openai_text_chunks()
        delta = {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}
        chunks.insert(1, chunks[1] | {"choices": [delta]})
        chunks[-1]["choices"][0]["finish_reason"] = "tool_calls"
        return Reply(frames=openai_frames(chunks))


def gemini_reply(body: dict[str, Any]) -> Reply:
    """The script as Gemini streams it, the call signed as Gemini signs it."""
    if tool_result(body["contents"]) is not None:
        parts: list[dict[str, Any]] = [{"text": ANSWER}]
    else:
        call = {"name": "exec_command", "args": {"cmd": COMMAND}}
        parts = [{"functionCall": call, "thoughtSignature": SIGNATURE}]
    return Reply(frames=[Frame(gemini_answer(parts))])


def claude_reply(body: dict[str, Any]) -> Reply:
    """The script as Claude streams it (Anthropic's events: the Messages API and Vertex)."""
    if tool_result(body["messages"]) is not None:
        answer = anthropic_message([{"type": "text", "text": ANSWER}], "end_turn")
    else:
        use = {"type": "tool_use", "id": TOOLU_ID, "name": "exec_command"}
        answer = anthropic_message([use | {"input": {"cmd": COMMAND}}], "tool_use")
    return Reply(frames=anthropic_frames(message_events(answer)))


class ScriptedGemini(MockGemini):
    """The script as Gemini streams it, screened as Gemini screens requests (its own
    signatures must come back)."""

    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        reply = gemini_reply(exchange.body)
        self.issued.update(issued_signatures(reply))
        return reply


class ScriptedAnthropic(MockAnthropic):
    """The script as Anthropic streams it, screened as the Messages API screens."""

    def _screen(self, exchange: Exchange) -> Reply | None:
        return super()._screen(exchange) or claude_reply(exchange.body)


class ScriptedBedrock(MockBedrock):
    """The script as a ConverseStream; the double checks every SigV4 signature and Converse
    body first (as tests/e2e/test_claude_code.py's ScriptedBedrock)."""

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        answered = super()._screen_request(exchange)
        if answered is not None:
            return answered
        if tool_result(exchange.body["messages"]) is not None:
            return converse_stream(ANSWER)
        return converse_stream("", [(TOOLUSE_ID, "exec_command", {"cmd": COMMAND})])


class ScriptedVertex(MockVertex):
    """The script as Gemini (`publishers/google`) and Claude (`publishers/anthropic`) on
    Vertex AI stream it; the double checks the token from the token endpoint double and the
    body first (a signed Gemini call must come back with the signature issued here)."""

    def __init__(self, tokens: GoogleTokenServer) -> None:
        super().__init__(lambda token: token in tokens.issued)

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen_request(exchange)
        if refusal is not None:
            return refusal
        route = ROUTE.fullmatch(exchange.path)
        if route is not None and route["publisher"] == "anthropic":
            return claude_reply(exchange.body)
        reply = gemini_reply(exchange.body)
        self.issued.update(issued_signatures(reply))
        return reply
