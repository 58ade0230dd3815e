"""The outbox against GitHub answered by respx, with faults injected: exactly one comment
per intended comment, rate-limit waits honoured, content writes spaced, failures visible."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from sqlalchemy import select

from app.contracts.effect_types import EffectKind
from app.github.client import GitHubClient
from app.runtime.metrics import Metrics
from app.runtime.outbox import Outbox
from app.store.database import Database
from app.store.effects import (
    Effect,
    EffectLeases,
    comment,
    effect_counts,
    effects_table,
    enqueue,
    marker,
    reaction,
    retry_effects,
)
from app.store.limits import SharedLimits
from tests.conftest import sqlite_database
from tests.fakes import GITHUB_API, StillClock, app_settings, private_key_pem, token_route

APP_ID = 12345
REPO = "acme/web"
COMMENTS = f"{GITHUB_API}/repos/{REPO}/issues/12/comments"


@dataclass
class FakeIssue:
    """GitHub's comments on one issue, with a queue of faults for the next POSTs."""

    clock: StillClock
    comments: list[dict[str, Any]] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    post_times: list[float] = field(default_factory=list)
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(9001))

    def post(self, request: httpx.Request) -> httpx.Response:
        self.post_times.append(self.clock.now)
        fault = self.faults.pop(0) if self.faults else "ok"
        if fault == "500":
            return httpx.Response(500, json={"message": "Server Error"})
        if fault == "secondary":
            return httpx.Response(
                403,
                headers={"Retry-After": "60"},
                json={"message": "You have exceeded a secondary rate limit. Please wait a few minutes."},
            )
        if fault == "429":
            return httpx.Response(429, headers={"Retry-After": "20"}, json={"message": "Too many requests"})
        created = {
            "id": next(self.ids),
            "body": json.loads(request.content)["body"],
            "user": {"login": "railyard[bot]", "type": "Bot"},
            "performed_via_github_app": {"id": APP_ID, "slug": "railyard"},
        }
        self.comments.append(created)  # the comment exists from here on, whatever we answer
        if fault == "502 after create":
            return httpx.Response(502, json={"message": "Bad Gateway"})
        if fault == "timeout after create":
            raise httpx.ReadTimeout("GitHub took too long to answer")
        if fault == "html after create":  # a proxy's page in place of GitHub's JSON
            return httpx.Response(200, text="<html>Unicorn!</html>", headers={"Content-Type": "text/html"})
        return httpx.Response(201, json=created)

    def list(self, request: httpx.Request) -> httpx.Response:
        page = int(request.url.params.get("page", "1"))
        return httpx.Response(200, json=self.comments if page == 1 else [])


@pytest.fixture
async def outbox_parts(database: Database) -> Any:
    """A started GitHub client, a fake issue behind respx, and an outbox with a test clock."""
    clock = StillClock()
    settings = app_settings("sqlite://", GITHUB_API_URL=GITHUB_API, PRIVATE_KEY=private_key_pem())
    github = GitHubClient(settings, Metrics(), clock=clock)
    await github.start()
    issue = FakeIssue(clock)
    with respx.mock:
        token_route()
        respx.post(COMMENTS).mock(side_effect=issue.post)
        respx.get(COMMENTS).mock(side_effect=issue.list)
        outbox = Outbox(database, github, Metrics(), app_id=APP_ID, clock=clock)
        yield outbox, issue, clock
    await github.close()


def put(database: Database, clock: StillClock, *effects: Effect) -> None:
    """Enqueue effects as a handler would, inside a transaction."""
    with database.write() as connection:
        enqueue(connection, effects, clock.now)


async def drive(outbox: Outbox, clock: StillClock, until: Callable[[], bool], steps: int = 50) -> None:
    """Run the outbox, jumping the clock to the next due effect each time nothing is due."""
    for _ in range(steps):
        if until():
            return
        if not await outbox.run_once():
            with outbox.database.read() as connection:
                due = connection.execute(
                    select(effects_table.c.next_attempt_at).where(effects_table.c.status == "pending")
                ).scalars()
                clock.now = max(clock.now, min(due, default=clock.now)) + 0.001
    raise AssertionError("the outbox did not finish")


@pytest.mark.parametrize(
    "faults",
    [
        ["500"],
        ["502 after create"],
        ["timeout after create"],
        ["secondary"],
        ["429"],
        ["html after create"],
        ["500", "502 after create", "timeout after create", "secondary", "429"],
    ],
)
async def test_each_intended_comment_appears_exactly_once_despite_faults(
    database: Database, outbox_parts: Any, faults: list[str]
) -> None:
    """500; 502, non-JSON 200 or a timeout after creating; 403 secondary limit; 429: one comment."""
    outbox, issue, clock = outbox_parts
    issue.faults = list(faults)
    put(database, clock, comment(7, REPO, 12, "Refused: /accept needs a reviewer.", key="op-1"))
    await drive(outbox, clock, lambda: effect_counts(database).get("done") == 1)
    assert len(issue.comments) == 1
    assert marker("comment:op-1") in issue.comments[0]["body"]
    assert issue.comments[0]["body"].startswith("Refused: /accept needs a reviewer.")


