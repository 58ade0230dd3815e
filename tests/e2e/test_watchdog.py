"""The claim watchdog end to end: the real server (its watchdog looking every 50 ms, its clock
moved forward by the test), signed webhooks in, the GitHub stand-in answering."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text, update

from app.store.database import Database
from app.store.effects import effect_counts
from app.store.signs import signs_of_life
from app.store.tickets import TicketService, tickets
from github_standin import running_standin
from github_standin.events import repository_moved
from policies.events import EventType
from policies.model import TicketKey
from support.world import REPO, World, event_payload, standin_state
from tests.fakes import app_settings, running_server

KEY = TicketKey(REPO, 12)


@dataclass
class Wall:
    """The server's clock: the real time, moved forward by `ahead`."""

    ahead: timedelta = timedelta()

    def __call__(self) -> float:
        return time.time() + self.ahead.total_seconds()

    def now(self) -> datetime:
        return datetime.fromtimestamp(self(), UTC)


@pytest.fixture
async def watched(tmp_path: Path) -> AsyncIterator[tuple[World, Wall]]:
    """A configured server whose watchdog looks every 50 ms, on a clock the test moves."""
    wall = Wall()
    async with running_standin(standin_state()) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1", WATCHDOG_INTERVAL_SECONDS="0.05")
        async with running_server(settings, clock=wall) as server:
            yield World(server, standin.state, Database(url)), wall


def overdue(world: World) -> list[dict[str, Any]]:
    """The data of each `claim_overdue` recorded on #12."""
    history = TicketService(world.database).history(KEY)
    return [dict(r.event.data) for r in history if r.event.type is EventType.CLAIM_OVERDUE]


async def eventually(world: World, count: int, timeout: float = 10.0) -> None:
    """Wait until #12 has `count` claim_overdue events."""
    deadline = asyncio.get_running_loop().time() + timeout
    while len(overdue(world)) < count:
        assert asyncio.get_running_loop().time() < deadline, "the watchdog recorded nothing"
        await asyncio.sleep(0.05)


def issue_event(action: str) -> dict[str, Any]:
    """A real `issues` payload for #12, closed or reopened."""
    payload = event_payload("issues", "21-reopened.json", action=action)
    payload["issue"].update({"number": 12, "state": "closed" if action == "closed" else "open"})
    return payload


async def test_the_server_records_an_overdue_claim_once_per_silence_and_never_moves_work(
    watched: tuple[World, Wall],
) -> None:
    """`/claim --check-in 60`, an hour of silence: one claim_overdue however often the watchdog looks;
    the claimant's comment starts a new period; a closed issue is not watched; work stays claimed."""
    world, wall = watched
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim --check-in 60")
    opened = world.ticket().revision
    await asyncio.sleep(0.3)
    assert overdue(world) == []

    wall.ahead = timedelta(minutes=61)
    await eventually(world, 1)
    await asyncio.sleep(0.3)  # several more looks at the same silence
    [first] = overdue(world)
    assert (first["attempt"], first["claimant"], first["limit_minutes"]) == (1, "cody", 60)
    ticket = world.ticket()
    assert (ticket.work.value, ticket.claimant, ticket.revision) == ("claimed", "cody", opened + 1)

    spoke = wall.now().replace(microsecond=0)
    await world.say("cody", "Still on it.", created_at=spoke.strftime("%Y-%m-%dT%H:%M:%SZ"))
    wall.ahead += timedelta(minutes=30)
    await asyncio.sleep(0.3)
    assert len(overdue(world)) == 1
    wall.ahead += timedelta(minutes=31)
    await eventually(world, 2)
    assert overdue(world)[1]["silent_since"] == spoke.isoformat()

    await world.send("issues", issue_event("closed"))
    wall.ahead += timedelta(hours=5)
    await asyncio.sleep(0.3)
    assert len(overdue(world)) == 2
    ticket = world.ticket()
    assert ticket.closed and ticket.work.value == "claimed"


