"""Moved to app/spend_config.py (config.yaml's settings are leaves: app/config.py and
app/server_config.py import them, and must not import the spend package). Kept only for the
modules still naming this path (app/mcp/settings.py); import from app.spend_config."""

from app.spend_config import MAX_BUDGET, MAX_PRICE, MAX_TOKENS, PriceConfig, SpendConfig, not_a_bool

__all__ = ["MAX_BUDGET", "MAX_PRICE", "MAX_TOKENS", "PriceConfig", "SpendConfig", "not_a_bool"]
