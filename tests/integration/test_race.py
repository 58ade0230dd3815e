"""Eight workers race for the same transition: exactly one wins each round."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import func, select

from app.store.attempt_rows import attempts
from app.store.database import Database
from app.store.tickets import TicketService, events_table, operations
from handlers.ports import Outcome
from policies.commands import Accept, Claim, Command, Context, Deliver, Publish, SendBack
from policies.model import Actor, TicketKey
from policies.refusals import RefusalCode
from policies.states import Role
from tests.fakes import REQUESTER, RUNNER, Comments

WORKERS = 8
ROUNDS = 25


def race(service: TicketService, key: TicketKey, attempts_: list[tuple[Command, Context]]) -> list[Outcome]:
    """Start every attempt at the same moment, one thread each."""
    barrier = threading.Barrier(len(attempts_))

    def run(item: tuple[Command, Context]) -> Outcome:
        barrier.wait()
        return service.execute(key, item[0], item[1])

    with ThreadPoolExecutor(max_workers=len(attempts_)) as pool:
        return list(pool.map(run, attempts_))


def rows(database: Database, table: object) -> int:
    """How many rows a table holds."""
    with database.read() as connection:
        return int(connection.execute(select(func.count()).select_from(table)).scalar_one())  # type: ignore[arg-type]


def test_eight_runners_claiming_one_ticket_yield_exactly_one_claim(database: Database) -> None:
    """Each round one claim wins; seven get a clean wrong-state refusal; nothing is lost or doubled."""
    service, comments = TicketService(database), Comments()
    runners = [Actor(f"agent-{i}[bot]", frozenset({Role.RUNNER})) for i in range(WORKERS)]
    for number in range(1, ROUNDS + 1):
        key = TicketKey("acme/race", number)
        assert service.execute(key, Publish("Race me"), comments.context(REQUESTER)).applied
        outcomes = race(service, key, [(Claim(), comments.context(runner)) for runner in runners])
        winners = [o for o in outcomes if o.applied]
        assert len(winners) == 1
        codes = Counter(o.refusal.code for o in outcomes if o.refusal is not None)
        assert codes == {RefusalCode.WRONG_STATE: WORKERS - 1}
        ticket = service.load(key)
        assert ticket is not None and ticket.revision == 3
        assert ticket.claimant == winners[0].events[0].actor
    assert rows(database, events_table) == ROUNDS * 3
    assert rows(database, attempts) == ROUNDS
    assert rows(database, operations) == ROUNDS * (1 + WORKERS)


def test_reviewers_racing_accept_and_send_back_apply_exactly_one_decision(database: Database) -> None:
    """Four accepts and four send-backs on one delivery: one decision wins, the rest are refused."""
    service, comments = TicketService(database), Comments()
    reviewers = [Actor(f"reviewer-{i}", frozenset({Role.REVIEWER})) for i in range(WORKERS)]
    for number in range(1, ROUNDS + 1):
        key = TicketKey("acme/review-race", number)
        service.execute(key, Publish("Race me"), comments.context(REQUESTER))
        service.execute(key, Claim(), comments.context(RUNNER))
        service.execute(key, Deliver("done", commit=f"{number:040x}"), comments.context(RUNNER))
        decisions: list[tuple[Command, Context]] = [
            (Accept() if i % 2 else SendBack("again"), comments.context(reviewer))
            for i, reviewer in enumerate(reviewers)
        ]
        outcomes = race(service, key, decisions)
        assert sum(o.applied for o in outcomes) == 1
        assert all(o.refusal is not None for o in outcomes if not o.applied)
        ticket = service.load(key)
        assert ticket is not None and ticket.revision == 5
    assert rows(database, events_table) == ROUNDS * 5


def test_the_same_comment_delivered_to_eight_workers_at_once_runs_once(database: Database) -> None:
    """Concurrent replays of one operation id: one applies, the others return its stored outcome."""
    service, comments = TicketService(database), Comments()
    for number in range(1, ROUNDS + 1):
        key = TicketKey("acme/replay-race", number)
        service.execute(key, Publish("Race me"), comments.context(REQUESTER))
        context = comments.context(RUNNER)
        outcomes = race(service, key, [(Claim(), context)] * WORKERS)
        assert sum(not o.replayed for o in outcomes) == 1
        assert {o.revision for o in outcomes} == {3}
        assert all(o.events == outcomes[0].events and o.refusal is None for o in outcomes)
    assert rows(database, events_table) == ROUNDS * 3
