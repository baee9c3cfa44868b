"""What the proxy does to tool calls beyond translating them: recovery from text, and more."""