def corrupt(world: World, number: int, **values: Any) -> int:
    """Write `values` into #`number`'s rows as an older release (or a hand) left them; its row id."""
    with world.database.write() as connection:
        ticket_id = int(
            connection.execute(
                select(tickets.c.id).where(tickets.c.repository == REPO, tickets.c.number == number)
            ).scalar_one()
        )
        if "max_silence_minutes" in values:
            limit = values["max_silence_minutes"]
            connection.execute(
                update(signs_of_life)
                .where(signs_of_life.c.ticket_id == ticket_id)
                .values(max_silence_minutes=limit)
            )
        if "snapshot" in values:
            connection.execute(
                update(tickets).where(tickets.c.id == ticket_id).values(snapshot=values["snapshot"])
            )
    return ticket_id


async def health(world: World) -> tuple[int, dict[str, Any]]:
    """/healthz's status and report."""
    async with world.server.client.get("/healthz") as response:
        return response.status, await response.json()


async def test_one_tickets_bad_stored_values_never_stop_the_watchdog_for_the_others(
    watched: tuple[World, Wall],
) -> None:
    """#14 holds a silence limit of 9,000,000,000 minutes stored before the bound, then a snapshot that
    no longer reads: #12's overdue claims are still recorded, /healthz stays 200 and names #14's row."""
    world, wall = watched
    world.github.add_issue(REPO, 14, body="Retry the webhooks")
    repository = world.github.repositories[REPO]
    repository.branches["agent/14-fix"] = repository.branches["agent/12-fix"]
    for number in (12, 14):
        await world.say("rachel", "/publish", number)
    await world.say("cody", "/claim --check-in 60")
    await world.say("cody", "/claim", 14)
    corrupt(world, 14, max_silence_minutes=9_000_000_000)

    wall.ahead = timedelta(minutes=61)
    await eventually(world, 1)  # before the fix: OverflowError in every round, nothing recorded

    broken = corrupt(world, 14, snapshot={"work": "claimed"})
    await world.say("cody", "Still on it.", created_at=wall.now().strftime("%Y-%m-%dT%H:%M:%SZ"))
    wall.ahead += timedelta(minutes=61)
    await eventually(world, 2)
    status, report = await health(world)

    assert status == 200 and report["status"] == "ok"
    watchdog = report["loops"]["watchdog"]
    assert watchdog["healthy"] and watchdog["consecutive_failures"] == 0
    assert watchdog["failed_tickets"] == [{"ticket_id": broken, "error": "KeyError"}]
    assert watchdog["ticket_failures_total"] >= 1


async def test_a_silence_limit_that_would_overflow_is_refused_with_its_line(
    watched: tuple[World, Wall],
) -> None:
    """`claims.max_silence_minutes: 9000000000` in the repository's file: `/publish` is refused with the
    line and the bound, nothing is recorded, and the watchdog goes on (it once raised every round)."""
    world, _ = watched
    files = world.github.repositories[REPO].files
    files[".github/railyard.yml"] += "claims:\n  max_silence_minutes: 9000000000\n"

    await world.say("rachel", "/publish")

    assert world.ticket() is None
    [reply] = world.replies()
    assert "claims.max\\_silence\\_minutes: must be at most 525600, got 9000000000" in reply
    status, report = await health(world)
    assert status == 200 and report["loops"]["watchdog"]["healthy"]


def recorded(world: World, kind: EventType, number: int = 12) -> list[dict[str, Any]]:
    """The data of each `kind` event recorded on #`number`."""
    history = TicketService(world.database).history(TicketKey(REPO, number))
    return [dict(r.event.data) for r in history if r.event.type is kind]


