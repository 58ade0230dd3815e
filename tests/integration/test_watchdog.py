"""The claim watchdog on a real database: `claim_overdue` recorded once per silence period,
never moving WorkState, closed issues skipped; and the signs of life the handlers store from
comments, pushes and deliveries."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from app.bootstrap import Shell, wire
from app.github.client import GitHubClient
from app.runtime.metrics import Metrics
from app.runtime.watchdog import check_claims
from app.store import signs
from app.store.database import Database
from app.store.signs import signs_of_life
from app.store.tickets import TicketService
from github_standin import StandinState, running_standin
from handlers import ROUTER
from handlers.ports import Heard, Rules
from handlers.routing import WebhookEvent
from handlers.signs import signs_from_events
from policies.commands import Claim, Publish
from policies.events import EventType
from policies.model import TicketKey
from policies.notices import IssueStateObserved, NoticeContext
from policies.states import WorkState
from support.world import comment_payload, event_payload
from tests.conftest import sqlite_database
from tests.fakes import REQUESTER, RUNNER, START, Comments, app_settings


def record_sign_of_life(database: Database, heard: Heard) -> bool:
    """Store one sign of life in a transaction of its own."""
    with database.write() as connection:
        return signs.record_sign_of_life(connection, heard)


KEY = TicketKey("acme/web", 12)
CLAIMANT = RUNNER.login


def minutes(n: float) -> datetime:
    """START plus `n` minutes (the claim happens a few seconds after START)."""
    return START + timedelta(minutes=n)


def claimed(service: TicketService, *, check_in: int | None = 30, key: TicketKey = KEY) -> datetime:
    """Publish and claim `key`; return when the attempt opened."""
    comments = Comments()
    service.execute(key, Publish("Resumable uploads"), comments.context(REQUESTER))
    outcome = service.execute(key, Claim(check_in_minutes=check_in), comments.context(RUNNER))
    assert outcome.applied
    return outcome.events[0].at


def overdue_events(service: TicketService, key: TicketKey = KEY) -> list[dict[str, Any]]:
    """The data of every `claim_overdue` in the ticket's history."""
    return [dict(r.event.data) for r in service.history(key) if r.event.type is EventType.CLAIM_OVERDUE]


def test_an_overdue_claim_is_recorded_once_per_silence_period(database: Database) -> None:
    """Looking again during the same silence records nothing more; a sign of life starts a new period."""
    service = TicketService(database)
    opened = claimed(service, check_in=30)
    assert check_claims(database, service, opened + timedelta(minutes=30)) == []
    [first] = check_claims(database, service, opened + timedelta(minutes=31))
    assert (first.ticket, first.silence.claimant, first.silence.attempt, first.recorded) == (
        KEY,
        CLAIMANT,
        1,
        True,
    )
    [again] = check_claims(database, service, opened + timedelta(minutes=90))
    assert again.recorded is False and again.silence == first.silence
    assert overdue_events(service) == [
        {
            "attempt": 1,
            "claimant": CLAIMANT,
            "silent_since": opened.isoformat(),
            "limit_minutes": 30,
            "reason": "silence",
        }
    ]

    spoke = opened + timedelta(minutes=100)
    record_sign_of_life(database, Heard(KEY, 1, spoke, "comment", "c-1"))
    assert check_claims(database, service, spoke + timedelta(minutes=30)) == []
    [second] = check_claims(database, service, spoke + timedelta(minutes=31))
    assert second.recorded and second.silence.silent_since == spoke
    assert [e["silent_since"] for e in overdue_events(service)] == [opened.isoformat(), spoke.isoformat()]


def test_recording_overdue_never_changes_work_state_or_the_claim(database: Database) -> None:
    """The ticket after `claim_overdue` is the ticket before, one revision on, noting the period."""
    service = TicketService(database)
    opened = claimed(service)
    before = service.load(KEY)
    check_claims(database, service, opened + timedelta(hours=5))
    after = service.load(KEY)
    assert before is not None and after is not None
    assert after.revision == before.revision + 1
    assert replace(after, revision=before.revision, noticed=()) == before
    assert len(after.noticed) == 1 and after.noticed[0].startswith("silence:1:")
    assert after.work is WorkState.CLAIMED and after.claimant == CLAIMANT


