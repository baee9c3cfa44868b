"""Tool-call ids that carry Gemini's thought signatures: they round-trip exactly, use only
characters every client and provider accepts, and ids from elsewhere carry nothing."""

from __future__ import annotations

import base64
import random
import re

import pytest

from app.translators.gemini.ids import call_id, response_nonce, signature_of

SAFE_ID = re.compile(r"[A-Za-z0-9_-]+")
NONCE = response_nonce("chatcmpl-test")


def random_signatures() -> list[str]:
    rng = random.Random(7)
    standard = [base64.b64encode(rng.randbytes(size)).decode() for size in range(0, 40)]
    long = [base64.b64encode(rng.randbytes(3000)).decode()]
    return [*standard, *long, "CiQB+/==", "url-safe_already", "no padding/", "é ☃ \x00", "a=b"]


@pytest.mark.parametrize("signature", random_signatures())
def test_signatures_round_trip_exactly_in_safe_characters(signature: str) -> None:
    openai_id = call_id(NONCE, 3, signature)
    assert SAFE_ID.fullmatch(openai_id)
    assert signature_of(openai_id) == (signature or None)


def test_standard_base64_costs_no_more_than_the_signature() -> None:
    signature = base64.b64encode(bytes(range(256)) * 4).decode()
    assert len(call_id(NONCE, 0, signature)) <= len(f"call_0_{NONCE}__sig_b") + len(signature)


def test_ids_are_distinct_per_call_and_per_response() -> None:
    ids = {
        call_id(response_nonce(f"chatcmpl-{n}"), index, None)
        for n in range(50)
        for index in range(5)
    }
    assert len(ids) == 250


@pytest.mark.parametrize(
    "openai_id",
    [
        "call_abc123",
        "toolu_01NRLabsLyVHZPKxbKvkfSMn",
        f"call_0_{NONCE}",
        "functions.get_weather:0",
        f"prefix_call_0_{NONCE}__sig_bQUJD",
        f"call_0_{NONCE}__sig_xnot*base64",
        f"call_0_{NONCE}__sig_x_w",  # decodes to bytes that are not UTF-8
    ],
)
def test_ids_without_a_signature_of_ours_carry_none(openai_id: str) -> None:
    assert signature_of(openai_id) is None