async def until(check: Any, timeout: float = 10.0) -> None:
    """Wait until `check()` is true."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "the watchdog recorded nothing"
        await asyncio.sleep(0.05)


async def test_the_server_records_a_passed_deadline_and_a_review_overdue_once_each(
    watched: tuple[World, Wall],
) -> None:
    """`claims.max_attempt_hours: 2` and `reviews.max_wait_hours: 1`: #12's claimant comments every 50
    minutes and `/status` in between, yet past two hours the server records `claim_overdue` (reason
    `deadline`) once; #14's delivery waits more than an hour and the server records `review_overdue`
    once, shown on its status comment."""
    world, wall = watched
    files = world.github.repositories[REPO].files
    files[".github/railyard.yml"] += "claims:\n  max_attempt_hours: 2\nreviews:\n  max_wait_hours: 1\n"
    world.github.add_issue(REPO, 14, body="Retry the webhooks")
    repository = world.github.repositories[REPO]
    repository.branches["agent/14-fix"] = repository.branches["agent/12-fix"]
    for number in (12, 14):
        await world.say("rachel", "/publish", number)
    await world.say("cody", "/claim --check-in 60")
    await world.say("cody", "/claim", 14)
    await world.say("cody", "/deliver branch=agent/14-fix\nWebhooks retry now.", 14)
    assert world.ticket(14).work.value == "delivered", world.replies(14)

    for step in range(1, 3):
        wall.ahead = timedelta(minutes=50 * step)
        spoke = wall.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        await world.say("cody", f"Progress, step {step}.", created_at=spoke)
    await asyncio.sleep(0.3)
    assert recorded(world, EventType.CLAIM_OVERDUE) == []
    assert recorded(world, EventType.REVIEW_OVERDUE, 14) != []  # 100 minutes > one hour
    [review] = recorded(world, EventType.REVIEW_OVERDUE, 14)
    assert (review["runner"], review["max_wait_hours"]) == ("cody", 1)

    wall.ahead = timedelta(minutes=121)
    await until(lambda: recorded(world, EventType.CLAIM_OVERDUE) != [])
    await asyncio.sleep(0.3)  # several more looks
    [passed] = recorded(world, EventType.CLAIM_OVERDUE)
    assert (passed["reason"], passed["max_attempt_hours"]) == ("deadline", 2)
    assert len(recorded(world, EventType.REVIEW_OVERDUE, 14)) == 1
    await world.settle()
    [shown] = world.status_comments(14)
    assert "**Review overdue.**" in shown
    [claimed] = world.status_comments(12)
    assert "passed its deadline" in claimed


async def test_an_absurd_attempt_deadline_is_refused_with_its_line_and_the_watchdog_goes_on(
    watched: tuple[World, Wall],
) -> None:
    """`claims.max_attempt_hours: 1000000000`: `/publish` is refused naming the line and the bound."""
    world, _ = watched
    files = world.github.repositories[REPO].files
    files[".github/railyard.yml"] += "claims:\n  max_attempt_hours: 1000000000\n"

    await world.say("rachel", "/publish")

    assert world.ticket() is None
    [reply] = world.replies()
    assert "claims.max\\_attempt\\_hours: must be at most 8760, got 1000000000" in reply
    status, report = await health(world)
    assert status == 200 and report["loops"]["watchdog"]["healthy"]


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE signs_of_life SET at = 'not a time' WHERE ticket_id = :id",
        "UPDATE tickets SET snapshot = 'not json' WHERE id = :id",
    ],
)
async def test_a_value_that_does_not_read_at_all_stops_only_its_own_ticket(
    watched: tuple[World, Wall], statement: str
) -> None:
    """#14's row holds a value that no longer reads (a time that is not one, a snapshot that is
    not JSON, written by hand into SQLite): #12's silence is still recorded and `/healthz` names
    #14's row (the rows are read in bulk and converted ticket by ticket)."""
    world, wall = watched
    world.github.add_issue("acme/web", 14, body="Retry the webhooks")
    for number in (12, 14):
        await world.say("rachel", "/publish", number)
    await world.say("cody", "/claim --check-in 60")
    await world.say("cody", "/claim", 14)
    broken = corrupt(world, 14)
    with world.database.write() as connection:
        connection.execute(text(statement), {"id": broken})
    wall.ahead = timedelta(minutes=61)
    await eventually(world, 1, timeout=3.0)
    # #12's event commits inside the round; the round's failures are kept when it ends, just after.
    deadline = asyncio.get_running_loop().time() + 3.0
    while True:
        _, report = await health(world)
        failed = [t["ticket_id"] for t in report["loops"]["watchdog"]["failed_tickets"]]
        if failed or asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.05)
    assert failed == [broken]


