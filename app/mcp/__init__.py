"""MCP: clients to the configured MCP servers (Streamable HTTP and stdio processes), and the
`/mcp` server over them (CONTRACT.md, "MCP: tools from MCP servers")."""

from app.mcp.registry import McpServers
from app.mcp.types import McpFailure, McpResult, McpTool, ServerRef

__all__ = ["McpFailure", "McpResult", "McpServers", "McpTool", "ServerRef"]
