"""DESIGN.md's "imports" note (issue 40): a package that is not configured is not imported. A
plain config (no cloud kind, MCP server, store, tracing or database) runs without the mcp SDK,
botocore, google-auth, Redis, OpenTelemetry's SDK and exporter, SQLAlchemy and its drivers,
jinja2, httpx (the passthrough's client, imported with its first request) or jsonschema (the
demo's sampler, with its first answer); each feature, configured, loads its own. Each case runs
`create_app` and the lifespan in a fresh interpreter, so sys.modules holds only what that
config imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

HEAVY = [
    "mcp",
    "mcp_types",
    "botocore",
    "google.auth",
    "redis",
    "opentelemetry.sdk",
    "opentelemetry.exporter",
    "sqlalchemy",
    "aiosqlite",
    "asyncpg",
    "jinja2",
    "httpx",  # the passthrough's client (and, with rich installed, its CLI: rich, pygments)
    "rich",
    "jsonschema",  # the demo's sampler, with its first answer
]

SCRIPT = """
import asyncio, json, sys
from app.config import load_config
from app.main import create_app

app = create_app(load_config(sys.argv[1]))


async def serve() -> None:
    async with app.router.lifespan_context(app):
        pass


asyncio.run(serve())
print(json.dumps(sorted(name for name in sys.argv[2:] if name in sys.modules)))
"""

PLAIN = """
providers:
  demo: {kind: demo}
  openai: {kind: openai, base_url: "http://127.0.0.1:9/v1", api_key: sk-test}
  anthropic: {kind: anthropic, base_url: "http://127.0.0.1:9", api_key: sk-test}
models:
  - {name: demo, provider: demo, model: demo}
  - {name: gpt, provider: openai, model: gpt-4o-mini}
  - {name: claude, provider: anthropic, model: claude-sonnet-4-5, max_tokens: 64}
"""


def imported(tmp_path: Path, config: str) -> set[str]:
    """The HEAVY modules a proxy on `config` has imported once started and stopped."""
    path = tmp_path / "config.yaml"
    path.write_text(textwrap.dedent(config))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE"}
    env["AWS_SECRET_ACCESS_KEY"] = "secret"  # a fake, for botocore's chain
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path), *HEAVY],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_a_plain_config_imports_no_heavy_package(tmp_path: Path) -> None:
    assert imported(tmp_path, PLAIN) == set()


FEATURES = {
    "mcp": (
        PLAIN + "mcp:\n  servers:\n    tools: {command: [python, -c, pass]}\n",
        {"mcp", "mcp_types"},
    ),
    "bedrock": (
        PLAIN.replace(
            "providers:\n",
            'providers:\n  aws: {kind: bedrock, region: us-east-1, base_url: "http://127.0.0.1:9"}\n',
        ),
        {"botocore"},
    ),
    "vertex": (
        PLAIN.replace(
            "providers:\n",
            "providers:\n  gcp: {kind: vertex, project: p, region: us-east5,"
            ' base_url: "http://127.0.0.1:9", credentials: missing.json}\n',
        ),
        {"google.auth"},
    ),
    "redis": (
        PLAIN + 'server:\n  store: {kind: redis, url: "redis://127.0.0.1:9/0", timeout: 0.2}\n',
        {"redis", "opentelemetry.sdk"},  # redis-py's own observability imports the SDK
    ),
    "tracing": (
        PLAIN + 'server:\n  tracing: {otlp_endpoint: "http://127.0.0.1:9"}\n',
        {"opentelemetry.sdk", "opentelemetry.exporter"},
    ),
    "database": (
        PLAIN + "server:\n  database: {url: 'sqlite:///./relay.db'}\n  console: true\n",
        {"sqlalchemy", "aiosqlite"},  # jinja2 with /ui's first page
    ),
}


@pytest.mark.parametrize("feature", list(FEATURES))
def test_a_configured_feature_imports_its_own(tmp_path: Path, feature: str) -> None:
    config, modules = FEATURES[feature]
    assert imported(tmp_path, config) == modules
