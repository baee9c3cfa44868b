"""config.yaml's `server` section: named keys (key or key_sha256), per-model limits, the
store, logs and traces; each mistake a ConfigError of one line naming the key."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from app.config import ConfigError, parse_config
from app.ops.keys import KeyRing

DIGEST = hashlib.sha256(b"sk-bob").hexdigest()
BASE: dict[str, Any] = {
    "providers": {"oa": {"kind": "openai"}, "an": {"kind": "anthropic"}},
    "models": [
        {"name": "claude", "provider": "an", "model": "claude-x"},
        {"name": "gpt-4o-mini", "provider": "oa", "model": "gpt-4o-mini"},
    ],
}


def config_with(server: dict[str, Any]) -> dict[str, Any]:
    raw = copy.deepcopy(BASE)
    raw["server"] = server
    return raw


def key(**fields: Any) -> dict[str, Any]:
    return {"name": "alice", **fields}


@pytest.mark.parametrize(
    ("server", "where", "says"),
    [
        (
            {"keys": [key(key="sk-a", key_sha256=DIGEST)]},
            "server.keys[0]",
            "give `key` or `key_sha256`",
        ),
        ({"keys": [key()]}, "server.keys[0]", "give `key` or `key_sha256`"),
        ({"keys": [key(key="${UNSET}")]}, "server.keys[0]", "key: empty"),
        ({"keys": [key(key="")]}, "server.keys[0]", "key: empty"),
        ({"keys": [key(key_sha256=DIGEST[:63])]}, "server.keys[0]", "key_sha256"),
        ({"keys": [key(key_sha256=DIGEST + "0")]}, "server.keys[0]", "key_sha256"),
        ({"keys": [key(key_sha256="g" + DIGEST[1:])]}, "server.keys[0]", "key_sha256"),
        ({"keys": [key(key_sha256="")]}, "server.keys[0]", "key_sha256"),
        ({"keys": [{"name": "", "key": "sk-a"}]}, "server.keys[0].name", ""),
        ({"keys": [{"key": "sk-a"}]}, "server.keys[0].name", "required"),
        (
            {"keys": [key(key="sk-a"), {"name": "bob", "key": "sk-b"}, key(key="sk-c")]},
            "server",
            "keys[2].name: 'alice' is used twice",
        ),
        ({"limits": {"clade": {"rpm": 5}}}, "server.limits", "unknown model 'clade'"),
        (
            {"keys": [key(key="sk-a", models=["claude", "gtp-4o"])]},
            "server.keys[0].models",
            "unknown model 'gtp-4o'",
        ),
        (
            {"keys": [key(key="sk-a"), {"name": "b", "key": "sk-b", "models": ["zz/*"]}]},
            "server.keys[1].models",
            "unknown model 'zz/*'",
        ),
        (
            {"keys": [key(key="sk-a", models=["zz/gpt-4o"])]},
            "server.keys[0].models",
            "unknown model 'zz/gpt-4o'",
        ),
        ({"store": {"kind": "redis"}}, "server.store", "url: required"),
        ({"store": {"kind": "redis", "url": ""}}, "server.store", "url: required"),
        ({"store": {"kind": "memcached"}}, "server.store.kind", "'memory' or 'redis'"),
        ({"store": {"on_error": "maybe"}}, "server.store.on_error", "'open' or 'closed'"),
        ({"store": {"timeout": 0}}, "server.store.timeout", "greater than 0"),
        ({"store": {"urll": "redis://x"}}, "server.store.urll", "unknown key"),
        ({"limits": {"claude": {"rpm": 0}}}, "server.limits.claude.rpm", "greater than or equal"),
        ({"limits": {"claude": {"tpm": -1}}}, "server.limits.claude.tpm", "greater than or equal"),
        (
            {"keys": [key(key="sk-a", limits={"concurrent": 0})]},
            "server.keys[0].limits.concurrent",
            "greater than or equal",
        ),
        ({"limits": {"claude": {"rph": 5}}}, "server.limits.claude.rph", "unknown key"),
        (
            {"keys": [key(key="sk-a", limits={"rpd": 5})]},
            "server.keys[0].limits.rpd",
            "unknown key",
        ),
        ({"keys": [key(key="sk-a", modles=["claude"])]}, "server.keys[0].modles", "unknown key"),
        ({"log": {"format": "xml"}}, "server.log.format", "'json' or 'text'"),
        ({"log": {"level": "verbose"}}, "server.log.level", ""),
        ({"tracing": {"endpoint": "http://x"}}, "server.tracing.endpoint", "unknown key"),
    ],
)
def test_a_bad_server_section_is_one_line_naming_the_key(
    server: dict[str, Any], where: str, says: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(config_with(server), "c.yaml", {})
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"c.yaml: {where}: "), message
    assert says in message
    for secret in ("sk-a", "sk-b", "sk-c", DIGEST):
        assert secret not in message, "a ConfigError must not repeat a secret"


@pytest.mark.parametrize(
    "models",
    [["claude"], ["claude", "gpt-4o-mini"], ["oa/*"], ["an/*", "oa/gpt-4o"], []],
)
def test_allow_lists_of_known_models_and_providers_load(models: list[str]) -> None:
    config = parse_config(config_with({"keys": [key(key="sk-a", models=models)]}), "c.yaml", {})
    assert config.server.keys[0].models == models


def test_a_configured_name_with_a_slash_may_be_listed() -> None:
    raw = config_with({"keys": [key(key="sk-a", models=["team/claude"])]})
    raw["models"].append({"name": "team/claude", "provider": "an", "model": "claude-x"})
    raw["server"]["limits"] = {"team/claude": {"rpm": 1}}
    config = parse_config(raw, "c.yaml", {})
    assert config.server.limits["team/claude"].rpm == 1


def test_keys_and_api_keys_together() -> None:
    server = {
        "api_keys": ["${OLD_KEY}"],
        "keys": [
            key(key="${ALICE_KEY}", models=["claude"], limits={"rpm": 60, "concurrent": 4}),
            {"name": "bob", "key_sha256": DIGEST.upper()},
        ],
        "limits": {"claude": {"rpm": 500, "tpm": 2_000_000}},
    }
    environ = {"OLD_KEY": "sk-old", "ALICE_KEY": "sk-alice"}
    config = parse_config(config_with(server), "c.yaml", environ)
    assert config.server.auth_required
    alice = config.server.keys[0]
    assert (alice.key, alice.models, alice.limits.rpm, alice.limits.tpm) == (
        "sk-alice",
        ["claude"],
        60,
        None,
    )
    assert config.server.limits["claude"].tpm == 2_000_000
    ring = KeyRing(config.server)
    assert ring.identify(b"sk-old").name == "default"
    assert ring.identify(b"sk-alice").name == "alice"
    assert ring.identify(b"sk-bob").name == "bob"


def test_a_key_given_in_api_keys_too_is_refused() -> None:
    """Left in `api_keys` when moved to `keys`, it would be identified as `default` and the
    named key's allow-list and limits would never apply."""
    server = {
        "api_keys": ["sk-alice"],
        "keys": [key(key="sk-alice", models=["claude"], limits={"rpm": 1})],
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(config_with(server), "c.yaml", {})
    assert "keys[0]: the same key is given twice" in str(caught.value)
    assert "sk-alice" not in str(caught.value)


@pytest.mark.parametrize("bob", [{"key": "sk-bob"}, {"key_sha256": DIGEST}])
def test_one_secret_under_two_names_is_refused(bob: dict[str, str]) -> None:
    server = {"keys": [key(key="sk-bob", models=["claude"]), {"name": "bob", **bob}]}
    with pytest.raises(ConfigError) as caught:
        parse_config(config_with(server), "c.yaml", {})
    assert "\n" not in str(caught.value)
    assert "sk-bob" not in str(caught.value)


def test_secrets_hold_plaintext_keys_but_not_digests() -> None:
    raw = config_with(
        {
            "api_keys": ["sk-old"],
            "keys": [key(key="sk-alice"), {"name": "bob", "key_sha256": DIGEST}],
        }
    )
    raw["providers"]["oa"]["api_key"] = "sk-upstream"
    secrets = parse_config(raw, "c.yaml", {}).secrets()
    assert sorted(secrets) == ["sk-alice", "sk-old", "sk-upstream"]
    assert DIGEST not in secrets


def test_server_defaults() -> None:
    server = parse_config(BASE, "c.yaml", {}).server
    assert (server.log.format, server.log.level) == ("text", "info")
    assert server.tracing.otlp_endpoint is None
    assert (server.store.kind, server.store.url, server.store.on_error) == ("memory", None, "open")
    assert 0 < server.store.timeout <= 1
    assert server.keys == []
    assert server.limits == {}
    assert not server.auth_required


def test_the_documented_example_loads() -> None:
    server = {
        "keys": [
            {
                "name": "alice",
                "key_sha256": DIGEST,
                "models": ["claude", "gpt-4o-mini"],
                "limits": {"rpm": 60, "tpm": 100000, "concurrent": 4},
            }
        ],
        "limits": {"claude": {"rpm": 500, "tpm": 2000000}},
        "store": {"kind": "redis", "url": "redis://127.0.0.1:6379/0", "on_error": "closed"},
        "log": {"format": "json", "level": "info"},
        "tracing": {"otlp_endpoint": "http://127.0.0.1:4318"},
    }
    config = parse_config(config_with(server), "c.yaml", {})
    assert config.server.store.on_error == "closed"
    assert config.server.log.format == "json"
    assert config.server.tracing.otlp_endpoint == "http://127.0.0.1:4318"
    assert KeyRing(config.server).identify(b"sk-bob").models == frozenset({"claude", "gpt-4o-mini"})
