"""A local Gemini on 127.0.0.1: the scripted MockUpstream, screening every request the way the
Gemini API does (gemini_rules, the key header, the URL) and answering Gemini's own 400 when it
fails; it remembers the thought signatures its scripted answers hand out, so a later request
that drops or alters one is refused. Also canned Gemini answers for tests."""

from __future__ import annotations

import hashlib
import json
import re
import struct
from typing import Any

from tests.helpers.gemini_rules import Signatures, call_key, request_problems
from tests.helpers.mock_upstream import Exchange, Frame, MockUpstream, Reply
from tests.helpers.upstream_answers import CALLS

MODEL = "gemini-2.5-flash"
GEMINI_TEXT = "Checking both."
SIGNATURE = "CiQBcsjafE+ZQ/v1dGhvdWdodHMgYWJvdXQgdGhlIHdlYXRoZXI="
USAGE_METADATA = {
    "promptTokenCount": 82,
    "candidatesTokenCount": 30,
    "thoughtsTokenCount": 11,
    "totalTokenCount": 123,
}
_PATH = re.compile(r"/v1beta/models/([^/:?]+):(generateContent|streamGenerateContent\?alt=sse)")
_EMBED_PATH = re.compile(r"/v1beta/models/([^/:?]+):batchEmbedContents")
DEFAULT_EMBEDDING_SIZE = 8
"""The mock's vector size when a request gives no `outputDimensionality` (small, so tests
can compare whole vectors)."""


def gemini_path(model: str = MODEL, *, stream: bool = False) -> str:
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    return f"/v1beta/models/{model}:{method}"


def gemini_error(code: int, status: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, **extra}}


class MockGemini(MockUpstream):
    """`with MockGemini(api_key) as gemini: gemini.answer(Reply(...), stream=...)`."""

    def __init__(self, api_key: str) -> None:
        super().__init__(screen=self._screen)
        self.api_key = api_key
        self.issued: dict[tuple[str, str], str] = {}

    def answer(self, reply: Reply, *, stream: bool = False, model: str = MODEL) -> None:
        self.issued.update(issued_signatures(reply))
        self.add(reply, gemini_path(model, stream=stream))

    def reset(self) -> None:
        super().reset()
        self.issued.clear()

    def gemini_requests(self) -> list[Exchange]:
        return [exchange for exchange in self.exchanges if _PATH.fullmatch(exchange.path)]

    def embed_requests(self) -> list[Exchange]:
        return [exchange for exchange in self.exchanges if _EMBED_PATH.fullmatch(exchange.path)]

    def _screen(self, exchange: Exchange) -> Reply | None:
        embed = _EMBED_PATH.fullmatch(exchange.path)
        if exchange.method != "POST" or not (embed or _PATH.fullmatch(exchange.path)):
            return Reply(404, json=gemini_error(404, "NOT_FOUND", f"no route {exchange.path}"))
        if exchange.headers.get("x-goog-api-key") != self.api_key:
            details = [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
            ]
            message = "API key not valid. Please pass a valid API key."
            return Reply(400, json=gemini_error(400, "INVALID_ARGUMENT", message, details=details))
        if embed:
            return self._embed(exchange, embed.group(1))
        problems = request_problems(exchange.body, self.issued)
        if problems:
            return Reply(400, json=gemini_error(400, "INVALID_ARGUMENT", "\n".join(problems)))
        return None

    def _embed(self, exchange: Exchange, model: str) -> Reply | None:
        """batchEmbedContents as Gemini has it: a 400 for a request it would refuse; a reply
        queued for the path (an error to play) if any; else one vector per request, in order,
        from `gemini_embedding`."""
        problems = embed_problems(exchange.body, model)
        if problems:
            return Reply(400, json=gemini_error(400, "INVALID_ARGUMENT", "\n".join(problems)))
        if self._replies.get(exchange.path):
            return None
        embeddings = [
            {"values": gemini_embedding(one["content"]["parts"][0]["text"], one)}
            for one in exchange.body["requests"]
        ]
        return Reply(json={"embeddings": embeddings})


def embed_path(model: str = MODEL) -> str:
    return f"/v1beta/models/{model}:batchEmbedContents"


_EMBED_REQUEST_FIELDS = {"model", "content", "taskType", "title", "outputDimensionality"}


