"""A local Vertex AI on 127.0.0.1 (PROTOCOLS.md H.2): Gemini and Claude publisher models,
screening requests as Vertex does and playing the replies queued for each path.

- routes `/v1/projects/{project}/locations/{region}/publishers/google/models/{model}:
  generateContent` (`:streamGenerateContent?alt=sse`) and `.../publishers/anthropic/models/
  {model}:rawPredict` (`:streamRawPredict`); anything else is Google's 404;
- `Authorization: Bearer TOKEN` with a token the test's token endpoint issued
  (tests/helpers/google_token_server.py), else Google's 401 UNAUTHENTICATED;
- a Gemini body's shape checked by google-genai's own types (genai_request.py, unknown
  fields refused), and the rest by gemini_rules as AI Studio checks it; a Claude body checked by
  anthropic_rules, and refused as Vertex refuses it with a `model` in it or without an
  `anthropic_version` (Vertex's own `vertex-2023-10-16`, or an API version as the anthropic
  SDK's AnthropicVertex sends).

The official clients accept it: `anthropic`'s AnthropicVertex and `google-genai` with
`vertexai=True` (tests/e2e/test_vertex_sdk.py), so it speaks Vertex's protocol, not only what
our code expects."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.helpers import anthropic_rules, gemini_rules, genai_request
from tests.helpers.mock_anthropic import anthropic_error
from tests.helpers.mock_gemini import gemini_error, issued_signatures
from tests.helpers.mock_upstream import Exchange, MockUpstream, Reply

ROUTE = re.compile(
    r"/v1/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/publishers/"
    r"(?P<publisher>google|anthropic)/models/(?P<model>[^/:?]+):(?P<method>[A-Za-z]+)(?P<query>\?.*)?"
)
METHODS = {
    "google": {"generateContent": "", "streamGenerateContent": "?alt=sse"},
    "anthropic": {"rawPredict": "", "streamRawPredict": ""},
}


def model_path(project: str, region: str, publisher: str, model: str, method: str) -> str:
    query = METHODS[publisher][method]
    return (
        f"/v1/projects/{project}/locations/{region}/publishers/{publisher}/models/"
        f"{model}:{method}{query}"
    )


class MockVertex(MockUpstream):
    """`with MockVertex(tokens=server.issued.__contains__) as vertex: vertex.add(reply, path)`."""

    def __init__(self, token_valid: Callable[[str], bool], project: str = "test-project") -> None:
        super().__init__(screen=self._screen_request)
        self.token_valid = token_valid
        self.project = project
        self.issued: dict[tuple[str, str], str] = {}
        """Gemini's thought signatures in the replies queued or given so far: a signed call
        that comes back must carry its own (as MockGemini checks)."""

    def add(self, reply: Reply, path: str = "") -> None:
        self.issued.update(issued_signatures(reply))
        super().add(reply, path)

    def reset(self) -> None:
        super().reset()
        self.issued.clear()

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        route = ROUTE.fullmatch(exchange.path)
        refusal = self._refusal(route, exchange)
        if refusal is not None or route is None:
            return refusal
        body = exchange.body if isinstance(exchange.body, dict) else {}
        if route["publisher"] == "google":
            problems = genai_request.body_problems(exchange.body)
            problems = problems or gemini_rules.request_problems(body, self.issued)
            if problems:
                return Reply(400, json=gemini_error(400, "INVALID_ARGUMENT", problems[0]))
            return None
        problems = _claude_problems(body, counting=route["model"] == "count-tokens")
        betas = exchange.headers.get("anthropic-beta", "")
        unknown = [beta for beta in betas.split(",") if beta and beta not in CLAUDE_BETAS]
        if unknown:
            problems.insert(
                0, f"Unexpected value(s) `{','.join(unknown)}` for the `anthropic-beta` header."
            )
        if problems:
            return Reply(400, json=anthropic_error("invalid_request_error", problems[0]))
        return None

    def _refusal(self, route: re.Match[str] | None, exchange: Exchange) -> Reply | None:
        """Vertex's front end: the route, the token, the project."""
        publisher = route["publisher"] if route else ""
        if route is None or route["method"] not in METHODS[publisher]:
            return Reply(404, json=gemini_error(404, "NOT_FOUND", f"no route {exchange.path}"))
        if (route["query"] or "") != METHODS[publisher][route["method"]]:
            return Reply(400, json=gemini_error(400, "INVALID_ARGUMENT", "unexpected query"))
        token = exchange.headers.get("authorization", "").removeprefix("Bearer ")
        if not self.token_valid(token):
            message = "Request had invalid authentication credentials."
            return Reply(401, json=gemini_error(401, "UNAUTHENTICATED", message))
        if route["project"] != self.project:
            message = f"Permission denied on resource project {route['project']}."
            return Reply(403, json=gemini_error(403, "PERMISSION_DENIED", message))
        return None


CLAUDE_BETAS = frozenset(
    {
        "computer-use-2025-01-24",
        "computer-use-2025-11-24",
        "context-1m-2025-08-07",
        "context-management-2025-06-27",
        "fine-grained-tool-streaming-2025-05-14",
        "interleaved-thinking-2025-05-14",
        "output-128k-2025-02-19",
        "token-efficient-tools-2025-02-19",
        "tool-search-tool-2025-10-19",
    }
)
"""The `anthropic-beta` values Claude on Vertex AI takes; any other is refused as Vertex
refuses it (anthropics/claude-code#49370). Vertex's own refusals, as users reported them,
name `effort-2025-11-24`, `web-search-2025-03-05` (claude-code#34802, #12429),
`prompt-caching-scope-2026-01-05` (BerriAI/litellm#19984), `redact-thinking-2026-02-12`,
`advisor-tool-2026-03-01` and `thinking-token-count-2026-05-13` (Wei-Shaw/sub2api#3358)."""


def _claude_problems(body: dict[str, Any], *, counting: bool) -> list[str]:
    """Vertex's counting model (`count-tokens:rawPredict`) takes the model in the body; the
    models themselves refuse one there."""
    if counting:
        return [] if isinstance(body.get("model"), str) else ["model: Field required"]
    if "model" in body:
        return ["model: Extra inputs are not permitted"]
    version = body.get("anthropic_version")
    if not isinstance(version, str) or not version:
        return ["anthropic_version: Field required"]
    return anthropic_rules.request_problems(body)
