"""The `eval` command: a tool-calling suite run against configured models, compared."""
