"""What each model costs (CONTRACT.md, "Spend: prices, cost, budgets"): its own `price` in
config, else the entry of LiteLLM's model_prices_and_context_window.json for its upstream id.
Everything is resolved once at start-up, so pricing an answer is a dict lookup and a few
multiplications; with nothing priced at all `for_target` returns at once."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from app.config import Config, ConfigError
from app.spend_config import PriceConfig
from app.translators.base import Target

logger = logging.getLogger("toolrelay.spend")

PER_MILLION = 1_000_000
COST_DIGITS = 12
"""A cost is rounded to 1e-12 USD: far below any price's precision, and it keeps a float's
last-bit noise (0.0030000000000000005) out of answers and logs."""

_FILE_KEYS = (
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_read_input_token_cost",
    "cache_creation_input_token_cost",
)


@dataclass(frozen=True, slots=True)
class Price:
    """USD per token (config's per-million prices are divided once, at load)."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    @classmethod
    def from_config(cls, price: PriceConfig) -> Price:
        read = price.input if price.cache_read is None else price.cache_read
        write = price.input if price.cache_write is None else price.cache_write
        return cls(
            price.input / PER_MILLION,
            price.output / PER_MILLION,
            read / PER_MILLION,
            write / PER_MILLION,
        )

    def cost(self, usage: Any) -> float | None:
        """USD for one answer's usage: uncached prompt x input + cache reads x cache_read +
        cache writes x cache_write + completion x output (reasoning is in the completion).
        Reads OpenAI's chat (and embeddings) usage, the Responses API's and Anthropic's;
        None for anything else, so no answer is given a cost its usage does not support."""
        counts = usage_counts(usage)
        if counts is None:
            return None
        uncached, read, write, output = counts
        total = (
            uncached * self.input
            + read * self.cache_read
            + write * self.cache_write
            + output * self.output
        )
        return round(total, COST_DIGITS)


def usage_counts(usage: Any) -> tuple[int, int, int, int] | None:
    """(uncached prompt, cache reads, cache writes, output) tokens of a usage object: OpenAI's
    `prompt_tokens` and the Responses API's `input_tokens` include the cached ones (given in
    their details); Anthropic's `input_tokens` leaves out its cache reads and writes."""
    if type(usage) is not dict:
        return None
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        return _inclusive(usage, "prompt_tokens", "prompt_tokens_details", "completion_tokens")
    if "input_tokens" not in usage and "output_tokens" not in usage:
        return None
    if type(usage.get("input_tokens_details")) is dict:
        return _inclusive(usage, "input_tokens", "input_tokens_details", "output_tokens")
    return (
        _count(usage, "input_tokens"),
        _count(usage, "cache_read_input_tokens"),
        _count(usage, "cache_creation_input_tokens"),
        _count(usage, "output_tokens"),
    )


def _inclusive(
    usage: dict[str, Any], prompt_key: str, details_key: str, output_key: str
) -> tuple[int, int, int, int]:
    details = usage.get(details_key)
    details = details if type(details) is dict else {}
    read, write = _count(details, "cached_tokens"), _count(details, "cache_write_tokens")
    uncached = max(0, _count(usage, prompt_key) - read - write)
    return uncached, read, write, _count(usage, output_key)


def _count(counts: Mapping[str, Any], key: str) -> int:
    value = counts.get(key)
    return value if type(value) is int and value > 0 else 0


def file_price(entry: Any) -> Price | None:
    """A LiteLLM price file entry as a Price; None when it prices no tokens (an image model,
    the file's `sample_spec`) or a price is not a number. Cache prices it leaves out cost what
    an input token does, as in config."""
    if type(entry) is not dict:
        return None
    values: list[Any] = [entry.get(key) for key in _FILE_KEYS]
    if not all(_is_price(value) for value in values[:2]):
        return None
    if not all(value is None or _is_price(value) for value in values[2:]):
        return None
    given, output, read, write = values
    return Price(
        float(given),
        float(output),
        float(given if read is None else read),
        float(given if write is None else write),
    )


def _is_price(value: Any) -> bool:
    return type(value) in (int, float) and value >= 0 and value != float("inf")


class PriceFile:
    """LiteLLM's price file, loaded once: entries by model id, and the file's sha256 (logged,
    so a past cost can be recomputed against the very prices it was computed with)."""

    __slots__ = ("entries", "path", "sha256")

    def __init__(self, path: str) -> None:
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigError(
                f"server.spend.prices: cannot read {path}: {exc.strerror or exc}"
            ) from None
        try:
            loaded = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"server.spend.prices: {path} is not JSON: {exc}") from None
        if type(loaded) is not dict:
            raise ConfigError(f"server.spend.prices: '{path}' is not a JSON object of models")
        self.path = path
        self.sha256 = hashlib.sha256(raw).hexdigest()
        self.entries: dict[str, Any] = loaded

    def price(self, target: Target) -> Price | None:
        """The entry for the upstream model id, else for `KIND/ID` (how the file keys some,
        e.g. `gemini/gemini-2.5-pro`)."""
        found = file_price(self.entries.get(target.upstream_model))
        if found is None:
            key = f"{target.provider.kind}/{target.upstream_model}"
            found = file_price(self.entries.get(key))
        return found


