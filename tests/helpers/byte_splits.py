"""Ways to cut an upstream body into reads: a stream translator must give the same chunks
however the network splits its bytes."""

from __future__ import annotations

import random
from collections.abc import Iterator


def byte_splits(body: bytes, seed: str, random_splits: int = 20) -> Iterator[list[bytes]]:
    """One byte per read, then `random_splits` random cuttings into up to 8 pieces (seeded,
    so a failure replays)."""
    yield [body[i : i + 1] for i in range(len(body))]
    rng = random.Random(seed)
    for _ in range(random_splits):
        cuts = sorted(rng.sample(range(1, len(body)), k=min(7, len(body) - 1)))
        yield [body[start:end] for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True)]
