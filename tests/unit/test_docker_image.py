"""The Dockerfile's layers and the build context (issue 29, item 7): dependencies are installed
from pyproject.toml alone, before app/ is copied, so a code change does not reinstall them; the
package then goes in without touching them; `.cache/` (node modules of the e2e clients, hundreds
of MB) is never sent as build context. There is no Docker engine in CI: the instructions are
read, and the one that lists the dependencies is run here."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    found = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, arguments = line.strip().partition(" ")
            found.append((keyword.upper(), arguments.strip()))
    return found


def index_of(keyword: str, pattern: str) -> int:
    matches = [
        i for i, (k, a) in enumerate(instructions()) if k == keyword and re.search(pattern, a)
    ]
    assert len(matches) == 1, (keyword, pattern, matches)
    return matches[0]


def test_dependencies_are_installed_before_the_code_is_copied() -> None:
    steps = instructions()
    install_deps = index_of("RUN", r"pip install -r ")
    copy_app = index_of("COPY", r"^app ")
    install_package = index_of("RUN", r"pip install --no-deps \.")
    assert install_deps < copy_app < install_package
    copied_before = [a for k, a in steps[:install_deps] if k in {"COPY", "ADD"}]
    assert copied_before == ["pyproject.toml ./"]


def test_the_dependency_list_the_image_installs_is_pyprojects() -> None:
    run = instructions()[index_of("RUN", r"pip install -r ")][1]
    listing = run.split(">", 1)[0]
    command = shlex.split(listing)
    assert command[:2] == ["python", "-c"]

    listed = subprocess.run(
        [sys.executable, "-c", command[2]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()

    with (ROOT / "pyproject.toml").open("rb") as file:
        assert listed == tomllib.load(file)["project"]["dependencies"]


def test_the_build_context_leaves_out_the_clients_cache() -> None:
    patterns = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert ".cache" in {pattern.rstrip("/") for pattern in patterns}