_UNKNOWN = object()
MAX_REMEMBERED = 4096
"""Direct targets remembered at most: a client naming ever new `PROVIDER/MODEL`s must not
grow the book without end (past it, each is looked up again: one or two dict lookups)."""


class PriceBook:
    """Every configured deployment's price, resolved at start-up; a target configured nowhere
    (a direct `PROVIDER/MODEL` request) is looked up in the price file on first use and
    remembered."""

    __slots__ = ("_file", "_prices", "_unpriced", "any")

    def __init__(self, config: Config, price_file: PriceFile | None = None) -> None:
        self._file = price_file
        self._prices: dict[tuple[str, str, str], object] = {}
        unpriced: dict[str, None] = {}
        for name, merged in config.merged_models().items():
            for deployment in merged.deployments:
                provider = config.providers[deployment.provider]
                target = Target(name, deployment.provider, provider, deployment.model)
                key = (name, deployment.provider, deployment.model)
                if key in self._prices:
                    continue
                if deployment.price is not None:
                    self._prices[key] = Price.from_config(deployment.price)
                else:
                    self._prices[key] = None if price_file is None else price_file.price(target)
                if self._prices[key] is None:
                    unpriced[name] = None
        self._unpriced = list(unpriced)
        self.any = price_file is not None or any(p is not None for p in self._prices.values())
        """Whether anything is priced: when not, pricing costs a request one attribute read."""

    @classmethod
    def from_config(cls, config: Config) -> PriceBook:
        """The book, its price file read (its path and sha256 logged) and the models with no
        price listed, when any price is configured."""
        path = config.server.spend.prices
        price_file = None if path is None else PriceFile(path)
        if price_file is not None:
            logger.info("price file %s sha256=%s", price_file.path, price_file.sha256)
        book = cls(config, price_file)
        if book.any and book.unpriced_models():
            logger.info("models with no price: %s", ", ".join(book.unpriced_models()))
        return book

    def for_target(self, target: Target) -> Price | None:
        """The price of one attempt's target: its deployment's `price`, else its model's,
        else the price file's entry; None when unpriced (its answers then carry no cost)."""
        if not self.any:
            return None
        key = (target.model_name, target.provider_name, target.upstream_model)
        found = self._prices.get(key, _UNKNOWN)
        if isinstance(found, Price) or found is None:
            return found
        price = None if self._file is None else self._file.price(target)
        if len(self._prices) < MAX_REMEMBERED:
            self._prices[key] = price
        return price

    def priced_routes(self) -> list[tuple[str, str]]:
        """Every configured (model, provider) with a priced deployment: the series of
        toolrelay_spend_usd_total declared at start-up."""
        pairs = {(key[0], key[1]) for key, price in self._prices.items() if price is not None}
        return sorted(pairs)

    def unpriced_models(self) -> list[str]:
        """Configured models with a deployment that has no price, in config order."""
        return list(self._unpriced)
