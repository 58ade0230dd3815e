"""The GitHub stand-in answers conditional requests as api.github.com does, and counts them apart."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx

from github_standin import RunningStandin, StandinState, running_standin

ISSUE = "/repos/acme/widgets/issues/1"


@contextlib.asynccontextmanager
async def serving(
    state: StandinState | None = None,
) -> AsyncIterator[tuple[RunningStandin, httpx.AsyncClient]]:
    """A stand-in with one installation, repository and issue, and a client holding a token."""
    state = state or StandinState()
    state.add_installation(7, "acme")
    state.add_repository("acme/widgets", {"railyard.yml": "hello\n"})
    state.add_issue("acme/widgets", 1, title="Ship it")
    async with running_standin(state) as standin:
        headers = {"Authorization": f"token {state.issue_token(7)}"}
        async with httpx.AsyncClient(base_url=standin.url, headers=headers, timeout=5) as client:
            yield standin, client


async def test_a_get_carries_a_weak_etag_of_its_body() -> None:
    """Every successful GET answers with a weak ETag, the same while the body is the same."""
    async with serving() as (_, client):
        first, second = await client.get(ISSUE), await client.get(ISSUE)
    assert first.headers["etag"].startswith('W/"') and first.headers["etag"] == second.headers["etag"]


async def test_a_matching_if_none_match_gets_304_without_a_body_and_costs_no_call() -> None:
    """If-None-Match naming the current ETag is answered 304, empty, and the bucket keeps its call."""
    async with serving() as (standin, client):
        etag = (await client.get(ISSUE)).headers["etag"]
        answer = await client.get(ISSUE, headers={"If-None-Match": etag})
        counters = standin.state.counters()
    assert answer.status_code == 304 and answer.content == b"" and answer.headers["etag"] == etag
    assert answer.headers["x-ratelimit-remaining"] == "4999"  # only the first GET counted
    assert counters == {"calls": 2, "counted": 1, "not_modified": 1, "content_writes": 0}


async def test_a_changed_resource_answers_200_with_a_new_etag() -> None:
    """Once the resource changes, the old ETag no longer matches: 200, a new body and ETag, counted."""
    async with serving() as (standin, client):
        etag = (await client.get(ISSUE)).headers["etag"]
        standin.state.repositories["acme/widgets"].issues[1].title = "Ship it now"
        answer = await client.get(ISSUE, headers={"If-None-Match": f'"nope", {etag}'})
    assert answer.status_code == 200 and answer.json()["title"] == "Ship it now"
    assert answer.headers["etag"] != etag and standin.state.counters()["counted"] == 2


async def test_writes_are_counted_as_content_writes_and_get_no_etag() -> None:
    """A comment created is a counted call and a content write; its answer carries no ETag."""
    async with serving() as (standin, client):
        created = await client.post(f"{ISSUE}/comments", json={"body": "hi"})
    assert created.status_code == 201 and "etag" not in created.headers
    assert standin.state.counters() == {"calls": 1, "counted": 1, "not_modified": 0, "content_writes": 1}


async def test_etags_can_vary_with_the_credential_as_githubs_do() -> None:
    """With ETags per credential, another token's ETag for the same body does not match."""
    state = StandinState(etag_per_credential=True)
    async with serving(state) as (standin, client):
        etag = (await client.get(ISSUE)).headers["etag"]
        other = {"Authorization": f"token {standin.state.issue_token(7)}"}
        again = await client.get(ISSUE, headers={**other, "If-None-Match": etag})
        same = await client.get(ISSUE, headers={"If-None-Match": etag})
    assert again.status_code == 200 and same.status_code == 304


async def test_the_control_api_reports_the_counters() -> None:
    """GET /_standin/counters answers the same accounting as the state."""
    async with serving() as (_, client):
        await client.get(ISSUE)
        counters = (await client.get("/_standin/counters")).json()
    assert counters == {"calls": 1, "counted": 1, "not_modified": 0, "content_writes": 0}
