"""Installation tokens shared by every railyard process on the database, sealed.

Each process used to ask GitHub for its own token per installation: with two servers and four
workers, six tokens an hour for every installation, each a signed JWT (an RSA signature), a
call to GitHub's token endpoint and its answer parsed, and each process's first command for an
installation waiting for it. `SharedTokens` is githubkit's token cache with the database behind
this process's memory: a token one process got serves every other until a minute before it
expires (githubkit's own margin).

A token is a credential, so the database never holds it in the clear. It is sealed with
AES-GCM under a key derived (HKDF-SHA256) from the app's private key, which only railyard's
processes have; the row's key and expiry are authenticated with it, so a row cannot be moved
to another installation or given a longer life, and one sealed under another private key (the
key was rotated) is simply not used. The row's key is a sha256 of githubkit's cache key. A
database that cannot be read or written never fails a call: the token is then asked of GitHub,
as before, and storing one never holds up the call it was asked for (it is written meanwhile).
A token GitHub refuses (401: revoked before its time) is forgotten here and in the database
(`forget`), so no process uses it again. Expired rows are pruned by housekeeping. The app's
own JWT stays in each process's memory.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any

import structlog
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from githubkit.cache import MemCacheStrategy
from githubkit.cache.mem_cache import MemCache
from sqlalchemy import delete
from sqlalchemy.exc import SQLAlchemyError

from app.store.database import Database, insert_for
from app.store.hops import off_loop
from app.store.tables import InstallationTokenRow, table

log = structlog.get_logger(__name__)
tokens_table = table(InstallationTokenRow)
_READ = f"SELECT sealed, expires_at FROM {tokens_table.name} WHERE key = ?"  # noqa: S608 - no input in it
_INSTALLATION = ":installation:"  # in githubkit's cache key of an installation token, not the JWT's
_INFO = b"railyard installation tokens v1"
MIN_LIFE_SECONDS = 60.0
"""A shared token with less life left than this is not used: one is asked of GitHub instead."""


def sealing_key(private_key: Any) -> bytes:
    """The AES-256 key tokens are sealed with, derived from the app's private key."""
    secret = private_key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(secret)


def _row_key(cache_key: str) -> str:
    """The row's key: a sha256 of githubkit's cache key (which names the installation)."""
    return hashlib.sha256(cache_key.encode()).hexdigest()


def _aad(row_key: str, expires_at: float) -> bytes:
    return f"{row_key}|{expires_at!r}".encode()


class SharedTokens(MemCache):
    """githubkit's token cache: this process's memory first, then the database (installation
    tokens only); the synchronous `get` reads memory alone."""

    def __init__(self, database: Database, key: bytes, clock: Any = time.time) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # githubkit leaves it untyped
        self._database, self._aead, self._clock = database, AESGCM(key), clock
        self._writing: set[asyncio.Future[None]] = set()

    async def aget(self, key: str) -> str | None:
        """The token kept here, else one another process stored and that has life left."""
        token = self.get(key)
        if token is not None or _INSTALLATION not in key:
            return token
        row_key = _row_key(key)
        try:
            row = await self._database.point_read_here(_READ, (row_key,))
        except SQLAlchemyError as error:
            log.warning("could not read the shared installation tokens", error=type(error).__name__)
            return None
        if row is None:
            return None
        sealed, expires_at = bytes(row[0]), float(row[1])
        life = expires_at - self._clock()
        if life < MIN_LIFE_SECONDS:
            return None
        try:
            token = self._aead.decrypt(sealed[:12], sealed[12:], _aad(row_key, expires_at)).decode()
        except (InvalidTag, ValueError, UnicodeDecodeError):
            # Sealed under another private key (rotated), or not railyard's: ask GitHub, whose
            # token then replaces the row.
            log.info("a shared installation token could not be unsealed; asking GitHub for one")
            return None
        self.set(key, token, timedelta(seconds=life))
        return token

    async def aset(self, key: str, value: str, ex: timedelta) -> None:
        """Keep the token here and, for an installation's, sealed in the database (written
        meanwhile: the call that asked for the token does not wait for the database)."""
        self.set(key, value, ex)
        if _INSTALLATION not in key:
            return
        # Whole seconds: the expiry is authenticated as text, which must read back the same.
        row_key, expires_at = _row_key(key), float(int(self._clock() + ex.total_seconds()))
        nonce = os.urandom(12)
        sealed = nonce + self._aead.encrypt(nonce, value.encode(), _aad(row_key, expires_at))
        task = asyncio.ensure_future(_quietly(off_loop(self._write, row_key, sealed, expires_at)))
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    async def forget(self, key: str) -> None:
        """GitHub refused the token (revoked): no process here or elsewhere uses it again."""
        self._cache.pop(key, None)
        if _INSTALLATION in key:
            await _quietly(off_loop(self._delete, _row_key(key)))

    async def settled(self) -> None:
        """Wait for the writes started so far (tests, and a process that stops)."""
        if self._writing:
            await asyncio.gather(*self._writing, return_exceptions=True)

    def _write(self, row_key: str, sealed: bytes, expires_at: float) -> None:
        with self._database.write() as connection:
            insert = insert_for(connection)
            row = {"key": row_key, "sealed": sealed, "expires_at": expires_at}
            connection.execute(
                insert(tokens_table)
                .values(**row)
                .on_conflict_do_update(
                    index_elements=["key"], set_={"sealed": sealed, "expires_at": expires_at}
                )
            )

    def _delete(self, row_key: str) -> None:
        with self._database.write() as connection:
            connection.execute(delete(tokens_table).where(tokens_table.c.key == row_key))


async def _quietly(write: Awaitable[None]) -> None:
    """A write of the shared tokens: one that fails costs a token request later, nothing more."""
    try:
        await write
    except SQLAlchemyError as error:
        log.warning("could not share an installation token", error=type(error).__name__)


def prune_installation_tokens(database: Database, now: float) -> int:
    """Delete the tokens past their time (housekeeping); how many went."""
    with database.write() as connection:
        return int(connection.execute(delete(tokens_table).where(tokens_table.c.expires_at < now)).rowcount)


class SharedTokenStrategy(MemCacheStrategy):
    """githubkit's cache strategy with `SharedTokens` as its token cache (its HTTP caches are
    unused: the client keeps GETs' answers itself)."""

    def __init__(self, tokens: SharedTokens) -> None:
        super().__init__()
        self._tokens = tokens

    def get_cache_storage(self) -> SharedTokens:
        return self._tokens

    async def get_async_cache_storage(self) -> SharedTokens:
        return self._tokens
