"""config.yaml's `server.spend` section and models' `price` (CONTRACT.md, "Spend: prices,
cost, budgets"): settings, so a leaf beside app/server_config.py; app/spend acts on them."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

CONFIG_FOLDER = "config_folder"
"""Validation context key: the folder of the config file being loaded (relative paths in it
are read from there, not from the working directory a service manager happens to pick);
empty when the config came from no file (paths are then taken as given)."""

MAX_TOKENS = 1_000_000_000
"""Beyond any model's output: a larger count is a typo, and would overflow a cost."""
MAX_PRICE = 1_000_000.0
"""USD per million tokens (a dollar a token): beyond any model's price, so a larger one is a
typo; with MAX_TOKENS it keeps every worst case a finite number of nano-dollars."""
MAX_BUDGET = 1_000_000_000.0
"""USD a budget may hold: a billion, beyond any team's spend. Its nano-dollars (10^18) fit
Redis' 64-bit counters (HINCRBY) with room for what is reserved and spent against it."""


def not_a_bool(value: object) -> object:
    """YAML's `yes` would otherwise load as 1 (USD per million, or USD)."""
    if isinstance(value, bool):
        raise ValueError("a number of USD, not a boolean")
    return value


class PriceConfig(BaseModel):
    """A model's (or deployment's) price in USD per million tokens, as providers publish it.
    A cache read or write not priced costs what an input token does: never free by omission."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    input: float = Field(ge=0, le=MAX_PRICE, allow_inf_nan=False)
    output: float = Field(ge=0, le=MAX_PRICE, allow_inf_nan=False)
    cache_read: float | None = Field(default=None, ge=0, le=MAX_PRICE, allow_inf_nan=False)
    cache_write: float | None = Field(default=None, ge=0, le=MAX_PRICE, allow_inf_nan=False)

    @field_validator("input", "output", "cache_read", "cache_write", mode="before")
    @classmethod
    def _not_a_bool(cls, value: object) -> object:
        return not_a_bool(value)


class SpendConfig(BaseModel):
    """Where prices come from besides each model's own `price`, and how budgets treat what
    cannot be priced or is not yet known.

    `prices`: a path to LiteLLM's model_prices_and_context_window.json (users already keep
    it up to date), looked up by upstream model id. `unpriced`: `refuse` a request under a
    budget to a model with no price (a $0 price would let its budget never trigger), or
    count it `free`. `reserve_output_tokens`: the output a reservation assumes when neither
    the request nor the model sets a maximum. `reservation_ttl`: seconds a dead replica's
    reservation lives (None: the model's total timeout plus 60)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    prices: str | None = None
    unpriced: Literal["refuse", "free"] = "refuse"
    reserve_output_tokens: int = Field(default=4096, ge=1, le=MAX_TOKENS)
    reservation_ttl: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    @field_validator("prices")
    @classmethod
    def _from_config_folder(cls, value: str | None, info: ValidationInfo) -> str | None:
        folder = (info.context or {}).get(CONFIG_FOLDER)
        if value is None or not folder:
            return value
        return str(Path(folder) / value)  # an absolute path stays as it is
