"""Conditional requests: the client's GETs send the ETag kept, and a 304 is answered from the cache."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

import httpx
import pytest
import respx
from sqlalchemy import text

from app.github.client import GitHubClient
from app.github.conditional_get import (
    HttpCache,
    MemoryHttpCache,
    TieredHttpCache,
    conditional_get,
    installation_scope,
    token_scope,
)
from app.runtime.maintenance import Maintenance
from app.runtime.metrics import Metrics
from app.store.database import Database
from app.store.http_cache import SharedHttpCache, prune_http_cache
from tests.fakes import GITHUB_API, StillClock, app_settings, token_response

TOKEN_ROUTE = f"{GITHUB_API}/app/installations/7/access_tokens"
ISSUE = f"{GITHUB_API}/repos/acme/web/issues/12"
ETAG = 'W/"aaaa"'


async def started(cache: HttpCache) -> GitHubClient:
    """A started client over `cache`, pointed at the fake API."""
    client = GitHubClient(
        app_settings("sqlite://", GITHUB_API_URL=GITHUB_API), Metrics(), clock=StillClock(), http_cache=cache
    )
    await client.start()
    return client


@pytest.fixture
async def client(database: Database) -> AsyncIterator[GitHubClient]:
    """A client whose cache is the database's (SQLite, and PostgreSQL where available)."""
    github = await started(SharedHttpCache(database))
    yield github
    await github.close()


async def read_issue(github: GitHubClient) -> object:
    return await github.call("get_issue", 7, repository="acme/web", number=12)


@respx.mock
async def test_the_second_read_sends_the_etag_and_a_304_is_answered_from_the_cache(
    client: GitHubClient,
) -> None:
    """The first GET keeps ETag and body; the next sends If-None-Match and a 304 returns that body."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    route = respx.get(ISSUE).mock(
        side_effect=[
            httpx.Response(200, json={"number": 12, "title": "One"}, headers={"ETag": ETAG}),
            httpx.Response(304, headers={"ETag": ETAG}),
        ]
    )
    assert await read_issue(client) == {"number": 12, "title": "One"}
    assert await read_issue(client) == {"number": 12, "title": "One"}
    assert "If-None-Match" not in route.calls[0].request.headers
    assert route.calls[1].request.headers["If-None-Match"] == ETAG


@respx.mock
async def test_a_new_200_replaces_what_was_kept(client: GitHubClient) -> None:
    """When the resource changed GitHub answers 200 with a new ETag: that body is returned and kept."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    route = respx.get(ISSUE).mock(
        side_effect=[
            httpx.Response(200, json={"title": "One"}, headers={"ETag": ETAG}),
            httpx.Response(200, json={"title": "Two"}, headers={"ETag": 'W/"bbbb"'}),
            httpx.Response(304, headers={"ETag": 'W/"bbbb"'}),
        ]
    )
    assert [await read_issue(client) for _ in range(3)] == [
        {"title": "One"},
        {"title": "Two"},
        {"title": "Two"},
    ]
    assert route.calls[2].request.headers["If-None-Match"] == 'W/"bbbb"'


@respx.mock
async def test_answers_without_an_etag_or_with_an_error_are_not_kept(client: GitHubClient) -> None:
    """No ETag, nothing to send back: the next read is unconditional."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    route = respx.get(ISSUE).mock(return_value=httpx.Response(200, json={"title": "One"}))
    await read_issue(client)
    await read_issue(client)
    assert "If-None-Match" not in route.calls[1].request.headers


@respx.mock
async def test_writes_are_never_conditional(client: GitHubClient) -> None:
    """A POST carries no If-None-Match even after a GET of the same path was kept."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    comments = f"{ISSUE}/comments"
    respx.get(comments).mock(return_value=httpx.Response(200, json=[], headers={"ETag": ETAG}))
    posted = respx.post(comments).mock(return_value=httpx.Response(201, json={"id": 1}))
    await client.call("list_comments", 7, repository="acme/web", number=12)
    await client.call("create_comment", 7, repository="acme/web", number=12, json={"body": "hi"})
    assert "If-None-Match" not in posted.calls.last.request.headers


