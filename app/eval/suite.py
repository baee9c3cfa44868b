"""A tool-calling suite (the built-in one or `--suite FILE`): tools, and cases that each say
what a correct answer is. Validated on load, so a typo in a suite is one clear line, not a
run that measures the wrong thing."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

_STRICT = ConfigDict(extra="forbid", frozen=True)


class SuiteError(Exception):
    """A suite that cannot be used; the message names the file and the key."""


class Check(BaseModel):
    model_config = _STRICT
    one_of: list[Any] | None = None
    subset_of: list[Any] | None = None
    between: tuple[float, float] | None = None
    contains: str | None = None
    nonempty: bool | None = None


class ExpectedCall(BaseModel):
    model_config = _STRICT
    name: str
    arguments: dict[str, Check] = Field(default_factory=dict)


class Expectation(BaseModel):
    model_config = _STRICT
    calls: list[ExpectedCall] = Field(min_length=1)


class ToolSpec(BaseModel):
    model_config = _STRICT
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class Case(BaseModel):
    model_config = _STRICT
    id: str = Field(min_length=1)
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[str] = Field(min_length=1)
    tool_choice: str | None = None
    expect: Expectation | Literal["text"]

    @property
    def expects_call(self) -> bool:
        return self.expect != "text"

    @property
    def expected_names(self) -> set[str]:
        return set() if isinstance(self.expect, str) else {c.name for c in self.expect.calls}


class Suite(BaseModel):
    model_config = _STRICT
    tools: dict[str, ToolSpec] = Field(min_length=1)
    cases: list[Case] = Field(min_length=1)

    @model_validator(mode="after")
    def _references(self) -> Suite:
        ids = set()
        for position, case in enumerate(self.cases):
            where = f"cases[{position}]"
            if case.id in ids:
                raise ValueError(f"{where}.id: '{case.id}' is used twice")
            ids.add(case.id)
            for name in [*case.tools, *sorted(case.expected_names)]:
                if name not in self.tools:
                    raise ValueError(f"{where}: unknown tool '{name}'")
            choice = case.tool_choice
            if choice not in (None, "auto", "required", "none") and choice not in case.tools:
                raise ValueError(f"{where}.tool_choice: '{choice}' is not among its tools")
        return self

    def request_body(self, case: Case, model: str) -> dict[str, Any]:
        """The chat request a case sends: its messages, its tools as OpenAI tools."""
        tools = [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": self.tools[name].description,
                    "parameters": self.tools[name].parameters,
                },
            }
            for name in case.tools
        ]
        body: dict[str, Any] = {"model": model, "messages": case.messages, "tools": tools}
        choice = case.tool_choice
        if choice in ("auto", "required", "none"):
            body["tool_choice"] = choice
        elif choice is not None:
            body["tool_choice"] = {"type": "function", "function": {"name": choice}}
        return body


def load_suite(path: str | Path | None = None) -> Suite:
    """The suite in `path`, or the built-in one shipped in this package."""
    if path is None:
        source, text = (
            "the built-in suite",
            (resources.files("app.eval") / "suite.yaml").read_text(),
        )
    else:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise SuiteError(f"{source}: cannot read: {exc.strerror or exc}") from None
    try:
        raw = yaml.safe_load(text)
        return Suite.model_validate(raw)
    except yaml.YAMLError as exc:
        raise SuiteError(f"{source}: invalid YAML: {exc}") from None
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        raise SuiteError(f"{source}: {where + ': ' if where else ''}{message}") from None
