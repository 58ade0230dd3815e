"""Installation tokens shared by every process on the database, sealed (`app.store.token_cache`):
one token request serves every process; the database never holds a usable token in the clear;
a row moved, stretched or sealed under another key is not used."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
import respx
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import select, update

from app.store.database import Database
from app.store.token_cache import (
    SharedTokens,
    SharedTokenStrategy,
    _row_key,
    prune_installation_tokens,
    sealing_key,
    tokens_table,
)
from tests.fakes import GITHUB_API, started_client, token_response

KEY = "githubkit:auth:app:1:installation:7:::"
OTHER = "githubkit:auth:app:1:installation:8:::"
TOKEN_ROUTE = f"{GITHUB_API}/app/installations/7/access_tokens"
COMMENTS = f"{GITHUB_API}/repos/acme/web/issues/12/comments"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def stored(tokens: SharedTokens, cache_key: str, token: str, life: timedelta) -> SharedTokens:
    """`tokens` after `aset`, its write to the database done."""
    await tokens.aset(cache_key, token, life)
    await tokens.settled()
    return tokens


def _key() -> bytes:
    return sealing_key(rsa.generate_private_key(public_exponent=65537, key_size=2048))


@pytest.mark.asyncio
async def test_a_token_one_process_stored_serves_another_and_is_sealed(database: Database) -> None:
    key, clock = _key(), Clock()
    first, second = SharedTokens(database, key, clock), SharedTokens(database, key, clock)
    await first.aset(KEY, "ghs_secret_token", timedelta(minutes=59))
    await first.settled()
    assert await second.aget(KEY) == "ghs_secret_token"
    assert second.get(KEY) == "ghs_secret_token"  # kept in its memory from then on
    assert await second.aget(OTHER) is None
    with database.read() as connection:
        (sealed,) = connection.execute(select(tokens_table.c.sealed)).one()
    assert b"ghs_secret_token" not in bytes(sealed)


@pytest.mark.asyncio
async def test_a_row_sealed_under_another_key_moved_or_stretched_is_not_used(database: Database) -> None:
    clock = Clock()
    writer = SharedTokens(database, _key(), clock)
    await writer.aset(KEY, "ghs_a", timedelta(minutes=59))
    await writer.settled()
    assert await SharedTokens(database, _key(), clock).aget(KEY) is None  # another app key

    key = _key()
    await stored(SharedTokens(database, key, clock), KEY, "ghs_b", timedelta(minutes=30))
    with database.write() as connection:  # a longer life than GitHub gave: refused
        connection.execute(update(tokens_table).values(expires_at=tokens_table.c.expires_at + 3600))
    assert await SharedTokens(database, key, clock).aget(KEY) is None

    await stored(SharedTokens(database, key, clock), KEY, "ghs_c", timedelta(minutes=30))
    with database.read() as connection:
        row = connection.execute(select(tokens_table)).mappings().one()
    with database.write() as connection:  # the row copied under another installation's key
        connection.execute(tokens_table.delete())
        connection.execute(
            tokens_table.insert().values(
                key=_row_key(OTHER), sealed=row["sealed"], expires_at=row["expires_at"]
            )
        )
    assert await SharedTokens(database, key, clock).aget(OTHER) is None


@pytest.mark.asyncio
async def test_a_token_near_its_end_the_jwt_and_a_failing_database_are_not_shared(
    database: Database,
) -> None:
    key, clock = _key(), Clock()
    await stored(SharedTokens(database, key, clock), KEY, "ghs_short", timedelta(seconds=30))
    assert await SharedTokens(database, key, clock).aget(KEY) is None  # under a minute left
    jwt_key = "githubkit:auth:app:1:jwt"
    await stored(SharedTokens(database, key, clock), jwt_key, "eyJ...", timedelta(minutes=8))
    assert await SharedTokens(database, key, clock).aget(jwt_key) is None  # the JWT stays in memory
    broken = Database("sqlite:////nonexistent-directory/railyard.db")
    tokens = SharedTokens(broken, key, clock)
    await tokens.aset(KEY, "ghs_kept_here", timedelta(minutes=59))  # logged, not raised
    await tokens.settled()
    assert await tokens.aget(KEY) == "ghs_kept_here"
    assert await SharedTokens(broken, key, clock).aget(KEY) is None


@pytest.mark.asyncio
@respx.mock
async def test_two_clients_on_one_database_ask_github_for_one_token(database: Database) -> None:
    """Two processes' clients: the second uses the token the first got, and GitHub sees it."""
    tokens = respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response("ghs_one")))
    comments = respx.get(COMMENTS).mock(return_value=httpx.Response(200, json=[]))

    caches: list[SharedTokens] = []

    def shared(key: object) -> SharedTokenStrategy:
        caches.append(SharedTokens(database, sealing_key(key)))
        return SharedTokenStrategy(caches[-1])

    async with started_client(token_cache=shared) as first, started_client(token_cache=shared) as second:
        await first.call("list_comments", 7, repository="acme/web", number=12)
        await caches[0].settled()  # stored while the call went on
        await second.call("list_comments", 7, repository="acme/web", number=12)
    assert tokens.call_count == 1
    assert comments.calls.last.request.headers["Authorization"] == "token ghs_one"


@pytest.mark.asyncio
async def test_a_forgotten_token_is_gone_for_every_process_and_expired_ones_are_pruned(
    database: Database,
) -> None:
    key, clock = _key(), Clock()
    first = SharedTokens(database, key, clock)
    await first.aset(KEY, "ghs_revoked", timedelta(minutes=59))
    await first.aset(OTHER, "ghs_old", timedelta(minutes=2))
    await first.settled()
    await SharedTokens(database, key, clock).forget(KEY)  # GitHub refused it in another process
    assert await SharedTokens(database, key, clock).aget(KEY) is None
    clock.now += 600  # the other one's time is up
    assert prune_installation_tokens(database, clock.now) == 1
    with database.read() as connection:
        assert connection.execute(select(tokens_table.c.key)).all() == []