async def test_rate_limit_waits_are_honoured_before_the_next_attempt(
    database: Database, outbox_parts: Any
) -> None:
    """After Retry-After: 60 nothing is sent for that installation until 60 s have passed."""
    outbox, issue, clock = outbox_parts
    issue.faults = ["secondary", "429"]
    start = clock.now
    put(database, clock, comment(7, REPO, 12, "hello", key="op-2"))
    await drive(outbox, clock, lambda: effect_counts(database).get("done") == 1)
    assert len(issue.post_times) == 3
    assert issue.post_times[1] >= start + 60
    assert issue.post_times[2] >= issue.post_times[1] + 20


async def test_content_creating_writes_are_spaced_a_second_apart(
    database: Database, outbox_parts: Any
) -> None:
    """Five comments for one installation are posted at least one second apart."""
    outbox, issue, clock = outbox_parts
    put(database, clock, *(comment(7, REPO, 12, f"note {i}", key=f"op-s{i}") for i in range(5)))
    await drive(outbox, clock, lambda: effect_counts(database).get("done") == 5)
    gaps = [b - a for a, b in itertools.pairwise(issue.post_times)]
    assert len(issue.comments) == 5 and min(gaps) >= 1.0


async def test_the_same_effect_enqueued_twice_is_performed_once(
    database: Database, outbox_parts: Any
) -> None:
    """A replayed command enqueues the same dedupe key again: still one comment."""
    outbox, issue, clock = outbox_parts
    effect = comment(7, REPO, 12, "once", key="op-3")
    put(database, clock, effect)
    put(database, clock, effect)
    await drive(outbox, clock, lambda: effect_counts(database).get("done") == 1)
    put(database, clock, effect)  # even after it was performed
    assert await outbox.run_once() == 0
    assert len(issue.comments) == 1


async def test_after_the_last_retry_an_effect_is_visibly_failed(
    database: Database, outbox_parts: Any
) -> None:
    """A 500 on every try: after the last one the effect is marked failed with the error, not dropped."""
    outbox, issue, clock = outbox_parts
    tries = outbox.retry.max_attempts
    issue.faults = ["500"] * tries
    put(database, clock, comment(7, REPO, 12, "doomed", key="op-4"))
    await drive(outbox, clock, lambda: effect_counts(database).get("failed") == 1, steps=3 * tries)
    with database.read() as connection:
        row = connection.execute(select(effects_table)).mappings().one()
    assert row["status"] == "failed" and row["attempts"] == tries and "500" in row["last_error"]
    assert issue.comments == []


async def test_a_comment_by_someone_else_with_the_marker_does_not_count(
    database: Database, outbox_parts: Any
) -> None:
    """Only comments written by this app count: a forged marker does not suppress the write."""
    outbox, issue, clock = outbox_parts
    issue.comments.append(
        {"id": 1, "body": marker("comment:op-5"), "user": {"login": "mallory", "type": "User"}}
    )
    issue.faults = ["502 after create"]
    put(database, clock, comment(7, REPO, 12, "real", key="op-5"))
    await drive(outbox, clock, lambda: effect_counts(database).get("done") == 1)
    assert [c["id"] for c in issue.comments if c.get("performed_via_github_app")] == [9001]


@respx.mock
async def test_reactions_are_sent_and_recorded_done(database: Database, outbox_parts: Any) -> None:
    """A reaction effect becomes one POST to the comment's reactions."""
    outbox, _, clock = outbox_parts
    route = respx.post(f"{GITHUB_API}/repos/{REPO}/issues/comments/555/reactions").mock(
        return_value=httpx.Response(201, json={"id": 1, "content": "+1"})
    )
    put(database, clock, reaction(7, REPO, 555))
    await drive(outbox, clock, lambda: effect_counts(database).get("done") == 1)
    assert route.call_count == 1 and json.loads(route.calls.last.request.content) == {"content": "+1"}


async def test_coalesced_effects_render_the_latest_state_once(database: Database, outbox_parts: Any) -> None:
    """A burst of 100 changes to one surface becomes one write of the latest state."""
    outbox, issue, clock = outbox_parts
    state = {"version": 0}

    async def render(row: dict[str, Any]) -> dict[str, Any]:
        return {"number": 12, "body": f"status v{state['version']}"}

    outbox.renderers = {"status_comment": render}
    surface = Effect(EffectKind.STATUS_COMMENT, 7, REPO, "status:acme/web#12", {}, coalesce=True)
    for version in range(1, 101):
        state["version"] = version
        put(database, clock, surface)
    await drive(outbox, clock, lambda: effect_counts(database).get("done") == 1)
    assert len(issue.comments) == 1 and issue.comments[0]["body"].startswith("status v100")


