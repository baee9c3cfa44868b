"""config.yaml loading: interpolation, defaults, and one-line errors naming file and key."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

from app.config import ConfigError, ProviderConfig, interpolate, load_config, parse_config
from app.routing.router import Router

MINIMAL = {
    "providers": {"oa": {"kind": "openai", "api_key": "${KEY}"}},
    "models": [{"name": "m", "provider": "oa", "model": "gpt-x"}],
}


@pytest.mark.parametrize(
    ("value", "environ", "expected"),
    [
        ("${A}", {"A": "1"}, "1"),
        ("x-${A}-y", {"A": "1"}, "x-1-y"),
        ("${A}", {}, ""),
        ("${A:-fallback}", {}, "fallback"),
        ("${A:-fallback}", {"A": ""}, "fallback"),
        ("${A:-}", {}, ""),
        ("${A:-fallback}", {"A": "set"}, "set"),
        ("$A {A} $${A}", {"A": "1"}, "$A {A} $1"),
        (["${A}", {"k": "${A}"}, 3, None], {"A": "1"}, ["1", {"k": "1"}, 3, None]),
    ],
)
def test_interpolate(value: object, environ: dict[str, str], expected: object) -> None:
    assert interpolate(value, environ) == expected


def test_minimal_config_gets_defaults() -> None:
    config = parse_config(MINIMAL, "c.yaml", {"KEY": "sk-1"})
    provider = config.providers["oa"]
    assert provider.base_url == "https://api.openai.com/v1"
    assert provider.api_key == "sk-1"
    assert not provider.key_missing
    assert config.server.client_keys == []


def test_structured_output_is_native_unless_a_model_says_tool() -> None:
    tool_model = {"name": "t", "provider": "oa", "model": "m", "structured_output": "tool"}
    raw = {**MINIMAL, "models": [*MINIMAL["models"], tool_model]}
    config = parse_config(raw, "c.yaml", {"KEY": "sk-1"})
    assert [model.structured_output for model in config.models] == ["native", "tool"]
    (deployment,) = Router(config).resolve("t").deployments
    assert deployment.target.structured_output == "tool"
    wrong = {**MINIMAL, "models": [{**tool_model, "structured_output": "json"}]}
    with pytest.raises(ConfigError, match="structured_output"):
        parse_config(wrong, "c.yaml", {"KEY": "sk-1"})


def test_prompt_cache_is_auto_unless_a_model_says_off() -> None:
    off = {"name": "t", "provider": "oa", "model": "m", "prompt_cache": "off"}
    config = parse_config({**MINIMAL, "models": [*MINIMAL["models"], off]}, "c.yaml", {"KEY": "k"})
    assert [model.prompt_cache for model in config.models] == ["auto", "off"]
    (deployment,) = Router(config).resolve("t").deployments
    assert deployment.target.prompt_cache == "off"
    wrong = {**MINIMAL, "models": [{**off, "prompt_cache": "sometimes"}]}
    with pytest.raises(ConfigError, match="prompt_cache"):
        parse_config(wrong, "c.yaml", {})


def test_unset_key_variable_loads_but_marks_the_key_missing() -> None:
    assert parse_config(MINIMAL, "c.yaml", {}).providers["oa"].key_missing


def test_no_api_key_at_all_is_not_missing() -> None:
    # A local server (Ollama, vLLM) takes no key: nothing configured, nothing missing.
    config = parse_config({"providers": {"o": {"kind": "openai"}}}, "c.yaml", {})
    assert not config.providers["o"].key_missing


def test_empty_client_keys_mean_no_auth() -> None:
    config = parse_config({"server": {"api_keys": ["${T:-}", "k1"]}}, "c.yaml", {})
    assert config.server.client_keys == ["k1"]


def test_base_url_trailing_slash_is_dropped() -> None:
    raw = {"providers": {"a": {"kind": "anthropic", "base_url": "http://x:1/"}}}
    assert parse_config(raw, "c.yaml", {}).providers["a"].base_url == "http://x:1"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"bogus": 1}, "c.yaml: bogus: unknown key"),
        ({"providers": {"p": {"kind": "nope"}}}, "c.yaml: providers.p.kind: Input should be"),
        (
            {"providers": {"p": {"kind": "openai", "extra": 1}}},
            "c.yaml: providers.p.extra: unknown",
        ),
        (
            {"providers": {}, "models": [{"name": "m", "provider": "x", "model": "y"}]},
            "c.yaml: models[0].provider: unknown provider 'x'",
        ),
        (
            {"models": [{"name": "m", "provider": "x"}]},
            "c.yaml: models[0]: give `provider` and `model`, or `deployments`",
        ),
        (
            {
                "providers": {"p": {"kind": "demo"}},
                "models": [
                    {
                        "name": "m",
                        "provider": "p",
                        "model": "d",
                        "deployments": [{"provider": "p", "model": "d"}],
                    },
                ],
            },
            "c.yaml: models[0]: give `provider` and `model`, or `deployments`, not both",
        ),
        (
            {
                "providers": {"p": {"kind": "demo"}},
                "models": [{"name": "m", "deployments": [{"provider": "q", "model": "d"}]}],
            },
            "c.yaml: models[0].deployments[0]: unknown provider 'q'",
        ),
        (
            {
                "providers": {"p": {"kind": "demo"}},
                "models": [{"name": "m", "provider": "p", "model": "d", "fallbacks": ["n"]}],
            },
            "c.yaml: models[0].fallbacks: unknown model 'n'",
        ),
        (
            {
                "providers": {"p": {"kind": "demo"}},
                "models": [{"name": "m", "provider": "p", "model": "d"}],
                "server": {"budgets": {"n": {"usd": 5, "period": "day"}}},
            },
            "c.yaml: server.budgets: unknown model 'n'",
        ),
        (
            {
                "providers": {"p": {"kind": "demo"}},
                "models": [
                    {"name": "a", "provider": "p", "model": "d", "fallbacks": ["b"]},
                    {"name": "b", "provider": "p", "model": "d", "fallbacks": ["a"]},
                ],
            },
            "c.yaml: models: 'a' falls back to itself",
        ),
        (
            {"providers": {"p": {"kind": "demo", "timeout": 5, "timeouts": {"total": 5}}}},
            "c.yaml: providers.p: timeout: give `timeout` or `timeouts.total`, not both",
        ),
        (
            {"providers": {"p": {"kind": "demo", "timeouts": {"idle": 0}}}},
            "c.yaml: providers.p.timeouts.idle",
        ),
        (
            {"router": {"cooldown": {"failure": 3}}},
            "c.yaml: router.cooldown.failure: unknown key",
        ),
        (
            {
                "providers": {"p": {"kind": "demo"}},
                "models": [{"name": "m", "provider": "p", "model": "d", "strategy": "random"}],
            },
            "c.yaml: models[0].strategy",
        ),
        ({"providers": {"p": {"kind": "openai", "timeout": 0}}}, "c.yaml: providers.p.timeout"),
        ([1, 2], "c.yaml: the top level must be a mapping"),
        (
            {"providers": {"p": {"kind": "anthropic", "responses": "native"}}},
            "c.yaml: providers.p: responses: native needs kind: openai",
        ),
    ],
)
def test_bad_config_names_file_and_key(raw: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, "c.yaml", {})
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_load_config_reports_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml: cannot read"):
        load_config(tmp_path / "nope.yaml")


def test_load_config_reports_yaml_syntax_with_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("providers:\n  p: [unclosed\n")
    with pytest.raises(ConfigError, match=r"c\.yaml: invalid YAML at line \d+"):
        load_config(path)


def test_shipped_config_loads_without_any_key() -> None:
    config = load_config(Path(__file__).parents[2] / "config.yaml", {})
    assert [m.name for m in config.models][:3] == ["demo", "demo-text", "demo-sloppy"]
    assert config.models[1].tool_calls.recover == "auto"
    assert config.server.client_keys == []


ROOT = Path(__file__).parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def documented_configs(tmp_path: Path) -> dict[str, list[Any]]:
    """Every ```yaml example in the README and docs/, loaded, by the file it is in."""
    keys = (
        *("OPENAI", "OPENAI_EU", "ANTHROPIC", "GEMINI", "GROQ", "OPENROUTER", "FIREWORKS"),
        "AZURE_OPENAI",
    )
    environ = {f"{name}_API_KEY": "k" for name in keys} | {"CI_BOT_KEY": "bot-key"}
    environ["BATCH_KEY"] = "batch-key"
    environ |= {"ALICE_KEY": "alice-key", "GITHUB_TOKEN": "gh-token"}
    loaded: dict[str, list[Any]] = {}
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        examples = [block.split("```", 1)[0] for block in text.split("```yaml\n")[1:]]
        for number, example in enumerate(examples):
            path = tmp_path / f"{document.stem}{number}.yaml"
            path.write_text(example)
            loaded.setdefault(document.name, []).append(load_config(path, environ))
    return loaded


def test_readme_example_configs_load(tmp_path: Path) -> None:
    """The README's and docs' examples are what users copy: every provider and model in each
    must load, and each shows what its text says."""
    by_file = documented_configs(tmp_path)
    configs = [config for found in by_file.values() for config in found]
    assert len(by_file["README.md"]) == 15
    assert len(configs) == 21

    def one(predicate: Any) -> Any:
        (found,) = [config for config in configs if predicate(config)]
        return found

    everything = one(lambda c: "openrouter" in c.providers)
    kinds = {name: provider.kind for name, provider in everything.providers.items()}
    assert kinds["gemini"] == "gemini"
    assert {kinds[name] for name in ("ollama", "vllm", "groq", "openrouter")} == {"openai"}
    assert {model.provider for model in everything.models} >= {"gemini", "ollama", "groq"}

    gemini = one(lambda c: list(c.providers) == ["gemini"]).providers["gemini"]
    assert (gemini.kind, gemini.base_url) == ("gemini", "https://generativelanguage.googleapis.com")

    azure = one(lambda c: "az" in c.providers).providers["az"]
    assert (azure.kind, azure.api_version) == ("azure", "2024-10-21")

    vertex = one(lambda c: "gcp" in c.providers).providers["gcp"]
    assert (vertex.kind, vertex.base_url) == (
        "vertex",
        "https://us-east5-aiplatform.googleapis.com",
    )

    bedrock = one(lambda c: "aws" in c.providers).providers["aws"]
    assert (bedrock.kind, bedrock.base_url) == (
        "bedrock",
        "https://bedrock-runtime.us-east-1.amazonaws.com",
    )

    betas = one(lambda c: "claude-on-aws" in c.providers).providers["claude-on-aws"]
    assert betas.betas == ["interleaved-thinking-2025-05-14", "context-1m-2025-08-07"]
    cached = one(
        lambda c: any(
            m.prompt_cache != "auto" or "prompt_cache" in m.model_fields_set for m in c.models
        )
    )
    assert cached.models[0].prompt_cache == "auto"

    console = one(lambda c: c.server.database is not None).server
    assert (console.console, console.request_log.bodies) == (True, "full")

    (recovering,) = one(lambda c: [m.name for m in c.models] == ["local-qwen"]).models
    assert recovering.tool_calls.recover == "auto"
    assert recovering.tool_calls.on_invalid == "pass"

    quality = one(lambda c: "fw" in c.providers)
    by_quality = quality.merged_models()["smart"].settings.tool_calls
    assert (by_quality.on_invalid, by_quality.min_valid_rate, by_quality.window) == (
        "fallback",
        0.9,
        50,
    )

    gpt, _ = one(lambda c: any(m.max_output_tokens for m in c.models)).models
    assert gpt.max_output_tokens == 32768

    native = one(lambda c: any(p.responses == "native" for p in c.providers.values()))
    assert native.providers["openai"].responses == "native"

    mcp = one(lambda c: c.mcp.servers).mcp
    assert sorted(mcp.servers) == ["clock", "github"]
    assert mcp.servers["clock"].command == ["uvx", "mcp-server-time"]
    assert mcp.servers["clock"].cost_per_call == 0.001
    assert mcp.remote_urls == ["https://mcp.example.com/*"]
    # the hosted-tool example beside it names `clock` with alice's key: she may use it
    assert set(one(lambda c: c.mcp.servers).server.keys[0].mcp or []) == {"github", "clock"}

    assert one(lambda c: c.server.passthrough).server.passthrough == "openai"

    routing = [c.merged_models() for c in configs if "cheap" in c.merged_models()]
    assert len(routing) == 2  # the README's short example and docs/routing.md's full one
    assert all(r["smart"].settings.fallbacks == ["cheap"] for r in routing)
    assert max(len(r["cheap"].deployments) for r in routing) == 2
    assert max(len(r["smart"].deployments) for r in routing) == 2

    reasoning = one(lambda c: any(m.name == "my-gemini" for m in c.models))
    claude, tuned = reasoning.models
    assert (claude.reasoning.budgets.low, claude.reasoning.budgets.high) == (2048, 24000)
    assert tuned.reasoning.gemini == "budget"

    team = one(lambda c: [key.name for key in c.server.keys] == ["alice", "ci-bot"]).server
    assert team.keys[0].digest == hashlib.sha256(b"alice-secret").digest()
    assert (team.store.kind, team.store.on_error, team.log.format) == ("redis", "open", "json")
    assert team.limits["claude"].tpm == 2000000
    budgets = one(lambda c: c.server.teams)
    spend = budgets.server
    assert (spend.keys[0].team, spend.keys[0].budget.usd) == ("research", 50)
    assert spend.budgets["claude"].period == "month"
    assert spend.spend.reservation_ttl == 660  # the model's `total` (600, unset) + 60
    assert budgets.models[0].price is not None
    workers = one(lambda c: not c.providers and c.server.store.kind == "redis")
    assert workers.server.store.url == "redis://127.0.0.1:6379/0"  # what --workers > 1 needs
    for config in configs:
        assert not any(provider.key_missing for provider in config.providers.values())


@pytest.mark.parametrize(
    ("tool_calls", "key"),
    [
        ({"recover": "hermes2"}, "models[0].tool_calls.recover"),
        ({"on_invalid": "drop"}, "models[0].tool_calls.on_invalid"),
        ({"retries": -1}, "models[0].tool_calls.retries"),
        ({"recovr": "auto"}, "models[0].tool_calls.recovr: unknown key"),
    ],
)
def test_bad_tool_calls_settings_are_named(tool_calls: dict[str, Any], key: str) -> None:
    raw = {
        "providers": {"p": {"kind": "demo"}},
        "models": [{"name": "m", "provider": "p", "model": "demo", "tool_calls": tool_calls}],
    }
    with pytest.raises(ConfigError, match=re.escape(key)):
        parse_config(raw, "c.yaml", {})


def test_an_empty_bedrock_key_means_sigv4_not_a_missing_key() -> None:
    """`api_key: ${AWS_BEARER_TOKEN_BEDROCK:-}` unset: the request is signed, never a 401."""
    provider = ProviderConfig(kind="bedrock", region="eu-west-1", api_key="")
    assert provider.api_key is None
    assert not provider.key_missing
    assert provider.base_url == "https://bedrock-runtime.eu-west-1.amazonaws.com"


@pytest.mark.parametrize("given", ["prices.json", "./prices.json"])
def test_a_relative_price_file_is_read_from_the_config_files_folder(
    tmp_path: Path, given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CONTRACT ("Spend"): not from the working directory, which a service manager picks."""
    monkeypatch.chdir("/")
    path = tmp_path / "config.yaml"
    path.write_text(f"server:\n  spend: {{prices: {given}}}\n")

    config = load_config(path, {})

    assert config.server.spend.prices == str(tmp_path / "prices.json")


def test_an_absolute_price_file_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("server:\n  spend: {prices: /srv/prices.json}\n")

    assert load_config(path, {}).server.spend.prices == "/srv/prices.json"
