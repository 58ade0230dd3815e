"""The domain gauges' reads for `/metrics`: tickets by work state and by attention code, and the
recorded acceptance invalidations by reason.

Bounded cost: the tickets come a keyset page of `listing.MAX_PAGE` at a time (one statement per
page, the same the board reads, so a scrape of up to 500 tickets is one statement), and the
invalidations are one `GROUP BY`. Every label is a value of a fixed vocabulary (`WorkState`,
`attention.CODES`, `InvalidReason`); a stored reason outside it counts as `other`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select

from app.store.database import Database
from app.store.listing import MAX_PAGE, Cursor, list_tickets
from app.store.tickets import events_table
from policies.acceptance import InvalidReason
from policies.attention import CODES, attention
from policies.events import EventType
from policies.states import WorkState

OTHER_REASON = "other"
REASONS = (*(reason.value for reason in InvalidReason), OTHER_REASON)


@dataclass(frozen=True)
class DomainCounts:
    """Every label of each vocabulary with its count (zero when none)."""

    work: dict[str, int] = field(default_factory=dict)
    attention: dict[str, int] = field(default_factory=dict)
    invalidated: dict[str, int] = field(default_factory=dict)


def domain_counts(database: Database, now: datetime) -> DomainCounts:
    """The counts at `now`, in one read transaction."""
    work: Counter[str] = Counter({state.value: 0 for state in WorkState})
    codes: Counter[str] = Counter({code: 0 for code in CODES})
    reasons: Counter[str] = Counter({reason: 0 for reason in REASONS})
    with database.read() as connection:
        after: Cursor | None = None
        while True:
            page = list_tickets(connection, limit=MAX_PAGE, after=after)
            for item in page.items:
                if item.ticket.work is not None:
                    work[item.ticket.work.value] += 1
                codes.update(attention(item.ticket, item.facts, now))
            if page.next is None:
                break
            after = page.next
        reason = events_table.c.data["reason"].as_string()
        rows = connection.execute(
            select(reason, func.count())
            .where(events_table.c.type == EventType.ACCEPTANCE_INVALIDATED.value)
            .group_by(reason)
        )
        for value, count in rows:
            reasons[value if value in REASONS else OTHER_REASON] += int(count)
    return DomainCounts(dict(work), dict(codes), dict(reasons))
