"""Where prompt-cache breakpoints go (CONTRACT.md, "Prompt caching"; PROTOCOLS J): a pure
function of the chat request and the model's `prompt_cache` setting, shared by the explicit
kinds (anthropic, bedrock, Claude on vertex), each of which writes them in its own form
(`cache_control` on a block, a `cachePoint` block after it).

A request that carries breakpoints of its own (`cache_control` on a content part of any role,
on a message, or on a tool, as OpenRouter and LiteLLM clients send them) keeps exactly those;
one that carries none gets, with `auto`, the last tool, the last system block and the last
content block of the last message marked: the next turn reads what this one wrote. The
provider refuses a fifth breakpoint, so more than 4 is refused here, naming the fifth.

Claude Code's billing line (`x-anthropic-billing-header: ...; cch=HASH;`) changes on every
request; anywhere but Anthropic's own API it would change the first bytes of the prompt, so
every upstream but `kind: anthropic` gets the system text without it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from app.errors import InvalidRequest
from app.openai_types import ChatRequest, Message, SystemMessage
from app.translators.base import Target

MAX_BREAKPOINTS = 4  # "A maximum of 4 blocks with cache_control may be provided"
BILLING_PREFIX = "x-anthropic-billing-header:"
EXPLICIT_KINDS = frozenset({"anthropic", "bedrock", "vertex"})


def control_of(model: BaseModel) -> dict[str, Any] | None:
    """The client's `cache_control` on a part, message or tool (pydantic keeps unknown fields
    in `__pydantic_extra__`; read directly, as this runs for every part of every request)."""
    extra = model.__pydantic_extra__
    if not extra:
        return None
    control = extra.get("cache_control")
    return control if isinstance(control, dict) else None


def client_breakpoints(request: ChatRequest) -> list[str]:
    """Where the client put breakpoints, as `param`s in prompt order (tools, then messages
    and their parts). Runs on every request to an explicit kind: the common case (none) reads
    each model's extra fields once, as attributes, and builds no string."""
    found: list[str] = []
    for i, tool in enumerate(request.tools or ()):
        if tool.__pydantic_extra__ and control_of(tool) is not None:
            found.append(f"tools[{i}].cache_control")
    for position, message in enumerate(request.messages):
        if message.__pydantic_extra__ and control_of(message) is not None:
            found.append(f"messages[{position}].cache_control")
        content = message.content
        if content.__class__ is list:
            for i, part in enumerate(content):
                if part.__pydantic_extra__ and control_of(part) is not None:
                    found.append(f"messages[{position}].content[{i}].cache_control")
    return found


def auto_marks(request: ChatRequest, target: Target) -> bool:
    """Whether the translator places the automatic breakpoints. The client's own are checked
    here too: more than 4 is a 400 naming the fifth, before anything is sent."""
    found = client_breakpoints(request)
    if len(found) > MAX_BREAKPOINTS:
        raise too_many(found[MAX_BREAKPOINTS], len(found))
    return not found and target.prompt_cache == "auto"


def too_many(param: str, count: int) -> InvalidRequest:
    return InvalidRequest(
        f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {count}.",
        param=param,
    )


def ttl_of(control: dict[str, Any]) -> str | None:
    ttl = control.get("ttl")
    return ttl if isinstance(ttl, str) else None


def ephemeral(control: dict[str, Any] | None = None) -> dict[str, Any]:
    """Anthropic's form: `{"type": "ephemeral"}`, with the client's `ttl` when it gave one."""
    ttl = ttl_of(control) if control is not None else None
    return {"type": "ephemeral", "ttl": ttl} if ttl else {"type": "ephemeral"}


def is_billing_line(text: str) -> bool:
    return text.startswith(BILLING_PREFIX)


def without_billing_line(text: str) -> str:
    """`text` less a first line that is Claude Code's billing line (with its line break)."""
    if not text.startswith(BILLING_PREFIX):
        return text
    _, _, rest = text.partition("\n")
    return rest


def without_billing_message(messages: Any) -> list[Any] | None:
    """Chat wire `messages` whose first message is a system or developer one opening with the
    billing line, less that line (a string, or its first text part; a part left empty goes);
    None when there is none, so the common request costs one look at its first message."""
    if not isinstance(messages, list) or not messages or not isinstance(messages[0], dict):
        return None
    first = messages[0]
    content = first.get("content")
    if first.get("role") not in ("system", "developer"):
        return None
    if isinstance(content, str) and is_billing_line(content):
        return [{**first, "content": without_billing_line(content)}, *messages[1:]]
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        return None
    text = content[0].get("text")
    if not isinstance(text, str) or not is_billing_line(text):
        return None
    rest = without_billing_line(text)
    parts = ([{**content[0], "text": rest}] if rest.strip() else []) + content[1:]
    return [{**first, "content": parts}, *messages[1:]]


def without_billing_text(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Text parts (Gemini's system instruction) less a first part's opening billing line."""
    text = parts[0].get("text") if parts else None
    if not isinstance(text, str) or not is_billing_line(text):
        return parts
    rest = without_billing_line(text)
    return ([{**parts[0], "text": rest}] if rest.strip() else []) + parts[1:]


def system_controls(messages: list[Message]) -> list[dict[str, Any] | None]:
    """A message-level `cache_control` per leading system or developer message, in order: the
    ones message_parts.split_system hoists into the system text (a later one stays in place
    as a turn)."""
    controls: list[dict[str, Any] | None] = []
    for message in messages:
        if not isinstance(message, SystemMessage):
            break
        controls.append(control_of(message))
    return controls


def without_billing_block(body: dict[str, Any]) -> dict[str, Any]:
    """A Messages body less the billing line: a first `system` block that is it, or the first
    line of a `system` string. The body is not changed; one without the line comes back as is."""
    system = body.get("system")
    if isinstance(system, str) and is_billing_line(system):
        return {**body, "system": without_billing_line(system)}
    if not isinstance(system, list) or not system or not isinstance(system[0], dict):
        return body
    text = system[0].get("text")
    if not isinstance(text, str) or not is_billing_line(text):
        return body
    rest = without_billing_line(text)
    kept = [{**system[0], "text": rest}] if rest.strip() else []
    return {**body, "system": kept + system[1:]}


def explicit(target: Target) -> bool:
    """Whether the target caches only where breakpoints are (anthropic, bedrock, Claude on
    vertex)."""
    kind = target.provider.kind
    return kind in ("anthropic", "bedrock") or (
        kind == "vertex" and target.upstream_model.startswith("claude")
    )


def check_input_breakpoints(items: Any) -> None:
    """A Responses `input` with more than 4 breakpoints on its content parts: a 400 naming the
    fifth as the client wrote it (`input[3].content[1].cache_control`)."""
    if not isinstance(items, list):
        return
    found = [
        f"input[{i}].content[{j}].cache_control"
        for i, item in enumerate(items)
        if isinstance(item, dict) and isinstance(item.get("content"), list)
        for j, part in enumerate(item["content"])
        if isinstance(part, dict) and "cache_control" in part
    ]
    if len(found) > MAX_BREAKPOINTS:
        raise too_many(found[MAX_BREAKPOINTS], len(found))