@respx.mock
async def test_two_processes_on_one_database_share_what_was_kept(database: Database) -> None:
    """A second client (another process) on the same database sends the ETag the first one got."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    route = respx.get(ISSUE).mock(
        side_effect=[
            httpx.Response(200, json={"title": "One"}, headers={"ETag": ETAG}),
            httpx.Response(304, headers={"ETag": ETAG}),
        ]
    )
    first, second = await started(SharedHttpCache(database)), await started(SharedHttpCache(database))
    try:
        await read_issue(first)
        assert await read_issue(second) == {"title": "One"}
    finally:
        await first.close()
        await second.close()
    assert route.calls[1].request.headers["If-None-Match"] == ETAG


class CountingCache(SharedHttpCache):
    """The shared cache, counting the reads that reach the database."""

    reads = 0

    async def get(self, scope: str, url: str) -> object:  # type: ignore[override]
        self.reads += 1
        return await super().get(scope, url)


@respx.mock
async def test_the_process_tier_answers_a_repeated_read_without_the_database(database: Database) -> None:
    """Through the tiers (as `railyard serve` runs), the second read's ETag comes from memory."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    route = respx.get(ISSUE).mock(
        side_effect=[
            httpx.Response(200, json={"title": "One"}, headers={"ETag": ETAG}),
            httpx.Response(304, headers={"ETag": ETAG}),
            httpx.Response(304, headers={"ETag": ETAG}),
        ]
    )
    shared = CountingCache(database)
    github = await started(TieredHttpCache(MemoryHttpCache(), shared))
    try:
        for _ in range(3):
            assert await read_issue(github) == {"title": "One"}
    finally:
        await github.close()
    assert shared.reads == 1  # only the first, which found nothing
    assert [call.request.headers.get("If-None-Match") for call in route.calls] == [None, ETAG, ETAG]


