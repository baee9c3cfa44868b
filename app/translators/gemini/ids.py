"""Tool-call ids for Gemini's calls, which have none, carrying the call's thought signature.

Gemini puts an opaque `thoughtSignature` on a `functionCall` part (for parallel calls on the
first one) and wants it back on that same part when the history is replayed; Gemini 3 answers
400 without it (PROTOCOLS C.6). OpenAI clients keep nothing of a call but its id, name and
arguments, so the signature travels inside the id, the way LiteLLM does it:

    call_<index>_<nonce>                      a call without a signature
    call_<index>_<nonce>__sig_b<base64url>    a standard base64 signature, re-alphabeted
    call_<index>_<nonce>__sig_x<base64url>    any other signature: its UTF-8 bytes, encoded

Only `[A-Za-z0-9_-]` is used, which every provider's id pattern and OpenAI clients accept. The
`b` form is a one-to-one change of alphabet (`+/` -> `-_`, padding dropped and recomputed from
the length), so the id costs no more than the signature; the `x` form keeps any other string
exact. The nonce comes from the completion id: distinct across responses, and the same for a
response's stream and non-stream forms, so tests see fixed ids.
"""

from __future__ import annotations

import base64
import hashlib
import re

SIGNATURE_MARK = "__sig_"

_STANDARD_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_OUR_ID = re.compile(r"call_[0-9]+_[a-z0-9]+__sig_([bx])([A-Za-z0-9_-]*)")
_TO_URL_SAFE = str.maketrans("+/", "-_")
_FROM_URL_SAFE = str.maketrans("-_", "+/")


def response_nonce(completion_id: str) -> str:
    """Ten hex characters that tell one response's calls from another's."""
    return hashlib.sha256(completion_id.encode()).hexdigest()[:10]


def call_id(nonce: str, index: int, signature: str | None) -> str:
    base = f"call_{index}_{nonce}"
    if not signature:
        return base
    if _STANDARD_BASE64.fullmatch(signature):
        return f"{base}{SIGNATURE_MARK}b{signature.rstrip('=').translate(_TO_URL_SAFE)}"
    encoded = base64.urlsafe_b64encode(signature.encode()).decode().rstrip("=")
    return f"{base}{SIGNATURE_MARK}x{encoded}"


def signature_of(openai_id: str) -> str | None:
    """The signature a call id of ours carries; None for ids without one, or from elsewhere
    (another upstream's, or the client's own)."""
    match = _OUR_ID.fullmatch(openai_id)
    if match is None:
        return None
    form, payload = match.groups()
    padding = "=" * (-len(payload) % 4)
    if form == "b":
        return payload.translate(_FROM_URL_SAFE) + padding
    try:
        return base64.urlsafe_b64decode(payload + padding).decode()
    except ValueError:  # binascii.Error and UnicodeDecodeError: an id someone edited
        return None
