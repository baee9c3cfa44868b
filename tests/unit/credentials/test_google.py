"""GoogleTokens against a token endpoint double that verifies google-auth's real JWT
assertions (tests/helpers/google_token_server.py): one refresh however many wait, reuse until
REFRESH_MARGIN before expiry, failures as 401s naming the provider and holding no secret."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import google.auth.crypt
import google.auth.jwt
import pytest
import requests

from app.credentials import CredentialsUnavailable, Unavailable
from app.credentials.google import CLOUD_PLATFORM, REFRESH_MARGIN, GoogleTokens
from app.errors import AuthenticationFailed
from app.translators.base import UpstreamRequest
from tests.helpers.google_token_server import (
    AUDIENCE,
    JWT_BEARER,
    GoogleTokenServer,
    ServiceAccount,
)

pytestmark = pytest.mark.anyio

PROVIDER = "gcp-test"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def account() -> ServiceAccount:
    return ServiceAccount.generate()


@pytest.fixture
def server(account: ServiceAccount) -> Iterator[GoogleTokenServer]:
    with GoogleTokenServer(account) as token_server:
        yield token_server


@pytest.fixture
def key_file(account: ServiceAccount, server: GoogleTokenServer, tmp_path: Path) -> Path:
    return account.write_key_file(tmp_path / "key.json", server.token_uri)


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def until_received(server: GoogleTokenServer) -> None:
    """Yields to the loop until the double has a request in hand (held by `hold()`)."""
    for _ in range(2000):
        if server.received.is_set():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the token endpoint never got a request")


def secrets_of(account: ServiceAccount, key_file: Path, server: GoogleTokenServer) -> list[str]:
    """Strings no error or log line may hold: the key's lines, the file, the tokens."""
    key_lines = [line for line in account.private_key_pem.splitlines() if "-----" not in line]
    return [*key_lines, key_file.read_text(), *server.issued, "ya29."]


def request(headers: dict[str, str] | None = None) -> UpstreamRequest:
    return UpstreamRequest(
        url="https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/"
        "publishers/google/models/gemini-2.5-pro:generateContent",
        headers=headers or {"content-type": "application/json"},
        body=b"{}",
        stream=False,
    )


# -- the exchange itself -------------------------------------------------------------------------


async def test_a_token_comes_from_the_key_files_token_uri_for_a_verified_assertion(
    key_file: Path, server: GoogleTokenServer, account: ServiceAccount
) -> None:
    tokens = GoogleTokens.load(PROVIDER, str(key_file))

    assert await tokens.token() == "ya29.test-token-1"
    assert server.requests == 1
    (claims,) = server.claims
    assert claims["iss"] == account.client_email
    assert claims["aud"] == AUDIENCE  # Google's, though the request went to the file's token_uri
    assert claims["scope"].split() == [CLOUD_PLATFORM]
    tokens.close()


async def test_apply_adds_the_bearer_token_to_a_copy(key_file: Path) -> None:
    tokens = GoogleTokens.load(PROVIDER, str(key_file))
    original = request()

    applied = await tokens.apply(original)

    assert applied.headers == {
        "content-type": "application/json",
        "authorization": "Bearer ya29.test-token-1",
    }
    assert original.headers == {"content-type": "application/json"}
    assert (applied.url, applied.body, applied.stream) == (original.url, b"{}", False)


async def test_a_configured_authorization_header_is_kept(
    key_file: Path, server: GoogleTokenServer
) -> None:
    tokens = GoogleTokens.load(PROVIDER, str(key_file))
    configured = request({"Authorization": "Bearer from-config"})

    assert await tokens.apply(configured) is configured
    assert server.requests == 0


async def test_application_default_credentials_read_google_application_credentials(
    key_file: Path, server: GoogleTokenServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))

    tokens = GoogleTokens.load(PROVIDER, None)

    assert await tokens.token() == "ya29.test-token-1"
    assert server.claims[0]["iss"] == server.account.client_email


