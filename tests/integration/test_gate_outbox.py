"""The deployment gate's GitHub side: its answer through the outbox against GitHub answered by
respx (exactly one answer, even when the first one's outcome was lost), its comparison read
page by page, and the store's merged-PR lookup the range uses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import respx

from app.contracts.effect_types import deployment_review
from app.github.client import GitHubClient
from app.github.reads import GitHubReadsAdapter
from app.runtime.metrics import Metrics
from app.runtime.outbox import Outbox
from app.store.database import Database
from app.store.effects import effect_counts
from app.store.pulls import pulls_merged_as, remember
from handlers.errors import Missing
from handlers.ports import PullRequest
from tests.fakes import GITHUB_API, StillClock, app_settings, private_key_pem, token_route
from tests.integration.test_outbox import drive, put

REPO = "acme/web"
RULE = f"{GITHUB_API}/repos/{REPO}/actions/runs/77/deployment_protection_rule"


@dataclass
class FakeRun:
    """One run waiting on railyard's protection rule: it takes one answer, then answers 422."""

    faults: list[str] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)
    posts: int = 0

    def post(self, request: httpx.Request) -> httpx.Response:
        self.posts += 1
        if self.answers:
            return httpx.Response(422, json={"message": "No pending deployment protection rule"})
        self.answers.append(json.loads(request.content))
        if self.faults and self.faults.pop(0) == "timeout after answer":
            raise httpx.ReadTimeout("GitHub took the answer but its reply never came")
        return httpx.Response(204)


@pytest.fixture
async def parts(database: Database) -> Any:
    """A started client, a run behind respx, and an outbox with a test clock."""
    clock = StillClock()
    settings = app_settings("sqlite://", GITHUB_API_URL=GITHUB_API, PRIVATE_KEY=private_key_pem())
    github = GitHubClient(settings, Metrics(), clock=clock)
    await github.start()
    run = FakeRun()
    with respx.mock:
        token_route()
        respx.post(RULE).mock(side_effect=run.post)
        yield Outbox(database, github, Metrics(), app_id=1, clock=clock), run, clock, github
    await github.close()


def review(state: str = "rejected") -> Any:
    return deployment_review(
        7, REPO, 77, "production", state, f"railyard {state}: #14 is not accepted.", "k1"
    )


async def test_the_answer_is_sent_once_to_the_runs_callback(database: Database, parts: Any) -> None:
    """One POST with the environment, the state and the comment; enqueued again, nothing more."""
    outbox, run, clock, _ = parts
    put(database, clock, review())
    put(database, clock, review())
    await drive(outbox, clock, lambda: effect_counts(database).get("done") == 1)
    assert run.answers == [
        {
            "environment_name": "production",
            "state": "rejected",
            "comment": "railyard rejected: #14 is not accepted.",
        }
    ]
    put(database, clock, review())
    assert await outbox.run_once() == 0 and run.posts == 1


async def test_an_answer_whose_outcome_was_lost_is_not_sent_twice(database: Database, parts: Any) -> None:
    """GitHub takes the answer but its reply is lost (as when the process dies before recording
    it): the retry hears 422 and the answer counts as done; GitHub holds one answer."""
    outbox, run, clock, _ = parts
    run.faults.append("timeout after answer")
    put(database, clock, review())
    await drive(outbox, clock, lambda: effect_counts(database).get("done") == 1)
    assert len(run.answers) == 1 and run.posts == 2
    assert effect_counts(database).get("failed") is None


async def test_an_unknown_run_fails_the_answer_visibly(database: Database, parts: Any) -> None:
    """404 (the run is gone): the effect is failed, not retried for ever."""
    outbox, _, clock, _ = parts
    respx.post(RULE).mock(return_value=httpx.Response(404, json={"message": "Not Found"}))
    put(database, clock, review())
    await drive(outbox, clock, lambda: effect_counts(database).get("failed") == 1)


async def test_a_comparison_is_read_on_every_page(parts: Any) -> None:
    """The compare API's Link header is followed; an unknown commit is `Missing`."""
    _, _, _, github = parts
    compare = f"{GITHUB_API}/repos/{REPO}/compare/{'b' * 40}...{'e' * 40}"

    def answer(request: httpx.Request) -> httpx.Response:
        page = int(request.url.params.get("page", "1"))
        commits = [{"sha": f"{page}" * 40}]
        link = {"Link": f'<{compare}?per_page=100&page=2>; rel="next"'} if page == 1 else {}
        return httpx.Response(200, json={"status": "ahead", "commits": commits}, headers=link)

    respx.get(compare).mock(side_effect=answer)
    reads = GitHubReadsAdapter(github)
    assert await reads.compare_commits(7, REPO, "b" * 40, "e" * 40) == ["1" * 40, "2" * 40]
    respx.get(f"{GITHUB_API}/repos/{REPO}/compare/{'b' * 40}...{'9' * 40}").mock(
        return_value=httpx.Response(404, json={"message": "Not Found"})
    )
    with pytest.raises(Missing):
        await reads.compare_commits(7, REPO, "b" * 40, "9" * 40)


def test_merged_pull_requests_are_found_by_their_merge_commits(database: Database) -> None:
    """Only merged PRs of the repository whose merge commit is asked for, with their links."""
    at = datetime(2026, 11, 30, 11, tzinfo=UTC)

    def pull(number: int, merge: str | None, merged: bool = True, repository: str = REPO) -> PullRequest:
        url = f"https://github.com/{repository}/pull/{number}"
        return PullRequest(repository, number, url, False, merged, "b", "a" * 40, merge, at)

    with database.write() as connection:
        remember(connection, pull(40, "1" * 40), {12})
        remember(connection, pull(41, "2" * 40), set())
        remember(connection, pull(42, "3" * 40, merged=False), set())
        remember(connection, pull(43, "2" * 40, repository="acme/other"), set())
    with database.read() as connection:
        found = pulls_merged_as(connection, REPO.upper(), {"1" * 40, "2" * 40, "3" * 40})
    assert sorted((p.number, linked) for p, linked in found) == [(40, {12}), (41, set())]
    with database.read() as connection:
        every = pulls_merged_as(connection, REPO.upper(), None)
    assert sorted((p.number, linked) for p, linked in every) == [(40, {12}), (41, set())], (
        "without a range: every merged PR of the repository, none of another's, no open one"
    )


async def test_a_comparison_that_lists_fewer_commits_than_it_counts_is_not_taken_as_the_range(
    parts: Any,
) -> None:
    """GitHub counts 12,000 commits but the pages list fewer (its own cut, or railyard's page
    limit): the newest merges would be missing from the range, so it is `Missing` (the gate then
    judges every merged ticket the sha contains) rather than a short range that approves."""
    _, _, _, github = parts
    compare = f"{GITHUB_API}/repos/{REPO}/compare/{'b' * 40}...{'e' * 40}"
    respx.get(compare).mock(
        return_value=httpx.Response(
            200, json={"status": "ahead", "total_commits": 12000, "commits": [{"sha": "1" * 40}]}
        )
    )
    with pytest.raises(Missing):
        await GitHubReadsAdapter(github).compare_commits(7, REPO, "b" * 40, "e" * 40)
