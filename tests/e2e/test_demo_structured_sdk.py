"""The real `openai` SDK's structured-output helpers against a real proxy process serving the
built-in demo model: `parse` on chat and on Responses returns the pydantic object, offline."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import openai
import pytest
from pydantic import BaseModel, Field

from tests.e2e.conftest import RunningProxy, sdk_client

pytestmark = pytest.mark.e2e


class Step(BaseModel):
    title: str
    minutes: int = Field(ge=1, le=60)


class Recipe(BaseModel):
    name: str
    difficulty: Literal["easy", "hard"]
    steps: list[Step] = Field(min_length=2)
    serves: int | None = None


@pytest.fixture(scope="module")
def client(proxy: RunningProxy) -> Iterator[openai.OpenAI]:
    with sdk_client(proxy) as sdk:
        yield sdk


def test_chat_parse_returns_the_model(client: openai.OpenAI) -> None:
    completion = client.chat.completions.parse(
        model="demo",
        messages=[{"role": "user", "content": "A pancake recipe"}],
        response_format=Recipe,
    )

    recipe = completion.choices[0].message.parsed
    assert isinstance(recipe, Recipe)
    assert len(recipe.steps) >= 2


def test_responses_parse_returns_the_model(client: openai.OpenAI) -> None:
    response = client.responses.parse(model="demo", input="A pancake recipe", text_format=Recipe)

    assert isinstance(response.output_parsed, Recipe)
