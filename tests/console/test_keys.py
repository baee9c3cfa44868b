"""/v1/keys on both databases: a key made at run time works at once (on every replica), its
secret shown once and stored as SHA-256 only; a revoked or expired one is refused; config
keys are listed and cannot be deleted."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.console.schema import CURRENT, MIGRATIONS, current_version, migrate
from app.console.settings import DatabaseConfig
from tests.console.conftest import ADMIN, console_config
from tests.integration.conftest import CLIENT_KEY, USER, assert_error, serve

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


CHAT = {"model": "demo", "messages": USER}


async def test_a_created_key_works_and_a_revoked_one_is_refused(database_url: str) -> None:
    async with serve(console_config(database_url), client_key=None) as proxy:
        made = await proxy.post(
            "/v1/keys",
            json={"name": "ci", "models": ["demo"], "limits": {"rpm": 100}, "team": None},
            headers=ADMIN,
        )
        assert made.status_code == 201, made.text
        body = made.json()
        secret = body.pop("key")
        assert secret.startswith("tr-")
        assert len(secret) == 43
        assert body["source"] == "api"
        assert body["models"] == ["demo"]
        own = {"authorization": f"Bearer {secret}"}
        assert (await proxy.post("/v1/chat/completions", json=CHAT, headers=own)).is_success
        refused = await proxy.post(
            "/v1/chat/completions", json={**CHAT, "model": "mini"}, headers=own
        )
        assert_error(refused, 403)
        listed = (await proxy.get("/v1/keys", headers=ADMIN)).json()["data"]
        assert [(k["name"], k["source"]) for k in listed] == [("default", "config"), ("ci", "api")]
        assert secret not in str(listed)
        assert (await proxy.delete("/v1/keys/ci", headers=ADMIN)).status_code == 204
        assert_error(await proxy.post("/v1/chat/completions", json=CHAT, headers=own), 401)
        for name in ("default",):
            assert_error(await proxy.delete(f"/v1/keys/{name}", headers=ADMIN), 409)
        assert_error(await proxy.delete("/v1/keys/ci", headers=ADMIN), 404)
        # the name is free again
        assert (await proxy.post("/v1/keys", json={"name": "ci"}, headers=ADMIN)).status_code == 201
        assert_error(await proxy.post("/v1/keys", json={"name": "ci"}, headers=ADMIN), 409)
        assert_error(await proxy.post("/v1/keys", json={"name": "default"}, headers=ADMIN), 409)


async def test_keys_are_shared_by_replicas_and_stored_as_digests(database_url: str) -> None:
    config = console_config(database_url, api_keys=[])
    async with serve(config, client_key=None) as one, serve(config, client_key=None) as two:
        assert (await two.post("/v1/chat/completions", json=CHAT)).is_success  # no key yet
        made = (await one.post("/v1/keys", json={"name": "shared"}, headers=ADMIN)).json()
        await one.post("/v1/keys", json={"name": "stays"}, headers=ADMIN)
        own = {"authorization": f"Bearer {made['key']}"}
        assert (await two.post("/v1/chat/completions", json=CHAT, headers=own)).is_success
        assert (await one.delete("/v1/keys/shared", headers=ADMIN)).status_code == 204
        await two._transport.app.state.proxy.console.keys.reload()  # what its 1 s poll does
        assert_error(await two.post("/v1/chat/completions", json=CHAT, headers=own), 401)
        console = one._transport.app.state.proxy.console
        digest_only = await console.keys.listed()
        assert all("key" not in key and "digest" not in key for key in digest_only)
    if database_url.startswith("sqlite"):
        raw = Path(database_url.removeprefix("sqlite:///")).read_bytes()
        assert made["key"].encode() not in raw
        assert hashlib.sha256(made["key"].encode()).hexdigest().encode() not in raw  # revoked


async def test_expired_and_bad_bodies(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/k.db"
    async with serve(console_config(url), client_key=None) as proxy:
        for bad in (
            {"name": "a", "expires_at": "2001-01-01T00:00:00Z"},
            {"name": "a", "models": ["nope"]},
            {"name": ""},
            {"models": ["demo"]},
            {"name": "a", "limits": {"rpm": 0}},
            [],
        ):
            assert_error(await proxy.post("/v1/keys", json=bad, headers=ADMIN), 400)
        assert_error(await proxy.post("/v1/keys", content=b"{", headers=ADMIN), 400)
        assert_error(await proxy.post("/v1/keys", json={"name": "a"}), 401)
        client = {"authorization": f"Bearer {CLIENT_KEY}"}
        assert_error(await proxy.post("/v1/keys", json={"name": "a"}, headers=client), 403)


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
BODIES = (
    st.fixed_dictionaries(
        {},
        optional={
            "name": JSONISH | st.text(max_size=30),
            "models": JSONISH | st.lists(st.sampled_from(["demo", "mini", "x", "oa/*"])),
            "limits": JSONISH,
            "budget": JSONISH,
            "team": JSONISH,
            "expires_at": JSONISH | st.sampled_from(["2999-01-01", "1999-01-01T00:00Z", "x"]),
        },
    )
    | JSONISH
)
QUERIES = st.dictionaries(
    st.sampled_from(["model", "key", "status", "api", "since", "until", "limit", "cursor"]),
    st.text(max_size=30) | st.integers().map(str),
    max_size=5,
)


async def test_fuzzed_bodies_and_filters_never_a_5xx(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/f.db"
    async with serve(console_config(url), client_key=None) as proxy:
        seen: list[Any] = []

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(body=BODIES, query=QUERIES)
        def run(body: Any, query: dict[str, str]) -> None:
            seen.append((body, query))

        run()
        for body, query in seen:
            made = await proxy.post("/v1/keys", json=body, headers=ADMIN)
            assert made.status_code in (201, 400, 409), made.text
            logs = await proxy.get("/v1/logs", params=query, headers=ADMIN)
            assert logs.status_code in (200, 400), logs.text


async def test_schema_upgrades_from_version_1(database_url: str) -> None:
    from app.console.database import make_engine

    engine = make_engine(DatabaseConfig(url=database_url))
    try:
        async with engine.begin() as conn:
            assert await migrate(conn, target=1) == 0
            await conn.exec_driver_sql(
                "INSERT INTO keys (name, digest, limits, created_at) VALUES ('old', 'ab', '{}', 1)"
            )
        async with engine.begin() as conn:
            assert await migrate(conn) == 1
            assert await current_version(conn) == CURRENT == len(MIGRATIONS)
            names = (await conn.exec_driver_sql("SELECT name FROM keys")).scalars().all()
            assert names == ["old"]
            await conn.exec_driver_sql("SELECT team FROM requests")
        async with engine.begin() as conn:
            assert await migrate(conn) == CURRENT  # nothing left to do
    finally:
        await engine.dispose()
