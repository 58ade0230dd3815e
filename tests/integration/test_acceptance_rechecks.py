"""The hourly re-check of acceptances on a real database: each accepted ticket with an open PR is
judged on its own, so one ticket's row that no longer reads never keeps the others from it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import insert, select, text

from app.contracts.effect_types import check_run
from app.runtime import rechecks
from app.runtime.rechecks import AcceptanceRechecks
from app.store.database import Database
from app.store.effects import EffectLeases, effects_table, enqueue, write_unverified_again
from app.store.tickets import tickets
from policies.model import TicketKey
from tests.fakes import START

OPEN_PR = {"rails": {"pull_requests": [{"number": 34, "open": True, "linked": True}]}}


def accepted(database: Database, number: int) -> int:
    """An accepted ticket of acme/web whose open PR links it; its row id."""
    with database.write() as connection:
        row = {"repository": "acme/web", "number": number, "revision": 6, "work": "accepted"}
        row |= {"integration": "pull_request_open", "deployment": "not_deployed", "snapshot": OPEN_PR}
        row |= {"created_at": START, "updated_at": START, "installation_id": 1}
        connection.execute(insert(tickets).values(**row))
        found = select(tickets.c.id).where(tickets.c.repository == "acme/web", tickets.c.number == number)
        return int(connection.execute(found).scalar_one())


@pytest.mark.parametrize("snapshot", ["not json", "[1, 2]", '{"rails": [1]}'])
def test_one_tickets_unreadable_row_never_keeps_the_others_from_their_recheck(
    database: Database, snapshot: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#14's snapshot no longer reads (not JSON, written by hand; or not the object it was): #12
    and #15 are still judged, and the round names #14's row instead of failing as a whole (before
    the fix no accepted ticket was judged again, and an expired acceptance kept the check green)."""
    if not database.is_sqlite and snapshot == "not json":
        pytest.skip("PostgreSQL's json column holds only JSON")
    ids = {number: accepted(database, number) for number in (12, 14, 15)}
    written = "UPDATE tickets SET snapshot = :s WHERE id = :id"
    if not database.is_sqlite:
        written = "UPDATE tickets SET snapshot = CAST(:s AS json) WHERE id = :id"
    with database.write() as connection:
        connection.execute(text(written), {"s": snapshot, "id": ids[14]})
    judged: list[TicketKey] = []

    async def recheck(ports: Any, installation_id: int, key: TicketKey) -> None:
        judged.append(key)

    monkeypatch.setattr(rechecks, "recheck", recheck)
    round_ = AcceptanceRechecks(database, ports=None)  # type: ignore[arg-type]
    assert asyncio.run(round_._step(asyncio.Event())) is False
    assert judged == [TicketKey("acme/web", 12), TicketKey("acme/web", 15)]
    assert [failed["ticket_id"] for failed in round_.failed] == [ids[14]]
    assert round_.judged == 2 and round_.ticket_failures == 1


async def test_only_checks_last_written_unverified_and_not_pending_are_written_again(
    database: Database,
) -> None:
    """Of three checks on a ticket's PR heads, the one whose last write could not verify the
    reviewer's role is enqueued again; the one written with a verdict GitHub confirmed is not, nor
    the unverified one already waiting to be written (it will be rendered anyway)."""
    leases, now = EffectLeases(database, "outbox-a", lease_seconds=30), 1_000.0
    heads = {"unverified": "a" * 40, "confirmed": "b" * 40, "pending": "c" * 40}
    checks = {name: check_run(1, "acme/web", 34, sha) for name, sha in heads.items()}
    with database.write() as connection:
        enqueue(connection, list(checks.values()), now)
    for row in await leases.claim_due(now, limit=5):
        noted = row["dedupe_key"] != checks["confirmed"].dedupe_key
        result = {"check_run_id": row["id"], **({"notes": {"unverified": True}} if noted else {})}
        await leases.done(row, result, now)
    with database.write() as connection:
        enqueue(connection, [checks["pending"]], now + 5)
    again = write_unverified_again(database, list(checks.values()), now + 10)
    assert again == [checks["unverified"].dedupe_key]
    with database.read() as connection:
        pending = select(effects_table.c.dedupe_key).where(effects_table.c.status == "pending")
        assert set(connection.execute(pending).scalars()) == {
            checks["unverified"].dedupe_key,
            checks["pending"].dedupe_key,
        }
