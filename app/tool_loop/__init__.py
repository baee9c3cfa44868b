"""The Responses API's hosted `mcp` tool, run by ToolRelay for any model (CONTRACT.md, "MCP"):
list each server's tools, offer them as functions, run the model's calls to them, and ask the
model again, one dispatch per round. It sits above routing and beside api/; the Responses
face only gains the item and event shapes."""
