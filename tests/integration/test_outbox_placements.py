"""Placements the outbox makes before a write (`app.runtime.write_target`), on SQLite and
PostgreSQL, GitHub answered by respx: a chain of names passed on longer than it follows, a
holder GitHub refuses to show, and two placements of one swap at once."""

from __future__ import annotations

import threading

import httpx
import pytest
import respx
from sqlalchemy import insert, select

from app.runtime.outbox import Outbox
from app.store.database import Database
from app.store.effects import comment, effects_table
from app.store.repositories import place, place_all, place_before_write, repositories
from app.store.tables import TicketRow, table
from tests.fakes import GITHUB_API, StillClock
from tests.integration.test_outbox_identity import by_key, created, outbox, put  # noqa: F401
from tests.integration.test_repository_identity import _until_a_backend_waits_for_a_lock, a_ticket

tickets = table(TicketRow)


def answers(routes: dict[int, str | int]) -> dict[int, respx.Route]:
    out = {}
    for rid, answer in routes.items():
        response = (
            httpx.Response(answer, json={"message": "x"})
            if isinstance(answer, int)
            else httpx.Response(200, json={"id": rid, "full_name": answer})
        )
        out[rid] = respx.get(f"{GITHUB_API}/repositories/{rid}").mock(return_value=response)
    return out


async def test_a_chain_of_five_names_passed_on_cancels_no_write_of_a_repository_that_exists(
    database: Database,
    outbox: tuple[Outbox, StillClock],  # noqa: F811
) -> None:
    """55 acme/web -> acme/a, 56 acme/a -> acme/b, ..., 60 acme/e -> acme/f, all unseen: longer
    than the outbox follows (`HOPS`). Nothing moves and nothing is cancelled: 60 exists (acme/f),
    and 55's write waits for a later attempt (or the webhooks that place them)."""
    runner, clock = outbox
    chain = ["acme/web", "acme/a", "acme/b", "acme/c", "acme/d", "acme/e", "acme/f"]
    with database.write() as connection:
        for offset, name in enumerate(chain[1:6], start=1):
            place(connection, 55 + offset, name, None, clock.now)
    answers({55 + i: chain[i + 1] for i in range(6)})
    for i in range(6):
        created(chain[i + 1])
    put(database, clock, comment(7, "acme/web", 12, "for 55", key="op-55"))
    put(database, clock, comment(7, "acme/e", 12, "for 60", key="op-60"))
    await runner.run_once()
    state = by_key(database)
    assert state["comment:op-55"][0] == "pending", state["comment:op-55"]
    assert state["comment:op-60"][0] != "cancelled", state["comment:op-60"]


async def test_a_holder_github_refuses_to_show_fails_no_write_of_the_effects_repository(
    database: Database,
    outbox: tuple[Outbox, StillClock],  # noqa: F811
) -> None:
    """55 acme/web became acme/site, whose holder 56 answers 451 (access blocked): 55 exists and
    GitHub named it; its comment must not fail for good because of 56's answer."""
    runner, clock = outbox
    with database.write() as connection:
        place(connection, 56, "acme/site", None, clock.now)
    answers({55: "acme/site", 56: 451})
    created("acme/site")
    put(database, clock, comment(7, "acme/web", 12, "for 55", key="op-55"))
    await runner.run_once()
    assert by_key(database)["comment:op-55"][0] != "failed", by_key(database)["comment:op-55"]


def test_two_workers_placing_one_swap_at_once_keep_every_record(database: Database) -> None:
    """PostgreSQL: 55 (acme/web) and 56 (acme/site) swapped names unseen; two outbox workers
    each place the swap before one of its writes (`place_before_write`, holders asked). The
    second's reads run before the first commits: no ticket may end under an @unheld/@moving
    name, no pending write may be cancelled, each id keeps its own records."""
    if database.is_sqlite:
        pytest.skip("one writer on SQLite")
    with database.write() as connection:
        place(connection, 55, "acme/web", None, 1.0)
        place(connection, 56, "acme/site", None, 1.0)
        connection.execute(insert(tickets), [
            {**a_ticket("acme/web", 1), "repository_id": 55},
            {**a_ticket("acme/site", 2), "repository_id": 56},
        ])  # fmt: skip
        put_rows = [comment(7, "acme/web", 1, "w", key="w"), comment(7, "acme/site", 2, "s", key="s")]
        from app.store.effects import enqueue

        enqueue(connection, put_rows, 1.0)
        effect_56 = connection.execute(
            select(effects_table.c.id).where(effects_table.c.dedupe_key == "comment:s")
        ).scalar()
    failures: list[BaseException] = []

    def second() -> None:
        try:
            place_before_write(database, 56, "acme/web", effect_56, 2.0, {55: "acme/site"})
        except BaseException as error:
            failures.append(error)

    with database.write() as first:
        place_all(first, {56: "acme/web", 55: "acme/site"}, 2.0)
        other = threading.Thread(target=second)
        other.start()
        _until_a_backend_waits_for_a_lock(database)
    other.join(20)
    assert failures == []
    with database.read() as connection:
        held = dict(connection.execute(select(repositories.c.id, repositories.c.full_name)).all())
        kept = dict(connection.execute(select(tickets.c.number, tickets.c.repository)).all())
    state = by_key(database)
    seen = (held, kept, state)
    assert held == {55: "acme/site", 56: "acme/web"}, seen
    assert kept == {1: "acme/site", 2: "acme/web"}, seen
    assert [v[0] for v in state.values()] == ["pending", "pending"], seen
