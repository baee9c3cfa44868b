"""The Anthropic Messages API as a second client-facing API: pure translation between its
wire format and our chat requests and chunks."""