def test_a_closed_issue_is_not_watched_until_it_is_reopened(database: Database) -> None:
    """Closing the issue stops the watch (WorkState stays claimed); reopening resumes it."""
    service = TicketService(database)
    opened = claimed(service)
    late = opened + timedelta(hours=5)
    close = NoticeContext("olivia", "issue-closed:d-1", opened + timedelta(minutes=5))
    assert service.execute(KEY, IssueStateObserved(closed=True), close).applied
    ticket = service.load(KEY)
    assert ticket is not None and ticket.closed and ticket.work is WorkState.CLAIMED
    assert check_claims(database, service, late) == []
    reopen = NoticeContext("olivia", "issue-reopened:d-2", opened + timedelta(minutes=6))
    assert service.execute(KEY, IssueStateObserved(closed=False), reopen).applied
    assert [item.ticket for item in check_claims(database, service, late)] == [KEY]


def test_closing_an_issue_that_is_not_a_ticket_records_nothing(database: Database) -> None:
    """No ticket appears because an ordinary issue was closed."""
    service = TicketService(database)
    context = NoticeContext("olivia", "issue-closed:d-9", START)
    assert not service.execute(TicketKey("acme/web", 99), IssueStateObserved(closed=True), context).applied
    assert service.load(TicketKey("acme/web", 99)) is None


def test_without_check_in_the_configured_limit_applies_and_without_it_240_minutes(database: Database) -> None:
    """The limit recorded from `claims.max_silence_minutes` at the claim, else SPEC's default."""
    service = TicketService(database)
    opened = claimed(service, check_in=None)
    other = TicketKey("acme/web", 13)
    other_opened = claimed(service, check_in=None, key=other)
    claim = service.history(KEY)[-1].event
    rules = Rules(policy_version="blob-1", max_silence_minutes=60)
    for heard in signs_from_events(KEY, [claim], opened, "c-claim", rules):
        record_sign_of_life(database, heard)
    found = check_claims(database, service, max(opened, other_opened) + timedelta(minutes=61))
    assert [(f.ticket, f.silence.limit_minutes) for f in found] == [(KEY, 60)]
    assert service.history(KEY)[-1].event.policy_version == "blob-1"
    found = check_claims(database, service, other_opened + timedelta(minutes=241))
    assert (other, 240) in [(f.ticket, f.silence.limit_minutes) for f in found]


def test_signs_of_life_move_only_forward_in_time(database: Database) -> None:
    """A late-arriving older sign does not rewind the silence; a newer configuration replaces the old."""
    service = TicketService(database)
    opened = claimed(service)
    newer, older = opened + timedelta(minutes=50), opened + timedelta(minutes=20)
    record_sign_of_life(database, Heard(KEY, 1, newer, "push", "d-2", 45, "blob-2"))
    record_sign_of_life(database, Heard(KEY, 1, older, "comment", "c-1"))
    with database.read() as connection:
        row = connection.execute(select(signs_of_life)).one()
    assert (row.at, row.kind, row.source, row.max_silence_minutes) == (newer, "push", "d-2", 45)
    record_sign_of_life(database, Heard(KEY, 1, older, "push", "d-1", 90, "blob-3"))
    with database.read() as connection:
        row = connection.execute(select(signs_of_life)).one()
    assert (row.at, row.max_silence_minutes, row.policy_version) == (newer, 90, "blob-3")


def test_a_preview_reports_without_recording_and_a_repository_filter_narrows(database: Database) -> None:
    """`record=False` changes nothing; `repository` looks at one repository only."""
    service = TicketService(database)
    opened = claimed(service)
    elsewhere = TicketKey("acme/api", 1)
    claimed(service, key=elsewhere)
    late = opened + timedelta(hours=1)
    assert {f.ticket for f in check_claims(database, service, late, record=False)} == {KEY, elsewhere}
    assert overdue_events(service) == []
    assert [f.ticket for f in check_claims(database, service, late, repository="ACME/web")] == [KEY]
    assert overdue_events(service, elsewhere) == []


def test_a_sign_of_life_for_an_issue_that_is_not_a_ticket_is_not_stored(database: Database) -> None:
    """Nothing to watch, nothing stored."""
    assert record_sign_of_life(database, Heard(KEY, 1, START, "comment", "c-1")) is False


# -- signs of life through the handlers -------------------------------------------------------

CONFIG = """
roles:
  runner: ["coder-bot[bot]"]
  requester: ["rachel"]
tickets:
  branch_pattern: "agent/{number}-*"
claims:
  max_silence_minutes: 60
"""


@dataclass
class Wall:
    """The handlers' clock, set to each comment's time so attempts open when their claim was written."""

    now: datetime = START

    def __call__(self) -> float:
        return self.now.timestamp()


