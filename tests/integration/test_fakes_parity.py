"""The in-memory store records what the SQL store records, for the same deliveries.

Handler tests in tests/unit/handlers trust `tests.fakes.store.MemoryStore`; this runs one
ticket's whole life (and an order where the merge comes before the ticket exists) through the
real handlers twice, once on each store, and compares every ticket, its log, its sign of
life, the stored PR and the held observations.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select

from app.contracts.effect_types import surfaces_for
from app.store import held, pulls
from app.store.codec import ticket_to_data
from app.store.database import Database
from app.store.signs import signs_of_life
from app.store.tickets import TicketService, operations
from app.store.unit import SqlStore
from app.views.replies_text import render
from handlers.ports import Services
from policies.model import TicketKey
from policies.states import IntegrationState, WorkState
from tests.fakes import webhooks
from tests.fakes.github import pull_answer
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import REPOSITORY, check_run, deployment_status, issue, pull_request, push
from tests.unit.handlers.steps import CAROL, RACHEL, world

HEAD, MERGE, DEPLOYED = "a" * 40, "e" * 40, "d" * 40
Scenario = Callable[[FakePorts, Services], Awaitable[None]]


async def comment(
    ports: FakePorts, services: Services, comment_id: int, body: str, by: tuple[str, int]
) -> None:
    """A comment on issue #12, through the given services (with the same ids in both runs)."""
    written = webhooks.comment(12, body, author=by, comment_id=comment_id)
    await ports.dispatch("issue_comment", written, services=services)


def merged_pull(body: str) -> dict[str, Any]:
    """PR #40 from agent/12-fix, merged."""
    return pull_answer(
        REPOSITORY, 40, body=body, head_ref="agent/12-fix", head_sha=HEAD, state="closed",
        merged_at="2026-11-30T11:30:00Z", merge_commit=MERGE, updated_at="2026-11-30T11:30:00Z",
    )  # fmt: skip


async def a_whole_life(ports: FakePorts, services: Services) -> None:
    """Publish, claim a branch, a check before its PR, a push, deliver, deploy before the merge, a
    revert merged, close."""
    await comment(ports, services, 1, "/publish", RACHEL)
    await comment(ports, services, 2, "/claim branch=agent/12-fix", CAROL)
    await comment(ports, services, 2, "/claim branch=agent/12-fix", CAROL)  # delivered again
    await comment(ports, services, 5, "/accept", RACHEL)  # refused: stored, and counted
    await ports.dispatch("check_run", check_run(HEAD, conclusion="failure"), services=services)
    opened = pull_answer(
        REPOSITORY, 40, body="Retries.", head_ref="agent/12-fix", head_sha=HEAD, mergeable=True
    )
    ports.github.add_pull(REPOSITORY, opened)
    await ports.dispatch(
        "pull_request", pull_request("opened", opened), delivery_id="pr-1", services=services
    )
    ports.github.add_branch(REPOSITORY, "agent/12-fix", HEAD)
    await ports.dispatch("push", push("agent/12-fix"), delivery_id="push-1", services=services)
    await comment(ports, services, 3, "/deliver branch=agent/12-fix Retries stop after five tries.", CAROL)
    await ports.dispatch("deployment_status", deployment_status(7, DEPLOYED, "success"), services=services)
    merged = merged_pull("Retries.")
    await ports.dispatch(
        "pull_request", pull_request("closed", merged), delivery_id="pr-2", services=services
    )
    revert = pull_answer(
        REPOSITORY, 41, body="Reverts acme/app#40", title='Revert "Retries."', state="closed",
        merged_at="2026-11-30T12:00:00Z", merge_commit="9" * 40, updated_at="2026-11-30T12:00:00Z",
    )  # fmt: skip
    await ports.dispatch(
        "pull_request", pull_request("closed", revert), delivery_id="pr-3", services=services
    )
    await ports.dispatch("issues", issue("closed", 12), delivery_id="close-1", services=services)
    await comment(ports, services, 4, "/status", RACHEL)


