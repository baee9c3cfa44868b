"""Who may use the console: a key in `server.admin_keys`, as a bearer token or through /ui's
sign-in (a cookie holding a session token signed with a key derived from the admin keys, so
every replica with the same config accepts it, and the cookie never holds the key). With no
admin key configured, only the loopback address is served."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time

from starlette.requests import HTTPConnection

from app.console.errors import AdminKeyMissing, NotAdmin

COOKIE = "toolrelay_session"
SESSION_SECONDS = 12 * 3600
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


class Admins:
    def __init__(self, admin_keys: list[str]) -> None:
        self._digests = [hashlib.sha256(key.encode()).digest() for key in admin_keys]
        self.open = not self._digests
        """No admin key: loopback only, no sign-in."""
        material = b"toolrelay console session\0" + b"".join(sorted(self._digests))
        self._signing = hashlib.sha256(material).digest()

    def is_admin(self, presented: bytes) -> bool:
        """Every digest compared, so timing does not tell which one matched."""
        digest = hashlib.sha256(presented).digest()
        found = False
        for candidate in self._digests:
            found |= hmac.compare_digest(digest, candidate)
        return found

    def new_session(self, now: float | None = None) -> str:
        expires = int((time.time() if now is None else now) + SESSION_SECONDS)
        payload = f"{expires}.{secrets.token_urlsafe(16)}"
        return f"{payload}.{self._sign(payload)}"

    def valid_session(self, token: str, now: float | None = None) -> bool:
        payload, _, signature = token.rpartition(".")
        if not payload or not hmac.compare_digest(self._sign(payload), signature):
            return False
        expires, _, _ = payload.partition(".")
        return expires.isdigit() and int(expires) > (time.time() if now is None else now)

    def _sign(self, payload: str) -> str:
        mac = hmac.new(self._signing, payload.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")

    def check(self, conn: HTTPConnection, *, cookie: bool = False) -> None:
        """Raises AdminKeyMissing (401) or NotAdmin (403) unless `conn` may use the console;
        `cookie`: /ui's session cookie counts too."""
        if self.open:
            host = conn.client.host if conn.client else ""
            if host in LOOPBACK:
                return
            raise NotAdmin(
                "No admin key is configured (server.admin_keys): the console serves only "
                "the loopback address."
            )
        scheme, _, presented = conn.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and presented.strip():
            if self.is_admin(presented.strip().encode()):
                return
            raise NotAdmin("This key is not an admin key (server.admin_keys).")
        if cookie and self.valid_session(conn.cookies.get(COOKIE, "")):
            return
        raise AdminKeyMissing(
            "Missing admin key: send 'Authorization: Bearer ADMIN_KEY' (server.admin_keys)."
        )