@pytest.fixture
async def handlers(tmp_path: Path) -> AsyncIterator[tuple[Shell, StandinState]]:
    """Handlers' collaborators over SQLite; GitHub is the stand-in with acme/web configured."""
    state = StandinState()
    state.add_installation(7, "acme")
    repository = state.add_repository("acme/web", files={".github/railyard.yml": CONFIG})
    repository.branches.update({"main": "1" * 40, "agent/12-fix": "f" * 40, "named": "e" * 40})
    state.add_issue("acme/web", 12, body="Make uploads resumable")
    state.add_pull("acme/web", 34, body="Fixes #12", head_ref="agent/12-fix", head_sha="f" * 40)
    database = sqlite_database(tmp_path / "signs.db")
    async with running_standin(state) as standin:
        github = GitHubClient(app_settings(database.url, GITHUB_API_URL=standin.url, APP_ID="1"), Metrics())
        await github.start()
        yield wire(database, clock=Wall(), github=github, app_id=1), state
        await github.close()
    database.close()


async def send(services: Shell, event: str, payload: dict[str, Any], delivery: str) -> None:
    """Run every handler registered for the event, as the worker does."""
    payload = json.loads(json.dumps(payload))
    webhook = WebhookEvent(delivery, event, payload.get("action"), 7, payload)
    for handler in ROUTER.handlers_for(event, webhook.action):
        await handler(webhook, services.ports)


async def say(services: Shell, login: str, body: str, at: datetime, *, number: int = 12) -> None:
    """`login` comments on issue #12 (or PR `number`) at `at`, and it is processed then."""
    assert isinstance(services.clock, Wall)
    services.clock.now = at
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    payload = comment_payload(login, body, number, pr=number != 12, created_at=stamp)
    await send(services, "issue_comment", payload, f"comment-{payload['comment']['id']}")


def stored_sign(services: Shell) -> Any:
    """The one stored sign of life (None when there is none)."""
    with services.database.read() as connection:
        return connection.execute(select(signs_of_life)).one_or_none()


async def test_the_claim_stores_the_configured_limit_and_the_claimants_comments_are_signs_of_life(
    handlers: tuple[Shell, StandinState],
) -> None:
    """`/claim` opens the watch with `claims.max_silence_minutes`; any later comment by the claimant
    (a command or not) moves it on; other people's comments and comments on PRs do not."""
    services, _ = handlers
    await say(services, "rachel", "/publish", minutes(0))
    await say(services, CLAIMANT, "/claim branch=named", minutes(1))
    sign = stored_sign(services)
    assert (sign.attempt, sign.kind, sign.at, sign.max_silence_minutes) == (1, "claim", minutes(1), 60)
    await say(services, CLAIMANT, "Still on it: the retry loop is next.", minutes(30))
    assert (stored_sign(services).kind, stored_sign(services).at) == ("comment", minutes(30))
    await say(services, "rachel", "Any news?", minutes(40))
    await say(services, CLAIMANT, "On the PR instead", minutes(45), number=34)
    assert stored_sign(services).at == minutes(30)
    found = check_claims(services.database, services.tickets, minutes(91))
    assert [(f.silence.silent_since, f.silence.limit_minutes) for f in found] == [(minutes(30), 60)]


def push_payload(branch: str, pushed_at: datetime) -> dict[str, Any]:
    """A real `push` payload for acme/web's `branch` at `pushed_at`."""
    payload = event_payload("push", "01-none.json", ref=f"refs/heads/{branch}", after="f" * 40)
    payload["repository"]["pushed_at"] = int(pushed_at.timestamp())
    return payload


async def test_pushes_to_the_attempts_branch_are_signs_of_life(
    handlers: tuple[Shell, StandinState],
) -> None:
    """The branch named at `/claim`, and a branch matching `tickets.branch_pattern`, count; others do not."""
    services, _ = handlers
    await say(services, "rachel", "/publish", minutes(0))
    await say(services, CLAIMANT, "/claim branch=named", minutes(1))
    await send(services, "push", push_payload("named", minutes(20)), "push-1")
    assert (stored_sign(services).kind, stored_sign(services).at) == ("push", minutes(20))
    await send(services, "push", push_payload("agent/12-fix", minutes(35)), "push-2")
    assert stored_sign(services).at == minutes(35)
    await send(services, "push", push_payload("agent/13-other", minutes(50)), "push-3")
    await send(services, "push", push_payload("main", minutes(55)), "push-4")
    assert stored_sign(services).at == minutes(35)


async def test_a_delivery_is_a_sign_of_life(handlers: tuple[Shell, StandinState]) -> None:
    """`/deliver` stores a `delivery` sign for its attempt, even written on the linked PR."""
    services, _ = handlers
    await say(services, "rachel", "/publish", minutes(0))
    await say(services, CLAIMANT, "/claim", minutes(1))
    await say(services, CLAIMANT, "/deliver\nResumable now.", minutes(25), number=34)
    sign = stored_sign(services)
    assert (sign.attempt, sign.kind, sign.at) == (1, "delivery", minutes(25))


