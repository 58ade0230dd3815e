"""A pull request retargeted to another base, through the SQL store on SQLite and PostgreSQL: the
stored PR keeps the base it targets now (migration 0020), the rail reads the answer for that base,
and a row stored before bases were kept reads as base not known."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import update

from app.contracts.effect_types import surfaces_for
from app.store import pulls
from app.store.database import Database
from app.store.tickets import TicketService
from app.store.unit import SqlStore
from app.views.replies_text import render
from handlers.observe import pull_request_from
from policies.model import TicketKey
from policies.states import IntegrationState
from tests.fakes import webhooks
from tests.fakes.github import pull_answer
from tests.fakes.webhooks import REPOSITORY, pull_request
from tests.unit.handlers.steps import RACHEL, world

KEY = TicketKey(REPOSITORY.casefold(), 12)


async def test_a_retargeted_pull_request_is_stored_with_its_new_base_and_unblocked(
    database: Database,
) -> None:
    """#40 conflicts with `main` (blocked); retargeted to `release-1`, where it merges: the ticket
    shows it open, and the stored PR names `release-1`."""
    ports = world()
    store = SqlStore(database, render=render, surfaces=surfaces_for, clock=ports.clock)
    services = replace(ports.services, store=store)
    try:
        await ports.dispatch(
            "issue_comment", webhooks.comment(12, "/publish", author=RACHEL), services=services
        )
        pull = ports.github.add_pull(
            REPOSITORY, pull_answer(REPOSITORY, 40, body="Fixes #12", mergeable=False)
        )
        await ports.dispatch("pull_request", pull_request("opened", pull), delivery_id="o", services=services)
        assert TicketService(database).load(KEY).rails.integration is IntegrationState.BLOCKED
        moved = ports.github.add_pull(
            REPOSITORY,
            {**pull, "base": {"ref": "release-1"}, "mergeable": True, "updated_at": "2026-11-30T10:20:00Z"},
        )
        payload = pull_request("edited", moved)
        payload["changes"] = {"base": {"ref": {"from": "main"}, "sha": {"from": "b" * 40}}}
        await ports.dispatch("pull_request", payload, delivery_id="e", services=services)
    finally:
        store.close()
    rails = TicketService(database).load(KEY).rails
    assert rails.integration is IntegrationState.PULL_REQUEST_OPEN
    assert rails.pull_requests[40].base_ref == "release-1"
    with database.read() as connection:
        stored = pulls.stored_pull(connection, REPOSITORY, 40)
    assert stored is not None and stored[0].base_ref == "release-1"


def test_a_pull_request_stored_before_bases_were_kept_reads_as_base_not_known(database: Database) -> None:
    """A row written before 0020 (no base) reads back with `base_ref=None`."""
    opened = pull_answer(REPOSITORY, 40, body="Fixes #12")
    pull = pull_request_from(opened, REPOSITORY, 0.0)
    assert pull is not None and pull.base_ref == "main"
    with database.write() as connection:
        pulls.remember(connection, pull, {12})
        connection.execute(update(pulls.pull_requests).values(base_ref=None))
    with database.read() as connection:
        stored = pulls.stored_pull(connection, REPOSITORY, 40)
    assert stored is not None and stored[0] == replace(pull, repository=REPOSITORY.casefold(), base_ref=None)
