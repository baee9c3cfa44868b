"""Thinking kept across a tool loop: Anthropic's signed thinking blocks, stored by the
tool-call ids of the answer they came with and put back when a client replays that answer
without them (CONTRACT.md, "Reasoning")."""