async def test_closing_the_issue_is_recorded_and_the_watchdog_skips_it(
    handlers: tuple[Shell, StandinState],
) -> None:
    """`issues.closed` sets the ticket's closed flag (WorkState unchanged); `reopened` clears it."""
    services, _ = handlers
    await say(services, "rachel", "/publish", minutes(0))
    await say(services, CLAIMANT, "/claim", minutes(1))
    await send(services, "issues", issue_event("closed"), "issue-1")
    ticket = services.tickets.load(KEY)
    assert ticket is not None and ticket.closed and ticket.work is WorkState.CLAIMED
    assert check_claims(services.database, services.tickets, minutes(500)) == []
    await send(services, "issues", issue_event("reopened"), "issue-2")
    assert len(check_claims(services.database, services.tickets, minutes(500))) == 1
    types = [r.event.type.value for r in services.tickets.history(KEY)]
    assert types[-3:] == ["issue_closed", "issue_reopened", "claim_overdue"]


def issue_event(action: str) -> dict[str, Any]:
    """A real `issues` payload (the reopened example, GitHub's closed one differs only in state) for #12."""
    payload = event_payload("issues", "21-reopened.json", action=action)
    payload["issue"].update({"number": 12, "state": "closed" if action == "closed" else "open"})
    return payload


async def test_a_push_to_the_base_branch_named_like_a_fork_prs_head_is_no_sign_of_life(
    handlers: tuple[Shell, StandinState],
) -> None:
    """The claimant adopts an outsider's fork PR (head `mallory/web:main`) and writes `/deliver` on
    it; rita sends it back, opening attempt 2. The claimant then says nothing for over an hour,
    while other people push to acme/web's own `main`. Those pushes are not to the attempt's
    branch (a fork's branch name names nothing in this repository, SPEC *The repository rail*):
    attempt 2 is overdue, silent since the send-back."""
    services, state = handlers
    state.repositories["acme/web"].files[".github/railyard.yml"] = CONFIG.replace(
        'requester: ["rachel"]', 'requester: ["rachel"]\n  reviewer: ["rita"]'
    )
    state.add_pull(
        "acme/web", 35, body="Fixes #12", head_ref="main", head_sha="d" * 40, head_repo="mallory/web",
        user="mallory",
    )  # fmt: skip
    await say(services, "rachel", "/publish", minutes(0))
    await say(services, CLAIMANT, "/claim", minutes(1))
    await say(services, CLAIMANT, "/deliver\nAdopted mallory's fix.", minutes(5), number=35)
    await say(services, "rita", "/send-back Needs a test.", minutes(10))
    ticket = services.tickets.load(KEY)
    assert ticket is not None and (ticket.work, ticket.attempt) == (WorkState.CLAIMED, 2)

    assert ticket.attempt_branch is None  # the fork's head ref names no branch of acme/web
    await send(services, "push", push_payload("main", minutes(50)), "push-main-1")
    found = check_claims(services.database, services.tickets, minutes(75))
    assert [(f.silence.attempt, f.silence.silent_since) for f in found] == [(2, minutes(10))]


@pytest.mark.xfail(
    strict=True,
    reason="watch_claims judges only the stored signs of life: a claimant's comment railyard "
    "acknowledged before the limit but has not processed yet (its ticket's queue held) is ignored",
)
async def test_a_claimants_comment_acknowledged_before_the_limit_is_not_judged_silent(
    handlers: tuple[Shell, StandinState],
) -> None:
    """Claimed at minute 1 (limit 60). The claimant comments at minute 40; railyard stores the
    webhook durably and answers 2xx then, but the worker has not run it yet (the ticket's queue is
    held behind a delivery in backoff, or the workers are behind). The watchdog looks at minute 62:
    the claimant was not silent for 60 minutes, and railyard already holds the proof. Recording
    `claim_overdue` for the silence 1 -> 61 leaves a false event in the append-only log once the
    comment is processed and its sign of life (minute 40) stored."""
    from app.store.intake import Received, row_of, write_batch

    services, _ = handlers
    await say(services, "rachel", "/publish", minutes(0))
    await say(services, CLAIMANT, "/claim", minutes(1))
    stamp = minutes(40).strftime("%Y-%m-%dT%H:%M:%SZ")
    payload = comment_payload(CLAIMANT, "Still on it: the retry loop is next.", 12, created_at=stamp)
    body = json.dumps(payload).encode()
    received = Received("comment-late", "issue_comment", True, minutes(40).timestamp())
    assert write_batch(services.database, [row_of(received, body)]) == [True]  # acknowledged at minute 40

    check_claims(services.database, services.tickets, minutes(62))  # the server's watchdog, meanwhile
    await send(services, "issue_comment", payload, "comment-late")  # the worker gets to it
    assert stored_sign(services).at == minutes(40)
    assert overdue_events(services.tickets) == [], "a silence the claimant broke at minute 40"