@pytest.fixture
async def two_outboxes(database: Database) -> Any:
    """Two outboxes (two processes) on one database, each with its own GitHub client, one fake issue."""
    clock = StillClock()
    settings = app_settings("sqlite://", GITHUB_API_URL=GITHUB_API, PRIVATE_KEY=private_key_pem())
    clients = [
        GitHubClient(settings, Metrics(), clock=clock, limits=SharedLimits(database)) for _ in range(2)
    ]
    for client in clients:
        await client.start()
    issue = FakeIssue(clock)
    with respx.mock:
        token_route()
        respx.post(COMMENTS).mock(side_effect=issue.post)
        respx.get(COMMENTS).mock(side_effect=issue.list)
        outboxes = [Outbox(database, client, Metrics(), app_id=APP_ID, clock=clock) for client in clients]
        yield outboxes, issue, clock
    for client in clients:
        await client.close()


async def alternate(outboxes: list[Outbox], clock: StillClock, until: Callable[[], bool]) -> None:
    """The outboxes take one effect each in turn; the clock jumps to the next due effect when none is."""
    for _ in range(100):
        if until():
            return
        performed = [await outbox.run_once(limit=1) for outbox in outboxes]
        if not any(performed):
            with outboxes[0].database.read() as connection:
                due = connection.execute(
                    select(effects_table.c.next_attempt_at).where(effects_table.c.status == "pending")
                ).scalars()
                clock.now = max(clock.now, min(due, default=clock.now)) + 0.001
    raise AssertionError("the outboxes did not finish")


async def test_two_outboxes_space_content_writes_between_them(database: Database, two_outboxes: Any) -> None:
    """Two processes writing to one installation still post comments a second apart."""
    outboxes, issue, clock = two_outboxes
    put(database, clock, *(comment(7, REPO, 12, f"note {i}", key=f"op-t{i}") for i in range(6)))
    await alternate(outboxes, clock, lambda: effect_counts(database).get("done") == 6)
    gaps = [b - a for a, b in itertools.pairwise(issue.post_times)]
    assert len(issue.comments) == 6 and min(gaps) >= 1.0


async def test_a_retry_after_seen_by_one_outbox_pauses_the_other(
    database: Database, two_outboxes: Any
) -> None:
    """After one process is told Retry-After: 20, the other sends nothing for that installation for 20 s."""
    (first, second), issue, clock = two_outboxes
    issue.faults = ["429"]
    start = clock.now
    put(database, clock, comment(7, REPO, 12, "one", key="op-r1"))
    assert await first.run_once() == 1 and len(issue.post_times) == 1
    put(database, clock, comment(7, REPO, 12, "two", key="op-r2"))
    clock.now += 5
    assert await second.run_once() == 1  # attempted, and rescheduled without a request
    assert len(issue.post_times) == 1
    await alternate([first, second], clock, lambda: effect_counts(database).get("done") == 2)
    assert len(issue.comments) == 2 and min(issue.post_times[1:]) >= start + 20