async def test_a_passed_deadline_stays_claim_overdue_after_a_later_silence_and_a_sign_of_life(
    watched: tuple[World, Wall],
) -> None:
    """`claims.max_attempt_hours: 2` and `/claim --check-in 150`: the deadline passes (2 h), then
    the silence too (150 min), then the claimant comments. The listing's attention (the board,
    `railyard tickets`, the gauges) keeps `claim_overdue`: a passed deadline holds whatever signs
    of life follow, even behind a later silence record that the comment ended."""
    from app.store.listing import Listing
    from policies.attention import attention

    def codes() -> list[str]:
        [item] = [i for i in Listing(world.database).every() if i.ticket.key.number == 12]
        return attention(item.ticket, item.facts, wall.now())

    world, wall = watched
    files = world.github.repositories["acme/web"].files
    files[".github/railyard.yml"] += "claims:\n  max_attempt_hours: 2\n"
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim --check-in 150")
    wall.ahead = timedelta(minutes=121)
    await until(lambda: len(recorded(world, EventType.CLAIM_OVERDUE)) == 1)
    assert "claim_overdue" in codes()
    wall.ahead = timedelta(minutes=152)
    await until(lambda: len(recorded(world, EventType.CLAIM_OVERDUE)) == 2)
    assert [e["reason"] for e in recorded(world, EventType.CLAIM_OVERDUE)] == ["deadline", "silence"]
    await world.say("cody", "Still on it.", created_at=wall.now().strftime("%Y-%m-%dT%H:%M:%SZ"))
    await asyncio.sleep(0.2)
    assert world.ticket().work is not None and world.ticket().work.value == "claimed"
    assert "claim_overdue" in codes()


async def test_after_a_transfer_to_another_installation_the_watchdog_writes_through_the_new_one(
    watched: tuple[World, Wall],
) -> None:
    """#12 is claimed (`--check-in 60`); acme/web is transferred to the beta organization, whose
    installation of the app is 9, and GitHub's `transferred` webhook (from installation 9) is
    processed. An hour of silence later the watchdog records `claim_overdue` and the status
    comment on beta/web#12 says so, written with installation 9 (the only one that can reach the
    repository now): no write is left failed."""
    world, wall = watched
    world.github.add_installation(9, "beta")
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim --check-in 60")
    moved = world.github.rename_repository(REPO, "beta/web")
    guid, payload = repository_moved(world.github, "https://api.github.com", moved, REPO, 9, "max")
    assert (await world.server.deliver("repository", json.dumps(payload).encode(), guid)).status == 202
    await world.settle()

    wall.ahead = timedelta(minutes=61)
    history = TicketService(world.database).history
    deadline = asyncio.get_running_loop().time() + 10
    while not any(r.event.type is EventType.CLAIM_OVERDUE for r in history(TicketKey("beta/web", 12))):
        assert asyncio.get_running_loop().time() < deadline, "the watchdog recorded nothing"
        await asyncio.sleep(0.05)
    await world.outbox_settled()
    assert not effect_counts(world.database).get("failed")
    status = [
        c.body for c in world.github.comments.values() if c.repo == "beta/web" and "railyard:status" in c.body
    ]
    assert len(status) == 1 and "overdue" in status[0].lower(), status


def take_the_name(world: World, old_repository: str | None) -> set[int]:
    """On GitHub, unseen by railyard (no webhook processed: late, or lost in an outage): acme/web
    is renamed `old_repository` (None: deleted, its comments with it) and a new repository takes
    the name, with an issue #12 of its own. The ids of the comments GitHub has then."""
    if old_repository is None:
        del world.github.repositories[REPO]
        for gone in [i for i, c in world.github.comments.items() if c.repo == REPO]:
            del world.github.comments[gone]
    else:
        world.github.rename_repository(REPO, old_repository)
    world.github.add_repository(REPO, files={}, private=False)
    world.github.add_issue(REPO, 12, title="Someone else's issue", body="Public")
    return set(world.github.comments)


async def overdue_written(world: World, wall: Wall) -> None:
    """An hour of silence later: the watchdog records `claim_overdue` and the outbox is done."""
    wall.ahead = timedelta(minutes=61)
    await eventually(world, 1)
    await world.outbox_settled()


