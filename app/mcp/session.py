"""The two operations (`tools/list`, `tools/call`) over one connected SDK `Client`, their
results made plain values (app/mcp/types.py), and every way they can fail made one
McpFailure: the SDK is the only place that speaks the protocol."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from app.mcp.types import McpFailure, McpResult, McpTool

MAX_PAGES = 100
"""`tools/list` pages followed at most: a server whose cursor never ends cannot hang a call."""


async def list_all(client: Client) -> list[McpTool]:
    """Every page of `tools/list`, in the server's order."""
    tools: list[McpTool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(
            McpTool(
                name=tool.name,
                description=tool.description,
                input_schema=dict(tool.input_schema),
                output_schema=None if tool.output_schema is None else dict(tool.output_schema),
                annotations=None
                if tool.annotations is None
                else tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json"),
            )
            for tool in page.tools
        )
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


async def _as_given(name: str, result: CallToolResult) -> None:
    """In place of the SDK session's `validate_tool_result`: the result is relayed as the
    server gave it (CONTRACT.md: "that server's result as it came"), the end client validates
    `structuredContent`. The SDK's check cost ~0.035 ms of CPU a call (jsonschema on every
    result, bench/RESULTS.md "MCP"), listed the server's tools first for a tool its session
    had not seen listed, and made a mismatch a failure named "connection failed"."""


async def call(client: Client, name: str, arguments: dict[str, Any]) -> McpResult:
    """One `tools/call`; a tool's own failure is a result with `is_error`, as it came. The
    SDK's `call_tool` is kept for what it does besides (HEADER_MISMATCH re-list and resend,
    input-required rounds), its result validation skipped (`_as_given`)."""
    client.session.validate_tool_result = _as_given  # type: ignore[method-assign]
    result = await client.call_tool(name, arguments)
    return McpResult(
        content=[
            block.model_dump(by_alias=True, exclude_none=True, mode="json")
            for block in result.content
        ],
        structured=None if result.structured_content is None else dict(result.structured_content),
        is_error=bool(result.is_error),
    )


def leaves(error: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (nested) exception groups: the SDK's task groups wrap a
    transport's failure in one."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from leaves(inner)
    else:
        yield error


def failure(label: str, error: BaseException, status: int | None, timeout: float) -> McpFailure:
    """What went wrong, by type, never by message text. `status` is the last HTTP error status
    the server answered (None: none, or not HTTP): the SDK turns a 401 into a generic JSON-RPC
    error, and the caller must see the 401. The message holds no exception text from the
    transport (it may carry a URL with a token in it), only the server's own error message."""
    prefix = f"MCP server '{label}'"
    found = list(leaves(error))
    if status is not None:
        return McpFailure("http", status, f"{prefix}: HTTP status code {status}")
    for leaf in found:
        if isinstance(leaf, MCPError):
            return McpFailure("protocol", leaf.code, f"{prefix}: {leaf.message}")
    for leaf in found:
        if isinstance(leaf, TimeoutError):
            return McpFailure("http", None, f"{prefix}: no answer within {timeout:g} s")
    kind = type(found[0]).__name__ if found else type(error).__name__
    return McpFailure("http", None, f"{prefix}: connection failed ({kind})")
