"""DESIGN.md's import rule: translators are pure, so they never import the HTTP stack."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).parents[2] / "app"
TRANSLATORS = sorted((APP / "translators").rglob("*.py"))
FORBIDDEN = {"httpx", "httpx_aiohttp", "aiohttp", "fastapi", "starlette", "uvicorn", "anyio"}


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("path", TRANSLATORS, ids=lambda p: str(p.relative_to(APP)))
def test_translators_do_not_import_the_http_stack(path: Path) -> None:
    assert not imported_roots(path) & FORBIDDEN