async def test_the_watchdog_writes_a_renamed_repositorys_status_under_its_new_name_never_the_reused_one(
    watched: tuple[World, Wall],
) -> None:
    """#12 is claimed (`--check-in 60`); acme/web is renamed acme/web-old and a new repository
    takes the name acme/web, with an issue #12 of its own; no webhook says so. The watchdog's
    `claim_overdue` shows on the status comment on acme/web-old#12 (the ticket's repository,
    asked by its id), and nothing is written in the new acme/web."""
    world, wall = watched
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim --check-in 60")
    before = take_the_name(world, "acme/web-old")
    await overdue_written(world, wall)
    written = [c for c in world.github.comments.values() if c.id not in before]
    assert written == [], [(c.repo, c.issue_number, c.body[:80]) for c in written]
    status = [c.body for c in world.github.comments.values() if "railyard:status" in c.body]
    assert len(status) == 1 and "overdue" in status[0].lower(), status
    assert [c.repo for c in world.github.comments.values() if "railyard:status" in c.body] == ["acme/web-old"]
    assert not effect_counts(world.database).get("failed")


async def test_the_watchdog_writes_nothing_for_a_deleted_repository_whose_name_is_reused(
    watched: tuple[World, Wall],
) -> None:
    """As above, but acme/web is deleted before a new repository takes its name: the status
    write fails visibly, saying the repository is gone, and nothing is written in the new one."""
    world, wall = watched
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim --check-in 60")
    before = take_the_name(world, None)
    await overdue_written(world, wall)
    written = [c for c in world.github.comments.values() if c.id not in before]
    assert written == [], [(c.repo, c.issue_number, c.body[:80]) for c in written]
    with world.database.read() as connection:
        failed = text("SELECT last_error FROM outbox_effects WHERE status = 'failed'")
        errors = [row.last_error for row in connection.execute(failed)]
    assert errors and all("deleted" in error and "nothing written" in error for error in errors), errors


async def test_a_rename_during_a_silence_does_not_record_its_claim_overdue_again(
    watched: tuple[World, Wall],
) -> None:
    """#12 is claimed (`--check-in 60`) and silent past its limit: `claim_overdue` is recorded. The
    repository is then renamed acme/web -> acme/web-next (GitHub's `renamed` webhook processed)
    while the claimant stays silent: it is the same silence period of the same attempt, so the
    watchdog must not record `claim_overdue` a second time (SPEC *Claim watchdog*: once per
    silence period)."""
    world, wall = watched
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim --check-in 60")
    wall.ahead = timedelta(minutes=61)
    await eventually(world, 1)

    moved = world.github.rename_repository(REPO, "acme/web-next")
    guid, payload = repository_moved(world.github, "https://api.github.com", moved, REPO, 1, "max")
    assert (await world.server.deliver("repository", json.dumps(payload).encode(), guid)).status == 202
    await world.settle()
    renamed = TicketKey("acme/web-next", 12)
    assert TicketService(world.database).load(renamed) is not None
    await asyncio.sleep(0.5)  # several more looks at the same silence, under the new name

    history = TicketService(world.database).history(renamed)
    found = [dict(r.event.data) for r in history if r.event.type is EventType.CLAIM_OVERDUE]
    assert len(found) == 1, found


async def test_a_status_comment_written_after_a_sign_of_life_no_longer_says_the_claimant_is_silent(
    watched: tuple[World, Wall],
) -> None:
    """`/claim --check-in 60`, an hour of silence recorded overdue, then the claimant comments: the
    silence is over (the board's attention drops `claim_overdue`, the hidden line's `watch` starts
    a new silence). The next time the status comment is written (a `/status`, any change) it must
    not still say "has given no sign of life since" the old silence's start."""
    from app.store.listing import Listing
    from policies.attention import attention

    world, wall = watched
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim --check-in 60")
    wall.ahead = timedelta(minutes=61)
    await eventually(world, 1)
    await world.outbox_settled()
    [before] = world.status_comments()
    assert "**Claim overdue.**" in before

    spoke = wall.now().replace(microsecond=0)
    await world.say(
        "cody", "Still on it, tests pass locally.", created_at=spoke.strftime("%Y-%m-%dT%H:%M:%SZ")
    )
    await world.say("rachel", "/status")  # the status comment is written again from the record
    [after] = world.status_comments()
    assert after != before, "the status comment was written again"
    [item] = [i for i in Listing(world.database).every() if i.ticket.key.number == 12]
    assert "claim_overdue" not in attention(item.ticket, item.facts, wall.now()), "the board: not overdue"
    assert "has given no sign of life" not in after, after.split("### What remains")[0]
