"""Client keys: the KeyRing built from `api_keys` and named `keys` (plaintext or SHA-256),
identifying a presented key, the Authorization / x-api-key headers, and each key's model
allow-list."""

from __future__ import annotations

import hashlib

import pytest

from app.api.auth import client_key
from app.errors import AuthenticationFailed, ModelNotAllowed
from app.ops.keys import ANONYMOUS, ClientKey, KeyRing
from app.server_config import DEFAULT_KEY_NAME, KeyConfig, Limits, ServerConfig


def sha256(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


ALICE_LIMITS = Limits(rpm=60, tpm=100_000, concurrent=4)
SERVER = ServerConfig(
    api_keys=["sk-old-1", "", "sk-old-2"],
    keys=[
        KeyConfig(name="alice", key="sk-alice", models=["claude"], limits=ALICE_LIMITS),
        KeyConfig(name="bob", key_sha256=sha256("sk-bob")),
        KeyConfig(name="carol", key_sha256=sha256("sk-carol").upper()),
    ],
)
RING = KeyRing(SERVER)


@pytest.mark.parametrize(
    ("presented", "name"),
    [
        (b"sk-old-1", DEFAULT_KEY_NAME),
        (b"sk-old-2", DEFAULT_KEY_NAME),
        (b"sk-alice", "alice"),
        (b"sk-bob", "bob"),
        (b"sk-carol", "carol"),
    ],
)
def test_identify_finds_the_key(presented: bytes, name: str) -> None:
    assert RING.identify(presented).name == name


def test_a_named_key_carries_its_allow_list_and_limits() -> None:
    alice = RING.identify(b"sk-alice")
    assert alice == ClientKey("alice", frozenset({"claude"}), frozenset(), ALICE_LIMITS)
    assert RING.identify(b"sk-bob").models is None
    assert not RING.identify(b"sk-old-1").limits.any


@pytest.mark.parametrize(
    "presented",
    [b"sk-wrong", b"", b"sk-alice ", b"SK-ALICE", b"sk-alic", sha256("sk-bob").encode()],
)
def test_a_wrong_key_is_401_without_the_key(presented: bytes) -> None:
    with pytest.raises(AuthenticationFailed) as caught:
        RING.identify(presented)
    error = caught.value
    assert (error.status, error.type, error.code) == (
        401,
        "authentication_error",
        "invalid_api_key",
    )
    if presented:
        assert presented.decode() not in error.message
    assert "sk-" not in error.message


def test_an_empty_api_key_is_no_key() -> None:
    # `${T:-}` left an empty entry: presenting nothing must not match it.
    ring = KeyRing(ServerConfig(api_keys=["", "sk-1"]))
    with pytest.raises(AuthenticationFailed):
        ring.identify(b"")


def test_named_has_one_entry_per_name() -> None:
    assert [key.name for key in RING.named] == [DEFAULT_KEY_NAME, "alice", "bob", "carol"]
    assert RING.required


def test_without_keys_everyone_is_anonymous() -> None:
    ring = KeyRing(ServerConfig())
    assert not ring.required
    assert ring.named == [ANONYMOUS]
    assert ANONYMOUS.models is None
    assert not ANONYMOUS.limits.any
    only_empty = KeyRing(ServerConfig(api_keys=["", ""]))
    assert not only_empty.required
    assert only_empty.named == [ANONYMOUS]


def test_only_api_keys_are_all_default() -> None:
    ring = KeyRing(ServerConfig(api_keys=["a", "b"]))
    assert [key.name for key in ring.named] == [DEFAULT_KEY_NAME]
    assert ring.identify(b"a") == ring.identify(b"b") == ClientKey(DEFAULT_KEY_NAME)


def test_each_api_key_keeps_its_stored_responses_apart() -> None:
    """All are `default` in logs and limits, but each entry's stored responses are its own."""
    ring = KeyRing(ServerConfig(api_keys=["a", "b"], keys=[KeyConfig(name="alice", key="c")]))
    scopes = {ring.identify(secret).scope for secret in (b"a", b"b", b"c")}
    assert len(scopes) == 3
    assert ring.identify(b"c").scope == "alice"


# -- headers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "api_key", "name"),
    [
        (b"Bearer sk-alice", None, "alice"),
        (b"bearer sk-alice", None, "alice"),
        (b"BEARER  sk-alice ", None, "alice"),
        (None, b"sk-bob", "bob"),
        (None, b" sk-bob ", "bob"),
        (b"Bearer sk-wrong", b"sk-bob", "bob"),  # x-api-key wins when sent
    ],
)
def test_client_key_reads_the_headers(
    authorization: bytes | None, api_key: bytes | None, name: str
) -> None:
    assert client_key(RING, authorization, api_key).name == name


@pytest.mark.parametrize(
    ("authorization", "api_key", "code"),
    [
        (None, None, "missing_api_key"),
        (b"Basic sk-alice", None, "invalid_api_key"),
        (b"sk-alice", None, "invalid_api_key"),
        (b"Bearer sk-alice", b"sk-wrong", "invalid_api_key"),
        (None, b"", "invalid_api_key"),
    ],
)
def test_client_key_refusals(authorization: bytes | None, api_key: bytes | None, code: str) -> None:
    with pytest.raises(AuthenticationFailed) as caught:
        client_key(RING, authorization, api_key)
    assert caught.value.status == 401
    assert caught.value.code == code
    assert "sk-alice" not in caught.value.message
    assert "sk-wrong" not in caught.value.message


# -- allow-lists ----------------------------------------------------------------------------


def key_with(models: list[str] | None) -> ClientKey:
    ring = KeyRing(ServerConfig(keys=[KeyConfig(name="k", key="sk-k", models=models)]))
    return ring.identify(b"sk-k")


@pytest.mark.parametrize(
    ("models", "model", "allowed"),
    [
        (None, "claude", True),
        (None, "oa/anything", True),
        (["claude", "gpt-4o-mini"], "claude", True),
        (["claude", "gpt-4o-mini"], "gpt-4o-mini", True),
        (["claude", "gpt-4o-mini"], "gpt-4o", False),
        (["claude", "gpt-4o-mini"], "Claude", False),
        (["claude"], "oa/claude", False),
        (["claude"], "claude/x", False),
        ([], "claude", False),
        (["oa/*"], "oa/gpt-4o", True),
        (["oa/*"], "oa/org/model:tag", True),
        (["oa/*"], "ob/gpt-4o", False),
        (["oa/*"], "oa", False),
        (["oa/*"], "claude", False),
        (["oa/*"], "xoa/gpt-4o", False),
        (["oa/*", "claude"], "claude", True),
        (["oa/gpt-4o"], "oa/gpt-4o", True),
        (["oa/gpt-4o"], "oa/gpt-4o-mini", False),
        (["oa/gpt-4o"], "oa/*", False),
        (["team/claude"], "team/claude", True),
        (["team/claude"], "team/other", False),
    ],
)
def test_may_use(models: list[str] | None, model: str, allowed: bool) -> None:
    key = key_with(models)
    assert key.may_use(model) is allowed
    if allowed:
        key.check(model)
    else:
        with pytest.raises(ModelNotAllowed) as caught:
            key.check(model)
        error = caught.value
        assert (error.status, error.type, error.code) == (
            403,
            "permission_error",
            "model_not_allowed",
        )
        assert error.param == "model"
        assert "'k'" in error.message
        assert f"'{model}'" in error.message
        assert "sk-k" not in error.message