async def merged_before_published(ports: FakePorts, services: Services) -> None:
    """A PR that fixes #12 merges while #12 is a plain issue; then #12 is published."""
    merged = merged_pull("Fixes #12")
    await ports.dispatch(
        "pull_request", pull_request("closed", merged), delivery_id="pr-1", services=services
    )
    await comment(ports, services, 1, "/publish", RACHEL)


def _when(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)  # SQLite gives back naive UTC times


def _event_row(recorded: Any) -> tuple[Any, ...]:
    e = recorded.event
    data = json.dumps(dict(e.data), sort_keys=True, default=str)
    return (recorded.revision, e.type, e.actor, e.actor_id, e.role, _when(e.at), e.operation_id, data)


def observed_in_memory(ports: FakePorts, key: TicketKey) -> dict[str, Any]:
    """What the in-memory store holds about the ticket."""
    records = ports.store.records
    ticket, sign = records.ticket(key), ports.store.sign_of_life(key, 1)
    return {
        "ticket": ticket_to_data(ticket) if ticket else None,
        "history": [_event_row(r) for r in records.history(key)],
        "sign": (_when(sign.at), sign.kind, sign.source, sign.max_silence_minutes) if sign else None,
        "pull": records.stored_pull(key.repository, 40),
        "held": [records.held_for(key.repository, s) for s in (f"check:{HEAD}", "deployment:production")],
        "unborn": records.held_for(key.repository, "ticket:12"),
        "operations": sorted(
            (op_id, op.change, "refused" if op.refusal else "applied", op.revision)
            for op_id, op in records.operations.items()
        ),
    }


def observed_in_sql(database: Database, key: TicketKey) -> dict[str, Any]:
    """What the SQL store holds about the ticket."""
    service = TicketService(database)
    ticket = service.load(key)
    with database.read() as connection:
        row = connection.execute(signs_of_life.select().where(signs_of_life.c.attempt == 1)).first()
        stored = pulls.stored_pull(connection, key.repository, 40)
        holds = [
            held.held_for(connection, key.repository, s) for s in (f"check:{HEAD}", "deployment:production")
        ]
        unborn = held.held_for(connection, key.repository, "ticket:12")
        rows = connection.execute(
            select(
                operations.c.operation_id, operations.c.change, operations.c.outcome, operations.c.revision
            )
        ).all()
    return {
        "ticket": ticket_to_data(ticket) if ticket else None,
        "history": [_event_row(r) for r in service.history(key)],
        "sign": (_when(row.at), row.kind, row.source, row.max_silence_minutes) if row else None,
        "pull": stored,
        "held": holds,
        "unborn": unborn,
        "operations": sorted(tuple(row) for row in rows),
    }


@pytest.mark.parametrize(
    ("scenario", "work"),
    [(a_whole_life, WorkState.DELIVERED), (merged_before_published, WorkState.OPEN)],
    ids=["a_whole_life", "merged_before_published"],
)
async def test_the_memory_store_records_what_the_sql_store_records(
    database: Database, scenario: Scenario, work: WorkState
) -> None:
    """The same deliveries leave the same tickets, logs, signs, PRs and held observations in both stores."""
    memory = world()
    memory.ancestry.pairs.add((MERGE, DEPLOYED))
    await scenario(memory, memory.services)

    sql = world()
    sql.ancestry.pairs.add((MERGE, DEPLOYED))
    store = SqlStore(database, render=render, surfaces=surfaces_for, clock=sql.clock)
    try:
        await scenario(sql, replace(sql.services, store=store))
        key = TicketKey(REPOSITORY.casefold(), 12)
        assert observed_in_memory(memory, key) == observed_in_sql(database, key)
        shown = memory.store.ticket(key)
        assert shown is not None and (shown.work, shown.rails.integration) == (work, IntegrationState.MERGED)
        assert shown.reverts == (((40, 41),) if scenario is a_whole_life else ())
    finally:
        store.close()
