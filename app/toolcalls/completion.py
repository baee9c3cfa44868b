"""A non-stream answer's tool calls: calls written as text in `content` recovered into
`tool_calls` (when the model's plan says so), then every call classified."""

from __future__ import annotations

from typing import Any

from app.toolcalls.audit import AuditedCall, Source, ToolCallAudit
from app.toolcalls.plan import ToolPlan
from app.toolcalls.recovery import new_call_id, recover
from app.toolcalls.validation import Validators


def audit_completion(
    completion: dict[str, Any], plan: ToolPlan, validators: Validators
) -> ToolCallAudit:
    """Recovers and classifies in place, for every choice; arguments are never changed."""
    audit = ToolCallAudit()
    choices = completion.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        recovered = _recover(choice, message, plan) if plan.recover is not None else 0
        tool_calls = message.get("tool_calls")
        tool_calls = tool_calls if isinstance(tool_calls, list) else []
        for position, call in enumerate(tool_calls):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            name, arguments = function.get("name"), function.get("arguments")
            name = name if isinstance(name, str) else ""
            arguments = arguments if isinstance(arguments, str) else ""
            source: Source = (
                "recovered" if position >= len(tool_calls) - recovered else "structured"
            )
            verdict = validators.classify(name, arguments, plan.tools)
            audit.calls.append(AuditedCall(name, arguments, source, verdict))
    return audit


def _recover(choice: dict[str, Any], message: dict[str, Any], plan: ToolPlan) -> int:
    """Splits `<think>` off into `reasoning_content` and moves text-written calls to
    `tool_calls` (after any structured ones); `content` keeps the prose, or becomes null.
    Returns how many calls were recovered."""
    content = message.get("content")
    if not isinstance(content, str) or not content:
        return 0
    assert plan.recover is not None
    result = recover(content, plan.tools, plan.recover)
    if not result.calls and result.reasoning is None:
        return 0  # nothing recognised: the content stays exactly as the model wrote it
    message["content"] = result.content
    if result.reasoning is not None:
        message["reasoning_content"] = (message.get("reasoning_content") or "") + result.reasoning
    if result.calls:
        calls = message.get("tool_calls") or []
        calls += [
            {
                "id": new_call_id(),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in result.calls
        ]
        message["tool_calls"] = calls
        choice["finish_reason"] = "tool_calls"
    return len(result.calls)
