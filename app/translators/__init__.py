"""The upstream kinds, by the name config.yaml uses for them."""
