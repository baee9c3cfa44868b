"""Every recovery transcript, whole and at every split: the stream scanner must give the same
events however the text is cut into deltas, and recover() the expected answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.toolcalls.recovery import Call, Text, recover
from tests.unit.toolcalls.scanning import scan, splits

TRANSCRIPTS = sorted((Path(__file__).parents[2] / "transcripts" / "recovery").glob("*/*.json"))
IDS = [f"{path.parent.name}/{path.stem}" for path in TRANSCRIPTS]


def load(path: Path) -> dict[str, Any]:
    transcript: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return transcript


def test_there_are_transcripts_for_every_format() -> None:
    formats = {path.parent.name for path in TRANSCRIPTS}
    expected = {"hermes", "qwen_xml", "mistral", "llama", "pythonic", "deepseek", "kimi", "json"}
    assert formats == {*expected, "negative"}


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=IDS)
def test_recover_gives_the_expected_answer(path: Path) -> None:
    transcript = load(path)
    expected = transcript["expected"]
    result = recover(transcript["text"], transcript["tools"], transcript["mode"])
    assert result.content == expected["content"]
    assert result.reasoning == expected["reasoning"]
    assert [[call.name, json.loads(call.arguments)] for call in result.calls] == expected["calls"]
    assert [call.arguments for call in result.calls] == [
        json.dumps(arguments, ensure_ascii=False) for _, arguments in expected["calls"]
    ]


@pytest.mark.parametrize("under", ["own", "auto"])
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=IDS)
def test_stream_events_do_not_depend_on_the_split(path: Path, under: str) -> None:
    """Under the transcript's own mode and under `auto`, which looks for every format at once
    (a shorter marker of one format must not pre-empt a longer one of another mid-stream)."""
    transcript = load(path)
    text, tools = transcript["text"], transcript["tools"]
    mode = transcript["mode"] if under == "own" else "auto"
    whole = scan([text], tools, mode)
    for pieces in splits(text, seed=path.stem):
        assert scan(pieces, tools, mode) == whole, pieces


POSITIVE = [path for path in TRANSCRIPTS if path.parent.name != "negative"]


@pytest.mark.parametrize("path", POSITIVE, ids=[f"{p.parent.name}/{p.stem}" for p in POSITIVE])
def test_auto_streamed_at_any_split_recovers_what_the_format_mode_recovers(path: Path) -> None:
    transcript = load(path)
    text, tools = transcript["text"], transcript["tools"]
    expected = scan([text], tools, transcript["mode"])
    for pieces in splits(text, seed=path.stem):
        assert scan(pieces, tools, "auto") == expected, pieces


@pytest.mark.parametrize("path", POSITIVE, ids=[f"{p.parent.name}/{p.stem}" for p in POSITIVE])
def test_auto_recovers_what_the_format_mode_recovers(path: Path) -> None:
    transcript = load(path)
    text, tools = transcript["text"], transcript["tools"]
    assert recover(text, tools, "auto") == recover(text, tools, transcript["mode"])


def test_calls_are_emitted_in_order_after_the_prose() -> None:
    path = next(path for path in TRANSCRIPTS if path.stem == "two_calls_with_prose")
    transcript = load(path)
    events = scan([transcript["text"]], transcript["tools"], transcript["mode"])
    assert [type(event) for event in events] == [Text, Call, Call]
