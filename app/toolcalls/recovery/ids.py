"""Tool-call ids for recovered calls: `call_` + 24 alphanumerics, which OpenAI and Anthropic
clients both accept."""

from __future__ import annotations

import secrets
import string

_ALPHABET = string.ascii_letters + string.digits


def new_call_id() -> str:
    """A fresh id; `secrets` so ids from concurrent requests cannot be predicted or collide."""
    return "call_" + "".join(secrets.choice(_ALPHABET) for _ in range(24))
