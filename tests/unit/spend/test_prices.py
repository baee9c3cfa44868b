"""Prices (app/spend/prices.py): config's per-million prices, LiteLLM's price file looked up by
upstream id then `KIND/ID`, the file's sha256 line, and the cost formula on every usage shape.
Expected costs are worked out by hand from CONTRACT.md's formula: uncached prompt x input +
cache reads x cache_read + cache writes x cache_write + completion x output."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

import pytest

from app.config import Config, ConfigError
from app.request_record import RequestRecord
from app.spend.prices import Price, PriceBook, PriceFile, file_price
from app.spend_config import PriceConfig
from app.translators.base import Target

EXCERPT = Path(__file__).with_name("litellm_prices_excerpt.json")

# USD per token: input 3, output 15, cache read 0.3, cache write 3.75 per million.
SONNET = Price.from_config(PriceConfig(input=3, output=15, cache_read=0.3, cache_write=3.75))


def _config(models: list[dict[str, Any]], prices: str | None = None) -> Config:
    return Config.model_validate(
        {
            "providers": {
                "oa": {"kind": "openai", "base_url": "http://oa/v1", "api_key": "k"},
                "an": {"kind": "anthropic", "base_url": "http://an", "api_key": "k"},
                "gm": {"kind": "gemini", "base_url": "http://gm", "api_key": "k"},
            },
            "models": models,
            "server": {"spend": {"prices": prices}},
        }
    )


def _target(config: Config, model: str, provider: str, upstream: str) -> Target:
    return Target(model, provider, config.providers[provider], upstream)


def test_config_prices_are_per_million_and_cache_prices_default_to_input() -> None:
    price = Price.from_config(PriceConfig(input=2, output=8))
    assert price == Price(2e-6, 8e-6, 2e-6, 2e-6)
    # 1000 uncached + 500 read + 0 written at input; 200 out: 1500 x 2e-6 + 200 x 8e-6
    usage = {"prompt_tokens": 1500, "completion_tokens": 200}
    usage["prompt_tokens_details"] = {"cached_tokens": 500}  # type: ignore[assignment]
    assert price.cost(usage) == 0.0046


def test_chat_usage_with_cache_reads_and_writes() -> None:
    # prompt 10000 = 2000 uncached + 6000 read + 2000 written; 1000 completion tokens:
    # 2000 x 3e-6 + 6000 x 0.3e-6 + 2000 x 3.75e-6 + 1000 x 15e-6 = 0.006 + 0.0018 + 0.0075 + 0.015
    usage = {
        "prompt_tokens": 10000,
        "completion_tokens": 1000,
        "total_tokens": 11000,
        "prompt_tokens_details": {"cached_tokens": 6000, "cache_write_tokens": 2000},
    }
    assert SONNET.cost(usage) == 0.0303


def test_anthropic_usage_counts_input_tokens_as_uncached() -> None:
    usage = {
        "input_tokens": 2000,
        "cache_read_input_tokens": 6000,
        "cache_creation_input_tokens": 2000,
        "output_tokens": 1000,
    }
    assert SONNET.cost(usage) == 0.0303


def test_responses_usage_includes_cached_in_input_tokens() -> None:
    usage = {
        "input_tokens": 10000,
        "input_tokens_details": {"cached_tokens": 6000, "cache_write_tokens": 2000},
        "output_tokens": 1000,
        "output_tokens_details": {"reasoning_tokens": 400},
        "total_tokens": 11000,
    }
    assert SONNET.cost(usage) == 0.0303


def test_reasoning_tokens_are_output_counted_once() -> None:
    # completion_tokens 1000 already hold the 400 reasoning tokens: 1000 x 15e-6
    usage = {
        "prompt_tokens": 0,
        "completion_tokens": 1000,
        "completion_tokens_details": {"reasoning_tokens": 400},
    }
    assert SONNET.cost(usage) == 0.015


def test_embeddings_usage_is_prompt_only() -> None:
    price = Price.from_config(PriceConfig(input=0.02, output=0))
    assert price.cost({"prompt_tokens": 8, "total_tokens": 8}) == 1.6e-07


def test_not_a_usage_object_has_no_cost() -> None:
    assert SONNET.cost(None) is None
    assert SONNET.cost({"total_tokens": 5}) is None
    assert SONNET.cost([1, 2]) is None


def test_counts_that_are_not_counts_are_zero() -> None:
    usage = {"prompt_tokens": -5, "completion_tokens": True, "prompt_tokens_details": []}
    assert SONNET.cost(usage) == 0


def test_cached_more_than_prompt_never_goes_negative() -> None:
    usage = {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 30}}
    assert SONNET.cost(usage) == 9e-06  # 30 x 0.3e-6; no negative uncached part


def test_price_file_entries_real_litellm_values() -> None:
    entries = PriceFile(str(EXCERPT)).entries
    assert file_price(entries["claude-sonnet-4-5"]) == Price(3e-06, 1.5e-05, 3e-07, 3.75e-06)
    # gpt-4o has no cache_creation_input_token_cost: a write costs an input token
    assert file_price(entries["gpt-4o"]) == Price(2.5e-06, 1e-05, 1.25e-06, 2.5e-06)
    assert file_price(entries["text-embedding-3-small"]) == Price(2e-08, 0.0, 2e-08, 2e-08)


@pytest.mark.parametrize(
    "entry",
    [
        None,
        "x",
        {"input_cost_per_token": 1e-6},
        {"input_cost_per_token": "1e-6", "output_cost_per_token": 1e-6},
        {"input_cost_per_token": -1, "output_cost_per_token": 1e-6},
        {
            "input_cost_per_token": 1e-6,
            "output_cost_per_token": 1e-6,
            "cache_read_input_token_cost": "x",
        },
        {"litellm_provider": "openai", "mode": "image_generation", "output_cost_per_image": 0.04},
    ],
)
def test_file_entries_that_price_no_tokens_are_unpriced(entry: Any) -> None:
    assert file_price(entry) is None


def test_book_prefers_config_then_upstream_id_then_kind_slash_id() -> None:
    config = _config(
        [
            {
                "name": "claude",
                "provider": "an",
                "model": "claude-sonnet-4-5",
                "price": {"input": 1, "output": 2},
            },
            {"name": "sonnet", "provider": "an", "model": "claude-sonnet-4-5"},
            {"name": "pro", "provider": "gm", "model": "gemini-2.5-pro"},
            {"name": "local", "provider": "oa", "model": "llama-local"},
        ],
        prices=str(EXCERPT),
    )
    book = PriceBook.from_config(config)
    assert book.for_target(_target(config, "claude", "an", "claude-sonnet-4-5")) == Price(
        1e-6, 2e-6, 1e-6, 1e-6
    )
    assert book.for_target(_target(config, "sonnet", "an", "claude-sonnet-4-5")) == Price(
        3e-06, 1.5e-05, 3e-07, 3.75e-06
    )
    # "gemini-2.5-pro" is not in the excerpt; "gemini/gemini-2.5-pro" is
    assert book.for_target(_target(config, "pro", "gm", "gemini-2.5-pro")) == Price(
        1.25e-06, 1e-05, 1.25e-07, 1.25e-06
    )
    assert book.for_target(_target(config, "local", "oa", "llama-local")) is None
    assert book.unpriced_models() == ["local"]
    assert book.priced_routes() == [("claude", "an"), ("pro", "gm"), ("sonnet", "an")]
    # a direct PROVIDER/MODEL request, configured nowhere: the file by its upstream id
    assert book.for_target(_target(config, "oa/gpt-4o", "oa", "gpt-4o")) == Price(
        2.5e-06, 1e-05, 1.25e-06, 2.5e-06
    )


def test_deployments_take_their_own_price_else_the_models() -> None:
    config = _config(
        [
            {
                "name": "mixed",
                "price": {"input": 1, "output": 2},
                "deployments": [
                    {"provider": "oa", "model": "a", "price": {"input": 5, "output": 6}},
                    {"provider": "an", "model": "b"},
                ],
            }
        ]
    )
    book = PriceBook.from_config(config)
    assert book.for_target(_target(config, "mixed", "oa", "a")) == Price(5e-6, 6e-6, 5e-6, 5e-6)
    assert book.for_target(_target(config, "mixed", "an", "b")) == Price(1e-6, 2e-6, 1e-6, 1e-6)
    assert book.unpriced_models() == []


def test_nothing_priced_returns_at_once() -> None:
    config = _config([{"name": "m", "provider": "oa", "model": "gpt-4o"}])
    book = PriceBook.from_config(config)
    assert not book.any
    assert book.for_target(_target(config, "m", "oa", "gpt-4o")) is None
    assert book.unpriced_models() == ["m"]


def test_price_file_sha256_and_unpriced_models_logged_at_start_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = _config([{"name": "local", "provider": "oa", "model": "llama-local"}], str(EXCERPT))
    with caplog.at_level(logging.INFO, logger="toolrelay.spend"):
        PriceBook.from_config(config)
    digest = hashlib.sha256(EXCERPT.read_bytes()).hexdigest()
    lines = [record.getMessage() for record in caplog.records]
    assert lines == [f"price file {EXCERPT} sha256={digest}", "models with no price: local"]


@pytest.mark.parametrize("content", [None, b"not json", b"[1, 2]"])
def test_an_unreadable_price_file_is_a_config_error(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "prices.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError, match=r"server\.spend\.prices"):
        PriceBook.from_config(_config([], str(path)))


@pytest.mark.parametrize(
    "price",
    [{"input": -1, "output": 1}, {"input": 1}, {"input": 1, "output": 1, "other": 2}],
)
def test_bad_prices_are_refused_by_config(price: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="price"):
        _config([{"name": "m", "provider": "oa", "model": "x", "price": price}])


def test_record_sums_costs_and_stays_none_while_unpriced() -> None:
    record = RequestRecord("r", "POST", "/v1/chat/completions")
    record.add_cost(None)
    assert record.cost_usd is None
    assert record.fields(1.0)["cost_usd"] is None
    record.add_cost(0.0303)
    record.add_cost(None)
    record.add_cost(0.015)
    assert record.fields(1.0)["cost_usd"] == 0.0453


@pytest.mark.parametrize("value", [-0.01, float("inf"), True, "free"])
def test_mcp_cost_per_call_is_a_non_negative_number(value: Any) -> None:
    from app.mcp.settings import McpServerConfig

    assert (
        McpServerConfig(url="https://mcp.example.com/", cost_per_call=0.005).cost_per_call == 0.005
    )
    assert McpServerConfig(url="https://mcp.example.com/").cost_per_call is None
    with pytest.raises(ValueError, match="cost_per_call"):
        McpServerConfig(url="https://mcp.example.com/", cost_per_call=value)