# -- caching and one refresh at a time -----------------------------------------------------------


async def test_fifty_waiting_requests_share_one_refresh(
    key_file: Path, server: GoogleTokenServer
) -> None:
    tokens = GoogleTokens.load(PROVIDER, str(key_file))
    server.hold()
    waiting = [asyncio.create_task(tokens.token()) for _ in range(50)]
    await until_received(server)
    server.release()

    assert await asyncio.gather(*waiting) == ["ya29.test-token-1"] * 50
    assert server.requests == 1


async def test_a_waiter_that_leaves_does_not_cancel_the_refresh_others_wait_on(
    key_file: Path, server: GoogleTokenServer
) -> None:
    tokens = GoogleTokens.load(PROVIDER, str(key_file))
    server.hold()
    first = asyncio.create_task(tokens.token())  # its client will hang up
    await until_received(server)
    second = asyncio.create_task(tokens.token())
    await asyncio.sleep(0)
    first.cancel()
    server.release()

    assert await second == "ya29.test-token-1"
    assert first.cancelled()
    assert server.requests == 1


async def test_the_token_is_reused_until_the_margin_before_its_expiry(
    key_file: Path, server: GoogleTokenServer
) -> None:
    clock = Clock()
    tokens = GoogleTokens.load(PROVIDER, str(key_file), clock=clock)
    assert await tokens.token() == "ya29.test-token-1"

    clock.now += server.expires_in - REFRESH_MARGIN - 10
    assert await tokens.token() == "ya29.test-token-1"
    assert server.requests == 1

    clock.now += 10
    assert await tokens.token() == "ya29.test-token-2"
    assert server.requests == 2
    clock.now += server.expires_in - REFRESH_MARGIN - 10
    assert await tokens.token() == "ya29.test-token-2"
    assert server.requests == 2


async def test_a_token_living_less_than_the_margin_is_refreshed_every_time(
    key_file: Path, server: GoogleTokenServer
) -> None:
    server.expires_in = int(REFRESH_MARGIN) - 1
    tokens = GoogleTokens.load(PROVIDER, str(key_file))

    assert [await tokens.token() for _ in range(3)] == [
        "ya29.test-token-1",
        "ya29.test-token-2",
        "ya29.test-token-3",
    ]
    assert server.requests == 3


async def test_the_event_loop_runs_while_a_refresh_waits_on_the_endpoint(
    key_file: Path, server: GoogleTokenServer
) -> None:
    tokens = GoogleTokens.load(PROVIDER, str(key_file))
    server.hold()
    refreshing = asyncio.create_task(tokens.token())
    await until_received(server)  # the loop ran while the endpoint held the request

    ticks = 0
    for _ in range(20):
        await asyncio.sleep(0)
        ticks += 1
    assert not refreshing.done()
    server.release()

    assert await refreshing == "ya29.test-token-1"
    assert ticks == 20


# -- refusals ------------------------------------------------------------------------------------


