"""`anthropic-beta` values for Claude on a cloud platform (CONTRACT.md, "Codex and Claude
Code"): each platform takes only some of Anthropic's betas and refuses a request naming any
other ("invalid beta flag"), so a client's values are filtered by the platform's documented
list, or by the provider's `betas` setting, which replaces it. The ones left out are named in
the answer's `x-toolrelay-warning`, never sent."""

from __future__ import annotations

from collections.abc import Iterable

from app.config import ProviderConfig

VERTEX_BETAS = frozenset(
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
"""Claude on Vertex AI (Google's Claude pages: the features in preview there and their beta
headers). Vertex refuses `effort-2025-11-24` and `web-search-2025-03-05` with "Unexpected
value(s) ... for the `anthropic-beta` header" (anthropics/claude-code#34802, #12429), as it
does the newer values Claude Code sends (`prompt-caching-scope-2026-01-05`,
`redact-thinking-2026-02-12`, ...: BerriAI/litellm#19984), so none of them is listed."""
BEDROCK_BETAS = frozenset(
    {
        "computer-use-2024-10-22",
        "computer-use-2025-01-24",
        "computer-use-2025-11-24",
        "context-1m-2025-08-07",
        "context-management-2025-06-27",
        "dev-full-thinking-2025-05-14",
        "effort-2025-11-24",
        "interleaved-thinking-2025-05-14",
        "output-128k-2025-02-19",
        "token-efficient-tools-2025-02-19",
        "tool-examples-2025-10-29",
        "tool-search-tool-2025-10-19",
    }
)
"""Claude on Bedrock: the `anthropic_beta` values of Bedrock's Anthropic Claude Messages
request parameters."""


def split_betas(
    given: Iterable[str], provider: ProviderConfig, documented: frozenset[str]
) -> tuple[list[str], str | None]:
    """The values to send, in the client's order, and a warning naming the others."""
    taken = documented if provider.betas is None else frozenset(provider.betas)
    kept: list[str] = []
    left: list[str] = []
    for value in given:
        (kept if value in taken else left).append(value)
    if not left:
        return kept, None
    return kept, f"anthropic-beta values this platform does not take left out: {', '.join(left)}"


def header_betas(header: str | None) -> list[str]:
    """An `anthropic-beta` header's comma-separated values."""
    if not header:
        return []
    return [value.strip() for value in header.split(",") if value.strip()]
