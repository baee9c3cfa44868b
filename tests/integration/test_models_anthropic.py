"""GET /v1/models with an `anthropic-version` header (issue 38: Claude Code's gateway model
discovery, the anthropic SDK's `models.list`/`retrieve`) answers in Anthropic's shapes, paged
as Anthropic pages; without the header, OpenAI's. The key's allow-list applies as it does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx
import httpx2
import pytest

from tests.helpers.mock_upstream import MockUpstream
from tests.integration.conftest import CLIENT_KEY, make_config, serve
from tests.integration.test_team_keys_limits import ALICE_KEY, team_config

pytestmark = pytest.mark.anyio

NAMES = ["mini", "oa/pinned", "claude", "demo"]


@pytest.fixture
async def client(anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(make_config()) as proxy:
        yield proxy


def sdk(http: httpx.AsyncClient, key: str = CLIENT_KEY) -> anthropic.AsyncAnthropic:
    """The SDK (which runs on httpx2) on the same in-process app as `http`."""
    transport = http._transport
    assert isinstance(transport, httpx.ASGITransport)
    own = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=transport.app))
    return anthropic.AsyncAnthropic(api_key=key, base_url=str(http.base_url), http_client=own)


async def test_the_anthropic_sdk_lists_the_models(client: httpx.AsyncClient) -> None:
    listed = [model async for model in sdk(client).models.list()]

    assert [model.id for model in listed] == NAMES
    assert {(model.type, model.display_name == model.id) for model in listed} == {("model", True)}
    assert all(model.created_at.year == 1970 for model in listed)


async def test_the_anthropic_sdk_pages_through_them(client: httpx.AsyncClient) -> None:
    first = await sdk(client).models.list(limit=3)
    second = await first.get_next_page()

    assert [model.id for model in first.data] == NAMES[:3]
    assert (first.has_more, first.first_id, first.last_id) == (True, "mini", "claude")
    assert [model.id for model in second.data] == NAMES[3:]
    assert second.has_more is False
    before = await sdk(client).models.list(before_id="demo", limit=2)
    assert [model.id for model in before.data] == ["oa/pinned", "claude"]
    assert before.has_more is True


async def test_the_anthropic_sdk_retrieves_one(client: httpx.AsyncClient) -> None:
    model = await sdk(client).models.retrieve("oa/pinned")

    assert (model.type, model.id, model.display_name) == ("model", "oa/pinned", "oa/pinned")


async def test_the_raw_shape_is_anthropics(client: httpx.AsyncClient) -> None:
    answer = await client.get("/v1/models", headers={"anthropic-version": "2023-06-01"})

    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body) == {"data", "has_more", "first_id", "last_id"}
    assert set(body["data"][0]) >= {"type", "id", "display_name", "created_at"}
    assert body["data"][0]["created_at"] == "1970-01-01T00:00:00Z"


async def test_without_the_header_the_shape_is_openais(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/models")).json()

    assert body["object"] == "list"
    assert [model["id"] for model in body["data"]] == NAMES


@pytest.mark.parametrize("limit", ["0", "1001", "x"])
async def test_a_bad_limit_is_a_400(client: httpx.AsyncClient, limit: str) -> None:
    headers = {"anthropic-version": "2023-06-01"}
    answer = await client.get("/v1/models", params={"limit": limit}, headers=headers)

    assert answer.status_code == 400, answer.text


async def test_the_keys_allow_list_applies(mock_upstream: MockUpstream) -> None:
    async with serve(make_config(team_config(mock_upstream)), client_key=None) as http:
        listed = [model.id async for model in sdk(http, ALICE_KEY).models.list()]
        with pytest.raises(anthropic.PermissionDeniedError):
            await sdk(http, ALICE_KEY).models.retrieve("big")

    assert listed == ["mini", "demo"]


async def test_a_bad_key_is_anthropics_authentication_error(client: httpx.AsyncClient) -> None:
    with pytest.raises(anthropic.AuthenticationError) as raised:
        await sdk(client, "not-a-key").models.list()

    assert raised.value.status_code == 401
    assert anthropic_error(raised.value)["type"] == "authentication_error"


async def test_an_unknown_model_is_anthropics_not_found_error(client: httpx.AsyncClient) -> None:
    with pytest.raises(anthropic.NotFoundError) as raised:
        await sdk(client).models.retrieve("no-such-model")

    assert raised.value.status_code == 404
    error = anthropic_error(raised.value)
    assert error["type"] == "not_found_error"
    assert "no-such-model" in error["message"]


async def test_a_bad_limit_is_anthropics_invalid_request_error(client: httpx.AsyncClient) -> None:
    with pytest.raises(anthropic.BadRequestError) as raised:
        await sdk(client).models.list(limit=0)

    assert anthropic_error(raised.value)["type"] == "invalid_request_error"


async def test_without_the_header_errors_stay_openais(client: httpx.AsyncClient) -> None:
    unknown = await client.get("/v1/models/no-such-model")
    bad_key = await client.get("/v1/models", headers={"authorization": "Bearer not-a-key"})

    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "model_not_found"
    assert bad_key.status_code == 401
    assert set(bad_key.json()) == {"error"}
    assert bad_key.json()["error"]["code"] == "invalid_api_key"


def anthropic_error(raised: anthropic.APIStatusError) -> dict[str, Any]:
    """The error object of Anthropic's error body `{"type": "error", "error": {...}}`, as the
    SDK parsed it."""
    body = raised.body
    assert isinstance(body, dict)
    assert set(body) == {"type", "error"}
    assert body["type"] == "error"
    error: dict[str, Any] = body["error"]
    assert {"type", "message"} <= set(error)
    return error