async def test_a_refused_assertion_is_a_401_naming_the_provider_and_no_secret(
    tmp_path: Path, server: GoogleTokenServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A key file whose key is not the account's: the double's signature check fails, as
    Google's would, with 400 invalid_grant."""
    impostor = dataclasses.replace(ServiceAccount.generate(), key_id=server.account.key_id)
    key_file = impostor.write_key_file(tmp_path / "key.json", server.token_uri)
    tokens = GoogleTokens.load(PROVIDER, str(key_file))

    with caplog.at_level(logging.WARNING), pytest.raises(AuthenticationFailed) as raised:
        await tokens.token()

    error = raised.value
    assert error.status == 401
    assert error.message == (
        f"The provider '{PROVIDER}' could not get a Google access token: the token endpoint "
        "refused the credentials (invalid_grant)."
    )
    assert error.__cause__ is None
    shown = [error.message, json.dumps(error.body()), caplog.text]
    for secret in secrets_of(impostor, key_file, server):
        assert not any(secret in text for text in shown)
    assert server.requests == 1


async def test_requests_waiting_on_a_refused_refresh_share_its_failure(
    key_file: Path, server: GoogleTokenServer
) -> None:
    server.refuse = "invalid_grant"
    tokens = GoogleTokens.load(PROVIDER, str(key_file))
    server.hold()
    waiting = [asyncio.create_task(tokens.token()) for _ in range(10)]
    await until_received(server)
    server.release()

    outcomes = await asyncio.gather(*waiting, return_exceptions=True)

    assert all(isinstance(outcome, AuthenticationFailed) for outcome in outcomes)
    assert server.requests == 1
    with pytest.raises(AuthenticationFailed):  # a later request tries again
        await tokens.token()
    assert server.requests == 2


async def test_a_failed_refresh_keeps_a_token_that_is_still_good(
    key_file: Path, server: GoogleTokenServer
) -> None:
    clock = Clock()
    tokens = GoogleTokens.load(PROVIDER, str(key_file), clock=clock)
    assert await tokens.token() == "ya29.test-token-1"

    server.refuse = "invalid_grant"
    clock.now += server.expires_in - REFRESH_MARGIN + 1
    assert await tokens.token() == "ya29.test-token-1"
    assert await tokens.token() == "ya29.test-token-1"  # not tried again at once
    assert server.requests == 2

    server.refuse = None
    clock.now += 60
    assert await tokens.token() == "ya29.test-token-2"


async def test_an_unreachable_endpoint_is_a_401_naming_the_provider(
    account: ServiceAccount, tmp_path: Path
) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    key_file = account.write_key_file(tmp_path / "key.json", f"http://127.0.0.1:{port}/token")
    tokens = GoogleTokens.load(PROVIDER, str(key_file))

    with pytest.raises(AuthenticationFailed) as raised:
        await tokens.apply(request())

    assert raised.value.message == (
        f"The provider '{PROVIDER}' could not get a Google access token: the token endpoint "
        "could not be reached."
    )


# -- credentials that cannot be loaded -----------------------------------------------------------


def garbled_key(account: ServiceAccount, token_uri: str) -> str:
    key_file = account.key_file_json(token_uri)
    key_file["private_key"] = key_file["private_key"].replace("A", "B")[:200]
    return json.dumps(key_file)


KEY_FILE_TEXTS = {
    "not json": lambda account, uri: "PRIVATE not json at all",
    "a json list": lambda account, uri: "[1, 2]",
    "no private key": lambda account, uri: json.dumps(
        {k: v for k, v in account.key_file_json(uri).items() if k != "private_key"}
    ),
    "no token_uri": lambda account, uri: json.dumps(
        {k: v for k, v in account.key_file_json(uri).items() if k != "token_uri"}
    ),
    "a garbled private key": garbled_key,
}


@pytest.mark.parametrize("text", KEY_FILE_TEXTS.values(), ids=KEY_FILE_TEXTS.keys())
def test_a_key_file_that_is_no_service_account_key_is_unavailable_in_one_line(
    text: object, account: ServiceAccount, tmp_path: Path
) -> None:
    key_file = tmp_path / "key.json"
    key_file.write_text(text(account, "http://127.0.0.1:9/token"))  # type: ignore[operator]

    with pytest.raises(CredentialsUnavailable) as raised:
        GoogleTokens.load(PROVIDER, str(key_file))

    message = str(raised.value)
    assert message == (
        f"The provider '{PROVIDER}' has no usable credentials: the key file '{key_file}' is not "
        "a Google service-account key (JSON with client_email, private_key and token_uri)."
    )
    assert raised.value.__cause__ is None
    assert key_file.read_text() not in message


def test_a_missing_key_file_is_unavailable(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"

    with pytest.raises(CredentialsUnavailable) as raised:
        GoogleTokens.load(PROVIDER, str(missing))

    assert raised.value.message == (
        f"The provider '{PROVIDER}' has no usable credentials: cannot read the key file "
        f"'{missing}' (No such file or directory)."
    )


def test_adc_naming_a_missing_file_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "gone.json"))

    with pytest.raises(CredentialsUnavailable) as raised:
        GoogleTokens.load(PROVIDER, "")

    assert "\n" not in raised.value.message
    assert raised.value.message == (
        f"The provider '{PROVIDER}' has no usable credentials: GOOGLE_APPLICATION_CREDENTIALS "
        f"names '{tmp_path / 'gone.json'}', which is not a usable key file."
    )


