"""The domain gauges of `/metrics`: tickets by work state, attention codes and invalidations by
reason, read from the database in a statement or two and not again within the cache window."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from prometheus_client import generate_latest
from sqlalchemy import event

from app.runtime.domain_gauges import DomainGauges
from app.runtime.metrics import Metrics
from app.store.database import Database
from app.store.tickets import TicketService
from policies.acceptance import InvalidReason
from policies.attention import CODES
from policies.commands import Accept, Claim, Deliver, Publish
from policies.model import TicketKey
from policies.notices import AcceptanceLapsed, NoticeContext
from policies.states import WorkState
from tests.fakes import REQUESTER, REVIEWER, RUNNER, Comments


class Clock:
    """A clock the test moves."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@contextmanager
def statements(database: Database) -> Iterator[list[str]]:
    """Every SQL statement the database runs inside the block (transaction control aside)."""
    seen: list[str] = []

    def record(*args: Any) -> None:
        if not str(args[2]).lstrip().upper().startswith(("BEGIN", "COMMIT", "ROLLBACK", "SET ")):
            seen.append(str(args[2]))

    event.listen(database.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(database.engine, "before_cursor_execute", record)


def recorded(database: Database) -> float:
    """acme/web#1 accepted then invalidated (expired), #2 delivered, #3 open; returns a time after."""
    service, comments = TicketService(database), Comments()
    first, second, third = (TicketKey("acme/web", n) for n in (1, 2, 3))
    for key in (first, second):
        service.execute(key, Publish("Make it so"), comments.context(REQUESTER))
        service.execute(key, Claim(), comments.context(RUNNER))
        service.execute(key, Deliver("Done", commit="a" * 40), comments.context(RUNNER))
    accepted = service.execute(first, Accept(), comments.context(REVIEWER))
    service.execute(third, Publish("Later"), comments.context(REQUESTER))
    lapse = AcceptanceLapsed(accepted.revision, InvalidReason.EXPIRED.value)
    at = comments.context(REVIEWER).at
    service.execute(first, lapse, NoticeContext("railyard", "invalidated:acme/web#1", at))
    return at.timestamp() + 60


async def test_a_scrape_sets_every_vocabulary_label_from_one_or_two_statements(database: Database) -> None:
    """Each work state, attention code and reason has a series; the counts match the record."""
    metrics, clock = Metrics(), Clock(recorded(database))
    gauges = DomainGauges(database, metrics, clock, ttl_seconds=10)
    with statements(database) as seen:
        await gauges.refresh()
    assert len(seen) <= 2
    text = generate_latest(metrics.registry).decode()
    assert 'railyard_tickets{work="accepted"} 1.0' in text
    assert 'railyard_tickets{work="delivered"} 1.0' in text
    assert 'railyard_tickets{work="open"} 1.0' in text
    assert 'railyard_tickets_attention{code="awaiting_review"} 1.0' in text
    assert 'railyard_tickets_attention{code="acceptance_invalid"} 1.0' in text
    assert 'railyard_acceptances_invalidated_recorded{reason="expired"} 1.0' in text
    assert 'railyard_acceptances_invalidated_recorded{reason="now_high_risk"} 0.0' in text
    for state in WorkState:
        assert f'railyard_tickets{{work="{state.value}"}}' in text
    for code in CODES:
        assert f'railyard_tickets_attention{{code="{code}"}}' in text


async def test_scrapes_inside_the_window_read_nothing_and_the_next_one_reads_again(
    database: Database,
) -> None:
    """A second scrape within the cache window runs no statement; after it, the new ticket shows."""
    metrics, clock = Metrics(), Clock(recorded(database))
    gauges = DomainGauges(database, metrics, clock, ttl_seconds=10)
    await gauges.refresh()
    TicketService(database).execute(TicketKey("acme/web", 4), Publish("More"), Comments().context(REQUESTER))
    clock.now += 5
    with statements(database) as seen:
        await gauges.refresh()
    assert seen == []
    assert 'railyard_tickets{work="open"} 1.0' in generate_latest(metrics.registry).decode()
    clock.now += 6
    with statements(database) as seen:
        await gauges.refresh()
    assert 1 <= len(seen) <= 2
    assert 'railyard_tickets{work="open"} 2.0' in generate_latest(metrics.registry).decode()
