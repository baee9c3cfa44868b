"""The client-facing APIs other than Chat Completions, each a pure translator to our chat
request and from our chunks: what clients can speak besides chat, in one place."""