@respx.mock
async def test_an_effect_whose_outcome_cannot_be_recorded_does_not_stop_the_others(
    database: Database, outbox_parts: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recording the first reaction raises (a row the store refuses): the second is still performed and
    recorded in the same round, and the first counts a failed, ambiguous attempt instead of blocking."""
    outbox, _, clock = outbox_parts
    for comment_id in (555, 556):
        respx.post(f"{GITHUB_API}/repos/{REPO}/issues/comments/{comment_id}/reactions").mock(
            return_value=httpx.Response(201, json={"id": comment_id, "content": "+1"})
        )
    put(database, clock, reaction(7, REPO, 555), reaction(7, REPO, 556))
    done = outbox._leases.done

    async def refuse_the_first(row: dict[str, Any], result: dict[str, Any] | None, now: float) -> None:
        if row["dedupe_key"].endswith(":555:+1"):
            raise ValueError("the store refused the answer")
        await done(row, result, now)

    monkeypatch.setattr(outbox._leases, "done", refuse_the_first)

    assert await outbox.run_once() == 2
    rows = by_comment(database, effects_table.c.status, effects_table.c.attempts, effects_table.c.ambiguous)
    assert rows["556"].status == "done"
    assert (rows["555"].status, rows["555"].attempts, rows["555"].ambiguous) == ("pending", 1, True)


def by_comment(database: Database, *columns: Any) -> dict[str, Any]:
    """The reactions' effect rows (`columns` of them) by the comment each reacts to."""
    with database.read() as connection:
        found = connection.execute(select(effects_table.c.dedupe_key, *columns))
        return {row.dedupe_key.split(":")[2]: row for row in found}


async def test_a_lease_change_naming_no_column_is_refused(tmp_path: Path) -> None:
    """The lease's UPDATEs set the columns their values name: a misspelt one is refused before
    anything is sent (and its name never reaches the SQL)."""
    database = sqlite_database(tmp_path / "railyard.db")
    leases = EffectLeases(database, "outbox-1", 15.0)
    row = {"id": 1}
    try:
        with pytest.raises(ValueError, match="last_eror"):
            await leases.hold(row, 0.0, last_eror="typo")
        with pytest.raises(ValueError, match="next_attempt"):
            await leases.finish(row, 0.0, next_attempt=5.0)
        await leases.finish(row, 0.0, next_attempt_at=5.0)  # a column: taken (no such effect: no row)
    finally:
        database.close()


@pytest.mark.parametrize("between", ["nothing", "cancelled"])
async def test_a_surface_enqueued_after_its_write_waits_the_interval(
    database: Database, between: str
) -> None:
    """Re-armed after a write, a surface is due the interval after that write, and still is when it
    was cancelled while it waited (as a repository's move cancels) and enqueued again."""
    leases = EffectLeases(database, "outbox-a", lease_seconds=30, surface_interval=5.0)
    surface = Effect(EffectKind.STATUS_COMMENT, 7, REPO, "status:acme/web#12", {}, coalesce=True)
    put(database, StillClock(100.0), surface)
    [row] = await leases.claim_due(100.0, limit=5)
    await leases.done(row, {"comment_id": 1}, 100.0)
    put(database, StillClock(101.0), surface)
    if between != "nothing":
        with database.write() as connection:  # as app.store.repositories leaves it
            connection.execute(effects_table.update().values(status=between))
        put(database, StillClock(102.0), surface)
    assert await leases.claim_due(104.99, limit=5) == []
    assert [r["id"] for r in await leases.claim_due(105.0, limit=5)] == [row["id"]]


@respx.mock
async def test_an_effect_whose_claims_never_record_an_outcome_is_failed_unperformed(
    database: Database, outbox_parts: Any
) -> None:
    """A reaction whose write kills its outbox on every claim (each lease runs out with no
    outcome) is not written a 33rd time: it is failed, visibly, without a request, while the
    other reaction of its batch is written; `railyard retry` counts its claims afresh."""
    outbox, _, clock = outbox_parts
    routes = {
        comment_id: respx.post(f"{GITHUB_API}/repos/{REPO}/issues/comments/{comment_id}/reactions").mock(
            return_value=httpx.Response(201, json={"id": comment_id, "content": "+1"})
        )
        for comment_id in (555, 556)
    }
    put(database, clock, reaction(7, REPO, 555), reaction(7, REPO, 556))
    dead = EffectLeases(database, "dead-outbox", outbox.lease_seconds)
    for _ in range(outbox.retry.max_attempts):  # each claim's process dies before its outcome
        [claimed] = await dead.claim_due(clock.now, 1)
        assert claimed["dedupe_key"].endswith(":555:+1")
        assert await dead.hold_to_perform(claimed, clock.now) is not None  # its write begins
        clock.now += outbox.lease_seconds + 1

    assert await outbox.run_once() == 2
    rows = by_comment(database, effects_table.c.id, effects_table.c.status, effects_table.c.last_error)
    assert rows["556"].status == "done" and routes[556].call_count == 1
    assert rows["555"].status == "failed" and routes[555].call_count == 0
    assert rows["555"].last_error == "gave up: no outcome recorded in 32 claims"

    assert retry_effects(database, [rows["555"].id], clock.now) == {rows["555"].id: "failed"}
    assert await outbox.run_once() == 1
    assert routes[555].call_count == 1 and effect_counts(database) == {"done": 2}


@respx.mock
async def test_claims_whose_batch_was_cut_short_before_the_write_do_not_count(
    database: Database, outbox_parts: Any
) -> None:
    """An effect claimed again and again by an outbox whose batch never reached it (a database
    outage cut each batch short) is written when one does: only a write begun counts."""
    outbox, _, clock = outbox_parts
    route = respx.post(f"{GITHUB_API}/repos/{REPO}/issues/comments/555/reactions").mock(
        return_value=httpx.Response(201, json={"id": 555, "content": "+1"})
    )
    put(database, clock, reaction(7, REPO, 555))
    dead = EffectLeases(database, "dead-outbox", outbox.lease_seconds)
    for _ in range(outbox.retry.max_attempts + 5):
        assert len(await dead.claim_due(clock.now, 1)) == 1
        clock.now += outbox.lease_seconds + 1

    assert await outbox.run_once() == 1
    assert route.call_count == 1 and effect_counts(database) == {"done": 1}