@respx.mock
async def test_a_process_tier_older_than_the_shared_one_costs_one_full_answer_never_a_stale_read(
    database: Database,
) -> None:
    """Process A kept "One"; process B then read "Two". A sends its old ETag, GitHub answers 200
    with "Two", and A keeps that; a third process finds "Two" in the database."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    new = 'W/"bbbb"'
    route = respx.get(ISSUE).mock(
        side_effect=[
            httpx.Response(200, json={"title": "One"}, headers={"ETag": ETAG}),  # A
            httpx.Response(200, json={"title": "Two"}, headers={"ETag": new}),  # B, sending A's ETag
            httpx.Response(200, json={"title": "Two"}, headers={"ETag": new}),  # A, with its old ETag
            httpx.Response(304, headers={"ETag": new}),  # A again
            httpx.Response(304, headers={"ETag": new}),  # C, from the database
        ]
    )
    a, b, c = [await started(TieredHttpCache(MemoryHttpCache(), SharedHttpCache(database))) for _ in range(3)]
    try:
        await read_issue(a)
        assert await read_issue(b) == {"title": "Two"}
        assert await read_issue(a) == {"title": "Two"}
        assert await read_issue(a) == {"title": "Two"}
        assert await read_issue(c) == {"title": "Two"}
    finally:
        for github in (a, b, c):
            await github.close()
    sent = [call.request.headers.get("If-None-Match") for call in route.calls]
    assert sent == [None, ETAG, ETAG, new, new]


@respx.mock
async def test_entries_are_kept_per_installation() -> None:
    """Installation 8's read of the same URL never sends installation 7's ETag."""
    cache = MemoryHttpCache()
    await cache.put(installation_scope(7), ISSUE, ETAG, b'{"title": "secret"}')
    respx.post(f"{GITHUB_API}/app/installations/8/access_tokens").mock(
        return_value=httpx.Response(201, json=token_response())
    )
    route = respx.get(ISSUE).mock(return_value=httpx.Response(200, json={"title": "Other"}))
    github = await started(cache)
    try:
        assert await github.call("get_issue", 8, repository="acme/web", number=12) == {"title": "Other"}
    finally:
        await github.close()
    assert "If-None-Match" not in route.calls.last.request.headers


def test_a_user_tokens_scope_is_a_hash_never_the_token() -> None:
    """The scope of a user token is a sha256 of it: the same for the same token, without the token."""
    scope = token_scope("ghu_secret")
    assert scope == token_scope("ghu_secret") != token_scope("ghu_other")
    assert "ghu_secret" not in scope and scope.startswith("user:")


async def test_the_memory_cache_evicts_the_oldest_beyond_its_bounds() -> None:
    """Beyond max_rows (or max_bytes) the oldest written entries go first."""
    cache = MemoryHttpCache(max_rows=2, max_bytes=10)
    for n in range(3):
        await cache.put("s", f"u{n}", f"e{n}", b"12")
    assert [await cache.get("s", f"u{n}") is None for n in range(3)] == [True, False, False]
    await cache.put("s", "big", "e", b"123456789")
    assert len(cache) == 1


async def test_maintenance_evicts_the_oldest_rows_beyond_the_bounds(database: Database) -> None:
    """prune_http_cache keeps the newest entries within rows and bytes, and evicts the rest."""
    moments = iter(range(100))
    cache = SharedHttpCache(database, clock=lambda: float(next(moments)))
    for n in range(5):
        await cache.put("installation:7", f"{ISSUE}/{n}", f"e{n}", b"x" * 10)
    assert prune_http_cache(database, max_rows=3, max_bytes=1_000) == 2
    assert prune_http_cache(database, max_rows=3, max_bytes=25) == 1
    kept = [n for n in range(5) if await cache.get("installation:7", f"{ISSUE}/{n}") is not None]
    assert kept == [3, 4]
    with database.read() as connection:
        assert connection.execute(text("SELECT count(*) FROM http_cache")).scalar_one() == 2


async def test_housekeeping_holds_the_cache_to_its_bounds(database: Database) -> None:
    """A round of the maintenance loop evicts the oldest entries beyond the configured rows."""
    moments = iter(range(100))
    cache = SharedHttpCache(database, clock=lambda: float(next(moments)))
    for n in range(4):
        await cache.put("installation:7", f"{ISSUE}/{n}", f"e{n}", b"x")
    stop = asyncio.Event()
    task = asyncio.create_task(Maintenance(database, None, http_cache=(1, 1_000)).run(stop))
    for _ in range(400):
        await asyncio.sleep(0.01)
        if await cache.get("installation:7", f"{ISSUE}/0") is None:
            break
    stop.set()
    await task
    kept = [n for n in range(4) if await cache.get("installation:7", f"{ISSUE}/{n}") is not None]
    assert kept == [3]


@respx.mock
async def test_conditional_get_serves_a_user_tokens_get_user_from_the_cache() -> None:
    """conditional_get with a token's scope: the second GET /user is a 304 answered with the body kept."""
    user = f"{GITHUB_API}/user"
    route = respx.get(user).mock(
        side_effect=[
            httpx.Response(200, json={"id": 42, "login": "ann"}, headers={"ETag": ETAG}),
            httpx.Response(304, headers={"ETag": ETAG}),
        ]
    )
    cache, scope = MemoryHttpCache(), token_scope("ghu_ann")
    async with httpx.AsyncClient() as http:

        async def send(headers: Mapping[str, str] | None) -> httpx.Response:
            return await http.get(user, headers={"Authorization": "token ghu_ann", **(headers or {})})

        first, kept_first = await conditional_get(cache, scope, user, send)
        second, kept_second = await conditional_get(cache, scope, user, send)
    assert first.status_code == 200 and kept_first is None
    assert second.status_code == 304 and kept_second is not None and kept_second.body == first.content
    assert route.calls[1].request.headers["If-None-Match"] == ETAG