async def test_unavailable_credentials_answer_401_naming_the_provider_not_the_reason() -> None:
    """The reason (a path on the proxy's machine) is for the start-up log, not for clients."""
    reason = CredentialsUnavailable(PROVIDER, "cannot read the key file 'k.json' (denied)")

    with pytest.raises(AuthenticationFailed) as raised:
        await Unavailable(reason).apply(request())

    assert raised.value.status == 401
    assert f"'{PROVIDER}'" in raised.value.message
    assert "k.json" not in raised.value.message


# -- the double is Google's, not ours ------------------------------------------------------------


def signed(account: ServiceAccount, claims: dict[str, object]) -> str:
    """An assertion made by google-auth's own JWT encoder, with the claims given."""
    signer = google.auth.crypt.RSASigner.from_string(  # type: ignore[no-untyped-call]
        account.private_key_pem, account.key_id
    )
    return google.auth.jwt.encode(signer, claims).decode()  # type: ignore[no-untyped-call,no-any-return]


def good_claims(account: ServiceAccount, server: GoogleTokenServer) -> dict[str, object]:
    now = int(time.time())
    return {
        "iss": account.client_email,
        "aud": AUDIENCE,
        "scope": CLOUD_PLATFORM,
        "iat": now,
        "exp": now + 3600,
    }


BAD_CLAIMS = {
    "another issuer": {"iss": "someone@else.iam.gserviceaccount.com"},
    "another audience": {"aud": "https://accounts.google.com/o/oauth2/token"},
    "no cloud-platform scope": {"scope": "https://www.googleapis.com/auth/devstorage.read_only"},
    "expired": {"iat": 1_000_000, "exp": 1_003_600},
    "living past an hour": {"exp": 10**10},
}


@pytest.mark.parametrize("change", BAD_CLAIMS.values(), ids=BAD_CLAIMS.keys())
def test_the_double_refuses_what_google_would(
    change: dict[str, object], account: ServiceAccount, server: GoogleTokenServer
) -> None:
    assertion = signed(account, {**good_claims(account, server), **change})

    answer = requests.post(
        server.token_uri, data={"grant_type": JWT_BEARER, "assertion": assertion}, timeout=5
    )

    assert answer.status_code == 400
    assert answer.json()["error"] in {"invalid_grant", "invalid_scope"}
    assert server.issued == []


def test_the_double_refuses_a_forged_signature_and_accepts_a_good_one(
    account: ServiceAccount, server: GoogleTokenServer
) -> None:
    claims = good_claims(account, server)
    header, body, _signature = signed(account, claims).split(".")
    forged = f"{header}.{body}.{signed(ServiceAccount.generate(), claims).split('.')[2]}"
    post = {"grant_type": JWT_BEARER}

    refused = requests.post(server.token_uri, data={**post, "assertion": forged}, timeout=5)
    accepted = requests.post(
        server.token_uri, data={**post, "assertion": signed(account, claims)}, timeout=5
    )
    wrong_grant = requests.post(
        server.token_uri,
        data={"grant_type": "client_credentials", "assertion": signed(account, claims)},
        timeout=5,
    )

    assert refused.json() == {
        "error": "invalid_grant",
        "error_description": "Invalid JWT Signature.",
    }
    assert accepted.json() == {
        "access_token": "ya29.test-token-1",
        "expires_in": 3599,
        "token_type": "Bearer",
    }
    assert wrong_grant.json()["error"] == "unsupported_grant_type"
