"""Numbers for schema_sample: the candidates a `number` or `integer` schema is tried with, and
the multiples of a `multipleOf` near each. Pure."""

from __future__ import annotations

import math
from typing import Any

from app.translators.schema_refs import number_bounds


def number_candidates(schema: dict[str, Any], variant: int, *, integer: bool) -> list[int | float]:
    """1 for a whole number (`integer`), 1.5 for a fraction (a `number` asking for one),
    plus the variant, if the bounds allow; else the nearest edge inside them; else the middle
    of the range."""
    low, low_open, high, high_open = number_bounds(schema)
    candidates: list[int | float] = [1 + variant if integer else 1.5 + variant]
    if low is not None:
        edge = (math.floor(low) + 1 if low_open else math.ceil(low)) if integer else low
        candidates.append(edge + 1 if low_open and not integer else edge)
        candidates.append(edge + variant)
    if high is not None:
        edge = (math.ceil(high) - 1 if high_open else math.floor(high)) if integer else high
        candidates.append(edge - variant)
    if low is not None and high is not None:
        middle = (low + high) / 2
        candidates.append(math.floor(middle) if integer else middle)
    return candidates


def multiples_near(candidate: float, step: Any, *, integer: bool) -> list[int | float]:
    """`candidate` itself, or with `multipleOf`, the multiples of `step` around it (for
    integers, only the whole ones)."""
    if not isinstance(step, int | float) or isinstance(step, bool) or step <= 0:
        return [candidate]
    base = math.ceil(candidate / step)
    multiples: list[int | float] = []
    for k in [base + i for i in range(10)] + [base - i for i in range(1, 10)]:
        value = k * step
        if isinstance(value, float) and value.is_integer() and (integer or isinstance(step, int)):
            value = int(value)
        if not integer or isinstance(value, int):
            multiples.append(value)
    return multiples
