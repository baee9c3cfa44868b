"""Every other /v1/ path passed through to an openai-kind upstream (issue 21 parts 2-3),
in-process: the model found in a JSON or form body and swapped for the upstream's, the
`server.passthrough` provider for model-less paths, headers, keys, limits, errors, and
GET /v1/models/{id}."""

from __future__ import annotations

import gzip
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from app.config import ConfigError
from app.relay.passthrough import upstream_headers
from tests.integration.conftest import (
    CLIENT_KEY,
    OPENAI_BASE,
    PROVIDER_KEY,
    assert_error,
    make_config,
    raw_config,
    serve,
)

pytestmark = pytest.mark.anyio

AUDIO = bytes(range(256)) * 64 + b"\r\n--not-a-boundary\r\n"


class Chunks(httpx.AsyncByteStream):
    def __init__(self, content: bytes, size: int = 4096) -> None:
        self._content, self._size = content, size

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self._content), self._size):
            yield self._content[start : start + self._size]


Answer = httpx.Response | Callable[[], httpx.Response]
"""A Response (its content replayed), or what builds one (raw bytes, e.g. compressed)."""


class Recorder:
    """An httpx.MockTransport handler that keeps each request and answers from a table of
    (method, path) -> response; anything else gets a 500."""

    def __init__(self, answers: dict[tuple[str, str], Answer] | None = None) -> None:
        self.answers = answers or {}
        self.requests: list[httpx.Request] = []
        self.bodies: list[bytes] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(await request.aread())
        self.requests.append(request)
        answer = self.answers.get((request.method, request.url.path))
        if answer is None:
            return httpx.Response(500, json={"error": {"message": "unexpected"}})
        if callable(answer):
            return answer()
        # A fresh, unread stream each time, as a network transport gives (httpx reads a
        # Response built from `content` at once, and raw streaming needs it unread).
        return httpx.Response(
            answer.status_code, headers=answer.headers, stream=Chunks(answer.content)
        )

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]


def passthrough_config(**server: Any) -> dict[str, Any]:
    raw = raw_config()
    raw["server"] |= server
    raw["providers"]["oa"]["headers"] = {"OpenAI-Beta": "assistants=v2"}
    return raw


def multipart(fields: list[tuple[str, bytes, str | None]], boundary: str = "b0undary") -> bytes:
    """A form body by hand, so the tests control the order of its parts."""
    out = b""
    for name, value, filename in fields:
        disposition = f'form-data; name="{name}"'
        if filename:
            disposition += f'; filename="{filename}"\r\nContent-Type: audio/wav'
        out += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
        out += value + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


FORM_TYPE = {"content-type": "multipart/form-data; boundary=b0undary"}


async def test_json_model_is_swapped_and_the_answer_relayed_as_is() -> None:
    upstream = Recorder(
        {("POST", "/v1/moderations"): httpx.Response(200, json={"id": "modr-1", "results": []})}
    )
    async with serve(make_config(), transport=httpx.MockTransport(upstream)) as proxy:
        response = await proxy.post(
            "/v1/moderations?x=1", json={"input": "hi", "model": "mini", "extra": [1, 2]}
        )

    assert response.status_code == 200
    assert response.json() == {"id": "modr-1", "results": []}
    assert response.headers["x-toolrelay-model"] == "mini"
    assert str(upstream.last.url) == f"{OPENAI_BASE}/moderations?x=1"
    assert upstream.bodies[-1] == b'{"input":"hi","model":"gpt-4o-mini","extra":[1,2]}'
    assert upstream.last.headers["authorization"] == f"Bearer {PROVIDER_KEY}"


@pytest.mark.parametrize(
    "order", [["model", "file"], ["file", "model"], ["language", "model", "file"]]
)
async def test_a_forms_model_field_is_rewritten_and_the_file_kept(order: list[str]) -> None:
    parts = {
        "model": ("model", b"mini", None),
        "file": ("file", AUDIO, "a.wav"),
        "language": ("language", b"fr", None),
    }
    body = multipart([parts[name] for name in order])
    upstream = Recorder({("POST", "/v1/audio/transcriptions"): httpx.Response(200, text="ok")})
    async with serve(make_config(), transport=httpx.MockTransport(upstream)) as proxy:
        response = await proxy.post("/v1/audio/transcriptions", content=body, headers=FORM_TYPE)

    assert response.status_code == 200, response.text
    expected = multipart([parts[name] for name in order]).replace(b"mini", b"gpt-4o-mini")
    assert upstream.bodies[-1] == expected
    assert upstream.last.headers["content-type"] == FORM_TYPE["content-type"]
    assert int(upstream.last.headers["content-length"]) == len(expected)


async def test_a_form_without_model_goes_to_the_passthrough_provider_unchanged() -> None:
    body = multipart([("purpose", b"batch", None), ("file", b'{"a": 1}\n', "in.jsonl")])
    upstream = Recorder({("POST", "/v1/files"): httpx.Response(200, json={"id": "file-1"})})
    config = make_config(passthrough_config(passthrough="oa"))
    async with serve(config, transport=httpx.MockTransport(upstream)) as proxy:
        response = await proxy.post("/v1/files", content=body, headers=FORM_TYPE)

    assert response.json() == {"id": "file-1"}
    assert upstream.bodies[-1] == body
    assert "x-toolrelay-model" not in response.headers


