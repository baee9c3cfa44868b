"""DESIGN.md's import rules: translators are pure, so they never import the HTTP stack; and
imports only go one way,
`api -> routing -> {ops, reasoning, translators, relay, toolcalls} -> leaves`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).parents[2] / "app"
TRANSLATORS = sorted([*(APP / "translators").rglob("*.py"), *(APP / "faces").rglob("*.py")])
FORBIDDEN = {"httpx", "httpx_aiohttp", "aiohttp", "fastapi", "starlette", "uvicorn", "anyio"}

# Package (or leaf module) -> the app packages it must never import.
ABOVE = {"api", "main", "__main__", "eval"}
NEVER_IMPORTS: dict[str, set[str]] = {
    "routing": ABOVE | {"faces"},  # faces are handed to dispatch, never imported
    "relay": ABOVE | {"routing", "faces", "credentials"},  # auth is handed in, as a protocol
    # where upstream auth comes from: I/O beside relay, applied to translators' requests
    "credentials": ABOVE | {"routing", "relay", "state", "faces", "toolcalls", "reasoning"},
    # faces are pure: no network module (relay), no routing, no state
    "faces": ABOVE | {"routing", "relay", "state", "toolcalls", "reasoning", "ops"},
    "translators": ABOVE | {"routing", "relay", "state", "faces"},
    "toolcalls": ABOVE | {"routing", "relay", "state"},
    "reasoning": ABOVE | {"routing", "relay", "state", "toolcalls", "ops"},
    # keys, limits, the shared store, metrics, logs, traces: below routing, beside relay
    "ops": ABOVE | {"routing", "relay", "state", "translators", "toolcalls", "request_record"},
    # config.yaml's settings are leaves: the packages that act on them import them
    "config": ABOVE | {"routing", "relay", "translators", "toolcalls", "state", "spend"},
    "server_config": ABOVE | {"routing", "relay", "translators", "toolcalls", "state", "spend"},
    "spend_config": ABOVE | {"routing", "relay", "translators", "state", "spend", "config"},
    "errors": ABOVE | {"routing", "relay", "translators", "toolcalls", "state", "config"},
    "sse": ABOVE | {"routing", "relay", "translators", "toolcalls", "state", "config"},
    "openai_types": ABOVE | {"routing", "relay", "translators", "toolcalls", "state", "config"},
    # MCP clients and the /mcp server logic; the route's HTTP glue (auth, the record) is api's
    "mcp": ABOVE,
}


def imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module)
    return modules


def imported_roots(path: Path) -> set[str]:
    return {module.split(".")[0] for module in imported_modules(path)}


def app_packages(path: Path) -> set[str]:
    """The top-level app packages or leaf modules a file imports (`app.routing.dispatch` ->
    `routing`)."""
    return {module.split(".")[1] for module in imported_modules(path) if module.startswith("app.")}


def layer_of(path: Path) -> str:
    return path.relative_to(APP).parts[0].removesuffix(".py")


@pytest.mark.parametrize("path", TRANSLATORS, ids=lambda p: str(p.relative_to(APP)))
def test_translators_do_not_import_the_http_stack(path: Path) -> None:
    assert not imported_roots(path) & FORBIDDEN


LAYERED = sorted(path for path in APP.rglob("*.py") if layer_of(path) in NEVER_IMPORTS)


@pytest.mark.parametrize("path", LAYERED, ids=lambda p: str(p.relative_to(APP)))
def test_imports_point_down_only(path: Path) -> None:
    assert not app_packages(path) & NEVER_IMPORTS[layer_of(path)]


def test_every_layer_named_in_the_rules_exists() -> None:
    """A rule for a folder that was renamed would silently check nothing."""
    present = {layer_of(path) for path in APP.rglob("*.py")}
    assert set(NEVER_IMPORTS) <= present


def runtime_imports(path: Path) -> set[str]:
    """The app packages a module imports when it runs: those under `if TYPE_CHECKING:` (names
    for annotations only) left out."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            node.body = []
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("app."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("app.")}
    return found


def test_state_holds_routing_instances_it_does_not_build() -> None:
    """DESIGN ("Import direction"): main.py builds the router, balancer and quality tracker
    and hands them in; state.py names their classes for annotations only."""
    assert "routing" not in runtime_imports(APP / "state.py")