@pytest.mark.xfail(
    strict=True,
    reason="watch_claims reads every watch (its sign of life) at the start of the round, but asks "
    "whether a delivery is pending only later, in another transaction, ticket by ticket: a comment "
    "processed in between is neither pending nor in the watch judged, and the silence is recorded",
)
def test_a_held_comment_processed_while_the_round_runs_is_not_judged_silent(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claimed with a 30-minute limit. The claimant comments at minute 20; railyard stores the
    webhook then (acknowledged) but the ticket's queue is held. At minute 40 the watchdog's round
    reads every claimed ticket's watch; before it reaches this ticket (earlier tickets recorded,
    another write waited on), the worker runs the comment: its sign of life (minute 20) is stored
    and the delivery is done. The round then finds nothing pending, judges the watch it read
    before the sign, and records a silence the claimant broke at minute 20, for ever."""
    from sqlalchemy import update

    from app.runtime import watchdog
    from app.store.delivery_status import DONE
    from app.store.intake import Received, row_of, write_batch
    from app.store.queue import deliveries

    service = TicketService(database)
    opened = claimed(service, check_in=30)
    said = opened + timedelta(minutes=20)
    payload = comment_payload(CLAIMANT, "Still on it.", 12, created_at=said.strftime("%Y-%m-%dT%H:%M:%SZ"))
    received = Received("comment-held", "issue_comment", True, said.timestamp())
    assert write_batch(database, [row_of(received, json.dumps(payload).encode())]) == [True]

    checked = watchdog._check

    def worker_runs_first(*arguments: Any) -> Any:
        # The worker gets to the held comment between the round's read and this ticket's check:
        # the handler stores the sign of life, then the queue marks the delivery done.
        record_sign_of_life(database, Heard(KEY, 1, said, "comment", "comment-held"))
        with database.write() as connection:
            connection.execute(
                update(deliveries).where(deliveries.c.delivery_id == "comment-held").values(status=DONE)
            )
        return checked(*arguments)

    monkeypatch.setattr(watchdog, "_check", worker_runs_first)
    check_claims(database, service, opened + timedelta(minutes=40))
    assert overdue_events(service) == [], "a silence the claimant broke at minute 20"


@pytest.mark.xfail(
    strict=True,
    reason="only the silence waits for the repository's pending deliveries (_unheard): the "
    "attempt's deadline is recorded while the runner's /deliver, acknowledged before it, waits "
    "unprocessed in the queue",
)
def test_a_deadline_is_not_recorded_while_a_deliver_acknowledged_before_it_waits(database: Database) -> None:
    """Claimed with `claims.max_attempt_hours: 1` (silence limit 240). The runner writes
    `/deliver` at minute 50; railyard stores the webhook and answers 2xx then, but the ticket's
    queue is held (a delivery in backoff ahead of it, workers behind). The watchdog looks at minute
    70: the silence is left alone since a delivery of the repository waits, yet the deadline is
    recorded, `claim_overdue` "passed its deadline" for an attempt delivered in time, for ever,
    once the /deliver runs (the same held queue the silence was fixed for; `review_overdue` and a
    reviewer's held `/accept` likewise)."""
    from app.store.intake import Received, row_of, write_batch

    service = TicketService(database)
    opened = claimed(service, check_in=None)
    limits = Heard(KEY, 1, opened, "claim", "claim-1", max_silence_minutes=240, max_attempt_hours=1)
    record_sign_of_life(database, limits)
    said = opened + timedelta(minutes=50)
    stamp = said.strftime("%Y-%m-%dT%H:%M:%SZ")
    payload = comment_payload(CLAIMANT, f"/deliver commit={'a' * 40} Done.", 12, created_at=stamp)
    received = Received("deliver-held", "issue_comment", True, said.timestamp())
    assert write_batch(database, [row_of(received, json.dumps(payload).encode())]) == [True]

    check_claims(database, service, opened + timedelta(minutes=70))
    assert overdue_events(service) == [], "a deadline the runner met: its /deliver came at minute 50"