async def test_a_binary_download_is_relayed_with_its_headers() -> None:
    content = bytes(range(256)) * 1000
    answer = httpx.Response(
        200,
        content=content,
        headers={
            "content-type": "application/octet-stream",
            "content-disposition": 'attachment; filename="out.bin"',
            "x-request-id": "req_up",
            "set-cookie": "tracking=1",
            "connection": "close, x-hop",
            "x-hop": "1",
        },
    )
    upstream = Recorder({("GET", "/v1/files/file-1/content"): answer})
    config = make_config(passthrough_config(passthrough="oa"))
    async with serve(config, transport=httpx.MockTransport(upstream)) as proxy:
        response = await proxy.get("/v1/files/file-1/content")

    assert response.content == content
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.headers["content-disposition"] == 'attachment; filename="out.bin"'
    assert response.headers["x-upstream-request-id"] == "req_up"
    assert response.headers["x-request-id"] != "req_up"
    for dropped in ("set-cookie", "x-hop", "connection"):
        assert dropped not in response.headers


async def test_client_headers_are_forwarded_but_its_key_and_hop_by_hop_ones_are_not() -> None:
    upstream = Recorder({("GET", "/v1/batches"): httpx.Response(200, json={"data": []})})
    config = make_config(passthrough_config(passthrough="oa"))
    async with serve(config, transport=httpx.MockTransport(upstream)) as proxy:
        await proxy.get(
            "/v1/batches",
            headers={
                "x-api-key": CLIENT_KEY,
                "x-custom": "kept",
                "connection": "keep-alive, x-drop",
                "x-drop": "1",
                "proxy-authorization": "Basic abc",
                "te": "trailers",
                "openai-beta": "client-value",
            },
        )

    sent = upstream.last.headers
    assert sent["x-custom"] == "kept"
    assert sent["authorization"] == f"Bearer {PROVIDER_KEY}"
    assert sent["openai-beta"] == "assistants=v2"  # the provider's configured header wins
    for dropped in ("x-api-key", "x-drop", "proxy-authorization", "te"):
        assert dropped not in sent
    assert CLIENT_KEY not in str(sent.raw)


async def test_a_compressed_answer_is_relayed_compressed_when_the_client_asked() -> None:
    packed = gzip.compress(b'{"data": []}')
    headers = {"content-encoding": "gzip", "content-type": "application/json"}
    upstream = Recorder(
        {
            ("GET", "/v1/batches"): lambda: httpx.Response(
                200, headers=headers, stream=Chunks(packed)
            )
        }
    )
    config = make_config(passthrough_config(passthrough="oa"))
    async with serve(config, transport=httpx.MockTransport(upstream)) as proxy:
        response = await proxy.get("/v1/batches", headers={"accept-encoding": "gzip"})

    assert upstream.last.headers["accept-encoding"] == "gzip"
    assert response.headers["content-encoding"] == "gzip"
    assert response.json() == {"data": []}


def test_without_the_clients_accept_encoding_the_upstream_is_asked_for_identity() -> None:
    provider = make_config().providers["oa"]
    sent = dict(upstream_headers([(b"accept", b"*/*")], provider, None))

    assert sent[b"accept-encoding"] == b"identity"  # relayed raw: no gzip the client never asked


async def test_no_model_and_no_setting_is_a_404_naming_the_setting() -> None:
    upstream = Recorder()
    async with serve(make_config(), transport=httpx.MockTransport(upstream)) as proxy:
        response = await proxy.post("/v1/files", content=b"x")

    error = assert_error(response, 404)
    assert "server.passthrough" in error["message"]
    assert "POST /v1/files" in error["message"]
    assert upstream.requests == []


async def test_a_model_of_another_kind_is_a_400_naming_it() -> None:
    async with serve(make_config(), transport=httpx.MockTransport(Recorder())) as proxy:
        response = await proxy.post("/v1/moderations", json={"model": "claude", "input": "x"})

    error = assert_error(response, 400)
    assert "claude" in error["message"]
    assert "anthropic" in error["message"]
    assert error["param"] == "model"


@pytest.mark.parametrize(
    ("body", "status"),
    [(b'{"model": "nope"}', 404), (b'{"model": 3}', 400), (b"{not json", 400)],
    ids=["unknown-model", "model-not-string", "not-json"],
)
async def test_a_bad_json_body_is_refused_before_any_upstream(body: bytes, status: int) -> None:
    upstream = Recorder()
    async with serve(make_config(), transport=httpx.MockTransport(upstream)) as proxy:
        response = await proxy.post(
            "/v1/images/generations", content=body, headers={"content-type": "application/json"}
        )

    assert_error(response, status)
    assert upstream.requests == []


