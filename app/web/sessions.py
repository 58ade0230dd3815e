"""Sealed cookies: the sign-in state and the session, encrypted and authenticated (AES-256-GCM).

The key is derived with HKDF-SHA256 from `SESSION_SECRET`, else from `GITHUB_CLIENT_SECRET`
(never the raw secret), so rotating either ends every session. Each cookie's name is bound in as
associated data, so a state cookie can never be replayed as a session. Every sealed value
carries its own expiry, checked on reading, besides the cookie's Max-Age.

What lives where: the user's GitHub token stays in the person's browser, encrypted under a key
only the server holds (no table holds a token); the session itself, a random id sealed in the
cookie, lives in the database (`app.store.web_sessions`), so every process of a scaled-out
deployment reads the same sessions and signing out on one ends the session on all of them at
once (a copied cookie is refused at its next request, on any process). The token inside is still
checked against GitHub at least every five minutes (`app.web.access`).
"""

from __future__ import annotations

import base64
import binascii
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from app.settings import Settings

SESSION_COOKIE = "railyard_session"
STATE_COOKIE = "railyard_signin"
SESSION_SECONDS = 8 * 3600  # a GitHub App's user token lasts eight hours
STATE_SECONDS = 600  # the sign-in round trip through GitHub
_NONCE = 12


def session_key(settings: Settings) -> bytes:
    """The 32-byte cookie key: HKDF-SHA256 of SESSION_SECRET, else of GITHUB_CLIENT_SECRET."""
    secret = settings.session_secret or settings.github_client_secret
    if secret is None:
        raise ValueError("sign-in needs GITHUB_CLIENT_SECRET (or SESSION_SECRET)")
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"railyard", info=b"railyard cookie key v1")
    return hkdf.derive(secret.get_secret_value().encode())


@dataclass
class Sealer:
    """Seals and opens cookie values under one key; `clock` gives the time for expiries."""

    key: bytes
    clock: Callable[[], float] = time.time

    def seal(self, name: str, value: dict[str, Any], lifetime: float) -> str:
        """`value` with its expiry, encrypted and authenticated for the cookie `name`."""
        nonce = os.urandom(_NONCE)
        plain = orjson.dumps(value | {"exp": self.clock() + lifetime})
        sealed = AESGCM(self.key).encrypt(nonce, plain, name.encode())
        return base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")

    def open(self, name: str, cookie: str | None) -> dict[str, Any] | None:
        """The value sealed for `name`, or None if missing, forged, tampered with or expired."""
        if not cookie or len(cookie) > 4096:
            return None
        try:
            raw = base64.urlsafe_b64decode(cookie + "=" * (-len(cookie) % 4))
            plain = AESGCM(self.key).decrypt(raw[:_NONCE], raw[_NONCE:], name.encode())
            value = orjson.loads(plain)
        except (binascii.Error, ValueError, InvalidTag):
            return None
        if not isinstance(value, dict) or not isinstance(value.get("exp"), float | int):
            return None
        return value if value["exp"] > self.clock() else None


def set_cookie(response: web.StreamResponse, name: str, value: str, max_age: int, secure: bool) -> None:
    """An HttpOnly, SameSite=Lax cookie for the whole site; Secure under https."""
    response.set_cookie(name, value, max_age=max_age, path="/", httponly=True, samesite="Lax", secure=secure)


def clear_cookie(response: web.StreamResponse, name: str, secure: bool) -> None:
    """Expire the cookie `name` at once, with the same flags it was set with."""
    response.set_cookie(name, "", max_age=0, path="/", httponly=True, samesite="Lax", secure=secure)


def is_https(settings: Settings) -> bool:
    """Whether the server is reached over https (then every cookie is Secure)."""
    return (settings.public_url or "").lower().startswith("https://")
