"""Run OpenAI's Codex CLI (pinned 0.169.0) against a local Responses API endpoint.

Codex is the client our /v1/responses face must satisfy, so end-to-end tests drive the real
binary rather than trusting our reading of the protocol. It is installed out of tree with
``npm install --prefix .cache/codex --no-audit --no-fund @openai/codex@0.169.0``; tests skip
when it is absent. See tests/recordings/codex/SOURCE.md for what it sends and needs.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

CODEX_VERSION = "0.169.0"
KEY_ENV = "TOOLRELAY_TEST_KEY"
"""The env var named by ``env_key``: Codex sends its value as ``Authorization: Bearer``."""

_REPO = Path(__file__).resolve().parents[2]
_BINARY = _REPO / ".cache" / "codex" / "node_modules" / ".bin" / "codex"

_COMMON = """\
model = "{model}"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
"""

_CUSTOM = """\
model_provider = "relay"
{common}
[model_providers.relay]
name = "ToolRelay"
base_url = "{base_url}"
wire_api = "responses"
env_key = "{key_env}"
request_max_retries = {retries}
stream_max_retries = {retries}
supports_websockets = {websockets}
"""

_BUILTIN = """\
openai_base_url = "{base_url}"
{common}"""
"""Codex's built-in `openai` provider pointed at the proxy (how teams route Codex through a
gateway): it talks Responses over WebSockets first, reads its key from CODEX_API_KEY, and
compacts remotely (`compaction_trigger`) once a turn's usage passes
`model_auto_compact_token_limit`."""

_REST = """
[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
log_user_prompt = false

[features]
plugins = false
"""


def codex_binary() -> Path | None:
    """The pinned Codex launcher under .cache/codex, or None when it is not installed.

    Only the pinned install is used (never one on PATH) so recordings and tests agree.
    """
    return _BINARY if _BINARY.exists() else None


def codex_home(
    directory: Path,
    base_url: str,
    model: str,
    *,
    api_key: str = "sk-test",
    retries: int = 0,
    transport: str = "https",
    compact_limit: int | None = None,
) -> dict[str, str]:
    """Write a throwaway CODEX_HOME with a single provider and return the env to run Codex with.

    ``base_url`` ends in ``/v1``: Codex POSTs to ``{base_url}/responses``. Retries default to
    0 because Codex otherwise retries a 429 5 times and a broken stream 5 times with
    backoff, which turns a failing test into a slow one. Plugins, analytics, feedback and
    update checks are off so Codex talks to nothing but ``base_url``.

    ``transport``: "https" (the custom provider over HTTPS only), "websockets" (the custom
    provider with ``supports_websockets = true``) or "builtin" (the built-in provider with
    ``openai_base_url``, WebSockets first). ``compact_limit``: the built-in provider's
    ``model_auto_compact_token_limit`` (it implies "builtin").
    """
    directory.mkdir(parents=True, exist_ok=True)
    common = _COMMON.format(model=model)
    if compact_limit is not None:
        transport = "builtin"
        common += f"model_auto_compact_token_limit = {compact_limit}\n"
    if transport == "builtin":
        config = _BUILTIN.format(base_url=base_url, common=common)
    else:
        websockets = "true" if transport == "websockets" else "false"
        config = _CUSTOM.format(
            common=common,
            base_url=base_url,
            key_env=KEY_ENV,
            retries=retries,
            websockets=websockets,
        )
    (directory / "config.toml").write_text(config + _REST, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEX_"))}
    env.update({"CODEX_HOME": str(directory), KEY_ENV: api_key, "NO_COLOR": "1"})
    if transport == "builtin":
        env["CODEX_API_KEY"] = api_key
    return env


def run_codex(
    prompt: str,
    *,
    base_url: str,
    model: str,
    workdir: Path,
    timeout: float = 120.0,
    home: Path | None = None,
    api_key: str = "sk-test",
    retries: int = 0,
    transport: str = "https",
    compact_limit: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``codex exec`` once, non-interactively, and return its result.

    Stdin is closed (``codex exec`` otherwise waits to append piped stdin to the prompt),
    approvals and the sandbox are bypassed so a shell tool call really runs in ``workdir``,
    and ``--skip-git-repo-check`` lets ``workdir`` be a bare temp dir. Codex prints the final
    assistant message on stdout and its transcript on stderr; exit code 0 means the turn
    ended with ``response.completed``. Raises ``subprocess.TimeoutExpired`` on timeout.
    """
    binary = codex_binary()
    if binary is None:
        raise FileNotFoundError(f"Codex {CODEX_VERSION} is not installed under {_BINARY}")
    env = codex_home(
        home or workdir.parent / f"{workdir.name}-codex-home",
        base_url,
        model,
        api_key=api_key,
        retries=retries,
        transport=transport,
        compact_limit=compact_limit,
    )
    command = [
        str(binary),
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        prompt,
    ]
    return subprocess.run(
        command,
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_shell_task(
    word: str, *, base_url: str, model: str, tmp_path: Path, proxy_log: Path, **options: Any
) -> tuple[subprocess.CompletedProcess[str], str, Path]:
    """Codex asked to `echo WORD > out.txt` in a fresh `tmp_path/work` (the shell tool loop the
    e2e tests drive on every kind): its result, a failure report naming the proxy's log, and
    the work dir to read `out.txt` from. `options` go to run_codex."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    finished = run_codex(
        f"Run echo {word} > out.txt",
        base_url=base_url,
        model=model,
        workdir=workdir,
        home=tmp_path / "codex-home",
        **options,
    )
    report = f"exit {finished.returncode}\n{finished.stdout[-2000:]}\n{finished.stderr[-4000:]}"
    return finished, report + f"\nproxy log: {proxy_log}", workdir