def embed_problems(body: Any, model: str) -> list[str]:
    """Why Gemini would refuse a batchEmbedContents body (empty if it would not): `requests`
    non-empty, each naming the URL's model as `models/ID`, with `content.parts[].text`, an
    optional positive `outputDimensionality`, and no field Gemini does not know."""
    if not isinstance(body, dict) or set(body) != {"requests"}:
        return ["Invalid JSON payload received: the body must be exactly {requests: [...]}"]
    requests = body["requests"]
    if not isinstance(requests, list) or not requests:
        return ["* BatchEmbedContentsRequest.requests: contents is not specified"]
    problems: list[str] = []
    for position, one in enumerate(requests):
        where = f"requests[{position}]"
        if not isinstance(one, dict):
            problems.append(f"{where}: not an object")
            continue
        unknown = set(one) - _EMBED_REQUEST_FIELDS
        if unknown:
            problems.append(f"Invalid JSON payload received. Unknown name {sorted(unknown)}")
        if one.get("model") != f"models/{model}":
            problems.append(f"{where}.model: must be models/{model}, got {one.get('model')!r}")
        parts = (
            (one.get("content") or {}).get("parts")
            if isinstance(one.get("content"), dict)
            else None
        )
        if not isinstance(parts, list) or not parts:
            problems.append(f"{where}.content.parts: must be non-empty")
        elif not all(
            isinstance(part, dict) and isinstance(part.get("text"), str) for part in parts
        ):
            problems.append(f"{where}.content.parts[]: each needs a text")
        size = one.get("outputDimensionality")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
            problems.append(f"{where}.outputDimensionality: must be a positive integer")
    return problems


def gemini_embedding(text: str, request: dict[str, Any] | None = None) -> list[float]:
    """The mock's vector for `text`: deterministic, `outputDimensionality` long (or
    DEFAULT_EMBEDDING_SIZE), values that float32 cannot hold exactly (so a base64 round trip
    shows its rounding)."""
    size = (request or {}).get("outputDimensionality") or DEFAULT_EMBEDDING_SIZE
    digest = hashlib.shake_256(text.encode()).digest(4 * size)
    words = struct.unpack(f"<{size}I", digest)
    return [word / 0xFFFFFFFF - 0.5 + 1e-9 * position for position, word in enumerate(words)]


def issued_signatures(reply: Reply) -> Signatures:
    """The signatures a scripted answer hands out, by the call they belong to: the one they
    came on, or, for a signature on a trailing part with no text after calls that had none,
    the first of those calls (C.5: it "can arrive on a trailing part with empty text, after
    the text/calls it belongs to")."""
    bodies = [reply.json] if reply.frames is None else [frame.data for frame in reply.frames]
    parts = [
        part
        for body in bodies
        if isinstance(body, dict)
        for candidate in body.get("candidates", [])
        for part in (candidate.get("content") or {}).get("parts", [])
    ]
    issued: dict[tuple[str, str], str] = {}
    calls: list[tuple[str, str]] = []
    for part in parts:
        signature = part.get("thoughtSignature")
        if "functionCall" in part:
            calls.append(call_key(part["functionCall"]))
            if signature:
                issued[calls[-1]] = signature
        elif signature and not part.get("text") and calls and not issued:
            issued[calls[0]] = signature
    return issued


# --- canned answers: the same two parallel calls as tests.helpers.upstream_answers.CALLS ------


def call_parts(*, signed: bool = True) -> list[dict[str, Any]]:
    """The two calls as functionCall parts; only the first signed, as Gemini does (C.6)."""
    parts: list[dict[str, Any]] = []
    for position, (_, name, arguments) in enumerate(CALLS):
        part: dict[str, Any] = {"functionCall": {"name": name, "args": json.loads(arguments)}}
        if signed and position == 0:
            part["thoughtSignature"] = SIGNATURE
        parts.append(part)
    return parts


def gemini_answer(
    parts: list[dict[str, Any]], finish: str | None = "STOP", usage: Any = USAGE_METADATA
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    answer: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL}
    if usage is not None:
        answer["usageMetadata"] = usage
    return answer


def gemini_tool_answer(*, text: bool = True, signed: bool = True) -> dict[str, Any]:
    parts = [{"text": GEMINI_TEXT}] if text else []
    return gemini_answer(parts + call_parts(signed=signed))


def gemini_tool_frames(*, signed: bool = True) -> list[Frame]:
    """Text in two deltas, the calls in separate frames, the finish in a later empty frame
    (C.5: all three happen)."""
    first, second = call_parts(signed=signed)
    early_usage = {"promptTokenCount": 82, "totalTokenCount": 82}
    return [
        Frame(gemini_answer([{"text": GEMINI_TEXT[:8]}], finish=None, usage=early_usage)),
        Frame(gemini_answer([{"text": GEMINI_TEXT[8:]}], finish=None, usage=early_usage)),
        Frame(gemini_answer([first], finish=None, usage=early_usage)),
        Frame(gemini_answer([second], finish=None, usage=early_usage)),
        Frame(gemini_answer([{"text": ""}], finish="STOP")),
    ]
