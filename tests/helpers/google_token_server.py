"""A Google OAuth2 token endpoint on 127.0.0.1 that checks a service account's JWT assertion
the way Google does, for the Vertex credentials tests.

What it checks is Google's documented exchange ("Using OAuth 2.0 for Server to Server
Applications", HTTP/REST; RFC 7523): a form POST with `grant_type`
`urn:ietf:params:oauth:grant-type:jwt-bearer` and an `assertion` that is a JWT signed RS256
with the account's private key (verified here with its public key, by `cryptography`, not by
google-auth, so the client is checked by someone else's reading of the spec), `kid` the key's
id, `iss` the account's email, `aud` Google's token endpoint (`AUDIENCE`), `scope`
space-separated, `iat` now and `exp` at most an hour later. A refusal is Google's: 400
`{"error": "invalid_grant", "error_description": ...}`. An answer is `{"access_token",
"expires_in", "token_type": "Bearer"}`. google-auth is the real client, so its accepting
these answers, and this verifying its JWTs, proves both sides."""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
AUDIENCE = "https://oauth2.googleapis.com/token"
"""Google: `aud` "when making an access token request ... is always
https://oauth2.googleapis.com/token", whatever URI the request goes to (a key file's
`token_uri`): google-auth sends this constant (service_account._GOOGLE_OAUTH2_TOKEN_ENDPOINT)."""
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_PATH = "/token"
MAX_LIFETIME = 3600  # Google: "exp ... maximum of 1 hour after the issued time"
CLOCK_SKEW = 300


@dataclass(frozen=True)
class ServiceAccount:
    """A throwaway service account: a fresh RSA key, and the key file Google would issue."""

    client_email: str
    key_id: str
    private_key_pem: str
    public_key: rsa.RSAPublicKey

    @classmethod
    def generate(
        cls, client_email: str = "relay@test-project.iam.gserviceaccount.com"
    ) -> ServiceAccount:
        private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        return cls(client_email, "k" + str(time.monotonic_ns()), pem, private_key.public_key())

    def key_file_json(self, token_uri: str) -> dict[str, str]:
        """The fields of a key file as the Cloud console writes it."""
        return {
            "type": "service_account",
            "project_id": "test-project",
            "private_key_id": self.key_id,
            "private_key": self.private_key_pem,
            "client_email": self.client_email,
            "client_id": "1234567890",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": token_uri,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/relay",
            "universe_domain": "googleapis.com",
        }

    def write_key_file(self, path: Path, token_uri: str) -> Path:
        path.write_text(json.dumps(self.key_file_json(token_uri)))
        return path


class Refused(Exception):
    """An assertion Google would refuse: 400 with this OAuth2 error."""

    def __init__(self, description: str, error: str = "invalid_grant") -> None:
        super().__init__(description)
        self.error = error
        self.description = description


def b64url_json(part: str) -> dict[str, Any]:
    decoded = json.loads(b64url(part))
    if not isinstance(decoded, dict):
        raise Refused("Invalid JWT: not a JSON object")
    return decoded


def b64url(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def verify_assertion(assertion: str, account: ServiceAccount, now: float) -> dict[str, Any]:
    """The assertion's claims, if Google would accept it for `account`."""
    try:
        header_part, claims_part, signature_part = assertion.split(".")
        header, claims = b64url_json(header_part), b64url_json(claims_part)
        signature = b64url(signature_part)
    except (ValueError, UnicodeDecodeError):
        raise Refused("Invalid JWT: not three base64url parts") from None
    if header.get("alg") != "RS256" or header.get("kid") != account.key_id:
        raise Refused(f"Invalid JWT header: {header}")
    signed = f"{header_part}.{claims_part}".encode()
    try:
        account.public_key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        raise Refused("Invalid JWT Signature.") from None
    check_claims(claims, account, now)
    return claims


def check_claims(claims: dict[str, Any], account: ServiceAccount, now: float) -> None:
    if claims.get("iss") != account.client_email:
        raise Refused("Invalid JWT: iss is not the account's client_email")
    if claims.get("aud") != AUDIENCE:
        raise Refused(f"Invalid JWT: aud is not {AUDIENCE}")
    # Google takes any scope; Vertex then answers 403 to a token without cloud-platform, so
    # the double refuses one here, where the test sees it.
    if CLOUD_PLATFORM not in str(claims.get("scope", "")).split():
        raise Refused("Invalid JWT: the scope lacks cloud-platform", error="invalid_scope")
    iat, exp = claims.get("iat"), claims.get("exp")
    if not isinstance(iat, int) or not isinstance(exp, int):
        raise Refused("Invalid JWT: iat and exp must be integers")
    if abs(iat - now) > CLOCK_SKEW or exp <= now or exp - iat > MAX_LIFETIME:
        raise Refused(
            "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable "
            "timeframe. Check your iat and exp values in the JWT claim."
        )


@dataclass
class GoogleTokenServer:
    """`with GoogleTokenServer(account) as server:` point a key file at `server.token_uri`.
    `refuse` (an OAuth2 error code) refuses every assertion however good; `hold()` keeps the
    next answers back until `release()`, with `received` set once a request is in."""

    account: ServiceAccount
    expires_in: int = 3599
    refuse: str | None = None
    requests: int = 0
    claims: list[dict[str, Any]] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)
    received: threading.Event = field(default_factory=threading.Event)
    _released: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._released.set()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def token_uri(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{TOKEN_PATH}"

    def hold(self) -> None:
        self.received.clear()
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def __enter__(self) -> GoogleTokenServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def answer(self, path: str, form: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        """Google's answer to one POST: a token, or a 400 with an OAuth2 error."""
        with self._lock:
            self.requests += 1
        if path != TOKEN_PATH:
            return 404, {"error": "not_found"}
        if form.get("grant_type") != [JWT_BEARER]:
            return 400, {
                "error": "unsupported_grant_type",
                "error_description": "Invalid grant_type",
            }
        try:
            claims = verify_assertion(form.get("assertion", [""])[0], self.account, time.time())
        except Refused as refused:
            return 400, {"error": refused.error, "error_description": refused.description}
        if self.refuse:
            return 400, {"error": self.refuse, "error_description": "Refused by the test."}
        with self._lock:
            self.claims.append(claims)
            token = f"ya29.test-token-{len(self.issued) + 1}"
            self.issued.append(token)
        return 200, {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                if self.headers.get_content_type() != "application/x-www-form-urlencoded":
                    form = {}
                status, answer = server.answer(self.path, form)
                server.received.set()
                server._released.wait(10)
                body = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json; charset=utf-8")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler
