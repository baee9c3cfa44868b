"""The two operations (`tools/list`, `tools/call`) over one connected SDK `Client`, their
results made plain values (app/mcp/types.py), and every way they can fail made one
McpFailure: the SDK is the only place that speaks the protocol."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from app.mcp.types import FailureKind, McpFailure, McpResult, McpTool

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


def failure(
    label: str,
    error: BaseException,
    status: int | None,
    timeout: float,
    command: str | None = None,
) -> McpFailure:
    """What went wrong, by type, never by message text. `status` is the last HTTP error status
    the server answered (None: none, or not HTTP): the SDK turns a 401 into a generic JSON-RPC
    error, and the caller must see the 401. `command` is a stdio server's program, named when
    it cannot be found. The message holds no exception text from the transport (it may carry
    a URL with a token in it), only the server's own error message."""
    found = list(leaves(error))
    kind: FailureKind = "http"
    code: int | None = None
    if status is not None:
        code, detail = status, f"HTTP status code {status}"
    elif protocol := next((leaf for leaf in found if isinstance(leaf, MCPError)), None):
        kind, code, detail = "protocol", protocol.code, protocol.message
    elif any(isinstance(leaf, TimeoutError) for leaf in found):
        detail = f"no answer within {timeout:g} s"
    elif command is not None and any(isinstance(leaf, FileNotFoundError) for leaf in found):
        detail = f"its command '{command}' was not found (is it installed, and on PATH?)"
    else:
        name = type(found[0]).__name__ if found else type(error).__name__
        detail = f"connection failed ({name})"
    return McpFailure(kind, code, f"MCP server '{label}': {detail}", detail)