async def test_an_upstream_error_is_relayed_as_it_came() -> None:
    error_body = {"error": {"message": "No such file", "type": "invalid_request_error"}}
    upstream = Recorder({("GET", "/v1/files/f-9"): httpx.Response(404, json=error_body)})
    config = make_config(passthrough_config(passthrough="oa"))
    async with serve(config, transport=httpx.MockTransport(upstream)) as proxy:
        response = await proxy.get("/v1/files/f-9")

    assert response.status_code == 404
    assert response.json() == error_body


@pytest.mark.parametrize(
    ("failure", "status"),
    [(httpx.ConnectError("refused"), 502), (httpx.ReadTimeout("slow"), 504)],
    ids=["unreachable", "timeout"],
)
async def test_network_failures_are_502_and_504(failure: Exception, status: int) -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        raise failure

    config = make_config(passthrough_config(passthrough="oa"))
    async with serve(config, transport=httpx.MockTransport(fail)) as proxy:
        response = await proxy.get("/v1/batches")

    assert_error(response, status)


def keyed(models: list[str] | None = None, **limits: int) -> dict[str, Any]:
    raw = passthrough_config(passthrough="oa")
    key: dict[str, Any] = {"name": "alice", "key": "alice-key-SECRET"}
    if models is not None:
        key["models"] = models
    if limits:
        key["limits"] = limits
    raw["server"] = {"keys": [key], "passthrough": "oa"}
    return raw


ALICE = {"authorization": "Bearer alice-key-SECRET"}


@pytest.mark.parametrize(
    ("models", "path", "body", "status"),
    [
        (["mini"], "/v1/files", None, 403),
        (["mini", "oa/*"], "/v1/files", None, 200),
        (["mini"], "/v1/moderations", {"model": "mini"}, 200),
        (["oa/*"], "/v1/moderations", {"model": "mini"}, 403),
        (["oa/*"], "/v1/moderations", {"model": "oa/omni-moderation-latest"}, 200),
    ],
)
async def test_the_allow_list_applies(
    models: list[str], path: str, body: dict[str, Any] | None, status: int
) -> None:
    ok = httpx.Response(200, json={})
    upstream = Recorder({("GET", "/v1/files"): ok, ("POST", "/v1/moderations"): ok})
    async with serve(
        make_config(keyed(models)), transport=httpx.MockTransport(upstream), client_key=None
    ) as proxy:
        if body is None:
            response = await proxy.get(path, headers=ALICE)
        else:
            response = await proxy.post(path, json=body, headers=ALICE)

    assert response.status_code == status, response.text
    if status == 403:
        assert "oa/*" in response.text or "mini" in response.text
        assert upstream.requests == []


async def test_rpm_applies_to_passed_through_requests() -> None:
    upstream = Recorder({("GET", "/v1/batches"): httpx.Response(200, json={})})
    async with serve(
        make_config(keyed(rpm=1)), transport=httpx.MockTransport(upstream), client_key=None
    ) as proxy:
        first = await proxy.get("/v1/batches", headers=ALICE)
        second = await proxy.get("/v1/batches", headers=ALICE)

    assert first.status_code == 200
    assert_error(second, 429)
    assert "retry-after" in second.headers
    assert len(upstream.requests) == 1


async def test_the_log_line_names_the_model_provider_and_status(
    caplog: pytest.LogCaptureFixture,
) -> None:
    upstream = Recorder({("POST", "/v1/moderations"): httpx.Response(201, json={})})
    with caplog.at_level(logging.INFO, logger="toolrelay.http"):
        async with serve(make_config(), transport=httpx.MockTransport(upstream)) as proxy:
            await proxy.post("/v1/moderations", json={"model": "mini"})

    fields = next(r.fields for r in caplog.records if getattr(r, "fields", None))  # type: ignore[attr-defined]
    assert fields["model"] == "mini"
    assert fields["provider"] == "oa"
    assert fields["status"] == 201
    assert fields["deployment"] == "mini#0:oa/gpt-4o-mini"


async def test_paths_the_proxy_serves_keep_their_405() -> None:
    config = make_config(passthrough_config(passthrough="oa"))
    upstream = Recorder()
    async with serve(config, transport=httpx.MockTransport(upstream)) as proxy:
        response = await proxy.get("/v1/chat/completions")

    assert_error(response, 405)
    assert upstream.requests == []


async def test_models_retrieve_answers_a_configured_model() -> None:
    async with serve(make_config()) as proxy:
        found = await proxy.get("/v1/models/oa/pinned")
        missing = await proxy.get("/v1/models/nope")

    assert found.json() == {"id": "oa/pinned", "object": "model", "created": 0, "owned_by": "oa"}
    assert assert_error(missing, 404)["code"] == "model_not_found"


async def test_models_retrieve_applies_the_allow_list() -> None:
    async with serve(make_config(keyed(["mini"])), client_key=None) as proxy:
        allowed = await proxy.get("/v1/models/mini", headers=ALICE)
        refused = await proxy.get("/v1/models/claude", headers=ALICE)

    assert allowed.status_code == 200
    assert_error(refused, 403)


@pytest.mark.parametrize(
    ("name", "message"), [("nobody", "unknown provider"), ("an", "kind anthropic")]
)
def test_the_setting_must_name_an_openai_provider(name: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_config(passthrough_config(passthrough=name))
