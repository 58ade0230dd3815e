"""The ticket service on a real database: durable events, idempotency, optimistic concurrency."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError

from app.store.attempt_rows import attempts, delivery_records
from app.store.codec import ticket_to_data
from app.store.database import Database
from app.store.tables import SQLModel
from app.store.tickets import TicketService, events_table, operations
from policies.commands import Accept, Claim, Deliver, Publish, Reopen, SendBack
from policies.engine import apply
from policies.model import Ticket, TicketKey
from policies.rails import BranchObserved, ObservationContext
from policies.refusals import RefusalCode
from policies.states import IntegrationState, WorkState
from tests.fakes import REQUESTER, REVIEWER, RUNNER, Comments

KEY = TicketKey("acme/web", 12)


def count(database: Database, table: object) -> int:
    """Rows in a table."""
    with database.read() as connection:
        return int(connection.execute(select(func.count()).select_from(table)).scalar_one())  # type: ignore[arg-type]


def delivered_ticket(service: TicketService, comments: Comments) -> None:
    """Walk a ticket to `delivered` by the runner."""
    assert service.execute(KEY, Publish("Fix the flaky upload"), comments.context(REQUESTER)).applied
    assert service.execute(KEY, Claim(branch="agent/12-upload"), comments.context(RUNNER)).applied
    deliver = Deliver("Retries added", branch="agent/12-upload", commit="a" * 40)
    assert service.execute(KEY, deliver, comments.context(RUNNER)).applied


def test_a_full_lifecycle_is_stored_as_events_attempts_and_delivery_records(database: Database) -> None:
    """Each transition appends one event per revision; attempts and delivery records follow."""
    service, comments = TicketService(database), Comments()
    delivered_ticket(service, comments)
    assert service.execute(KEY, SendBack("Tests fail on Windows"), comments.context(REVIEWER)).applied
    deliver_again = Deliver("Windows fixed", branch="agent/12-upload", commit="b" * 40)
    assert service.execute(KEY, deliver_again, comments.context(RUNNER)).applied
    assert service.execute(KEY, Accept(), comments.context(REVIEWER)).applied

    ticket = service.load(KEY)
    assert ticket is not None
    assert ticket.work is WorkState.ACCEPTED
    assert ticket.attempt == 2
    assert ticket.review is not None and ticket.review.reviewer == "rita"
    history = service.history(KEY)
    assert [r.revision for r in history] == list(range(1, ticket.revision + 1))
    assert [r.event.type.value for r in history] == [
        "created", "published", "claimed", "delivered", "sent_back", "delivered", "accepted",
    ]  # fmt: skip
    assert count(database, attempts) == 2
    assert count(database, delivery_records) == 2
    with database.read() as connection:
        records = (
            connection.execute(select(delivery_records).order_by(delivery_records.c.id)).mappings().all()
        )
    assert [(r["attempt"], r["commit_sha"], r["runner"]) for r in records] == [
        (1, "a" * 40, "coder-bot[bot]"),
        (2, "b" * 40, "coder-bot[bot]"),
    ]
    assert records[0]["summary"] == "Retries added"
    assert records[0]["comment_id"] > 1_000_000_000


def test_the_same_operation_id_twice_leaves_one_event_and_returns_the_stored_outcome(
    database: Database,
) -> None:
    """A replayed command (the same comment delivered again) changes nothing."""
    service, comments = TicketService(database), Comments()
    service.execute(KEY, Publish("Describe"), comments.context(REQUESTER))
    claim = comments.context(RUNNER)
    first = service.execute(KEY, Claim(), claim)
    second = service.execute(KEY, Claim(), claim)
    assert first.applied and not first.replayed
    assert second.replayed
    assert second.events == first.events
    assert second.revision == first.revision == 3
    assert count(database, events_table) == 3
    assert count(database, attempts) == 1


def test_a_replayed_refusal_returns_the_original_refusal(database: Database) -> None:
    """A refused command's outcome is stored; its replay writes nothing and says the same."""
    service, comments = TicketService(database), Comments()
    refused_context = comments.context(RUNNER)
    first = service.execute(KEY, Claim(), refused_context)
    assert first.refusal is not None and first.refusal.code is RefusalCode.NOT_A_TICKET
    service.execute(KEY, Publish("Describe"), comments.context(REQUESTER))
    again = service.execute(KEY, Claim(), refused_context)
    assert again.replayed and again.refusal == first.refusal
    assert service.load(KEY).work is WorkState.OPEN  # type: ignore[union-attr]
    assert count(database, operations) == 2


def test_an_outdated_expected_revision_is_a_stored_refusal_replayed_for_the_same_command(
    database: Database,
) -> None:
    """A command made against an old revision is refused as stale, stored, and replayed as refused
    even once the ticket is at that revision: a fresh command (new operation id) applies."""
    service, comments = TicketService(database), Comments()
    service.execute(KEY, Publish("Describe"), comments.context(REQUESTER))
    context = comments.context(RUNNER)
    stale = service.execute(KEY, Claim(), context, expected_revision=1)
    assert stale.refusal is not None and stale.refusal.code is RefusalCode.STALE_REVISION
    assert not stale.refusal.transient and stale.answerable and stale.revision == 2
    assert "revision 2" in stale.refusal.reason
    assert service.load(KEY).revision == 2  # type: ignore[union-attr]
    again = service.execute(KEY, Claim(), context, expected_revision=2)
    assert again.replayed and again.refusal == stale.refusal
    retried = service.execute(KEY, Claim(), comments.context(RUNNER), expected_revision=2)
    assert retried.applied and retried.revision == 3


def test_the_snapshot_equals_the_fold_of_the_event_log(database: Database) -> None:
    """Replaying the stored events from nothing rebuilds the stored ticket exactly."""
    service, comments = TicketService(database), Comments()
    delivered_ticket(service, comments)
    observation = BranchObserved("agent/12-upload", "a" * 40, comments.clock())
    observed = ObservationContext("github", "delivery-1", comments.clock())
    assert service.execute(KEY, observation, observed).applied
    assert service.execute(KEY, Reopen("Wrong approach"), comments.context(REVIEWER)).applied

    rebuilt = Ticket(KEY)
    for recorded in service.history(KEY):
        rebuilt = apply(rebuilt, recorded.event)
    stored = service.load(KEY)
    assert stored is not None
    assert rebuilt.revision == stored.revision
    assert ticket_to_data(rebuilt) == ticket_to_data(stored)
    assert stored.rails.integration is IntegrationState.BRANCH_REPORTED
    assert stored.claimant is None


def test_an_observation_seen_twice_adds_no_event(database: Database) -> None:
    """The same repository fact delivered twice is recorded once."""
    service, comments = TicketService(database), Comments()
    service.execute(KEY, Publish("Describe"), comments.context(REQUESTER))
    observation = BranchObserved("agent/12-upload", "c" * 40, comments.clock())
    first = service.execute(KEY, observation, ObservationContext("github", "d-1", comments.clock()))
    second = service.execute(KEY, observation, ObservationContext("github", "d-2", comments.clock()))
    assert first.applied and not second.applied and second.refusal is None
    assert count(database, events_table) == 4  # created, published, observed, merge_state_changed


@pytest.mark.parametrize("table", ["ticket_events", "attempts", "delivery_records", "operations"])
def test_append_only_tables_refuse_updates_and_deletes(database: Database, table: str) -> None:
    """The database itself keeps the audit tables append-only."""
    service, comments = TicketService(database), Comments()
    delivered_ticket(service, comments)
    for statement in (f"UPDATE {table} SET operation_id = 'forged'", f"DELETE FROM {table}"):  # noqa: S608
        with pytest.raises(DBAPIError, match="append-only"), database.write() as connection:
            connection.execute(text(statement))
    assert count(database, events_table) == 4


def test_the_migrations_create_exactly_the_schema_the_models_describe(database: Database) -> None:
    """No drift between `app/tables.py` and the alembic migrations."""
    with database.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)
    assert differences == []


def test_migrating_twice_is_harmless(database: Database) -> None:
    """`railyard migrate` can run at every start."""
    database.migrate()
    service, comments = TicketService(database), Comments()
    assert service.execute(KEY, Publish("Describe"), comments.context(REQUESTER)).applied


def test_repository_names_are_case_insensitive(database: Database) -> None:
    """`Acme/Web#12` and `acme/web#12` are one ticket, as on GitHub."""
    service, comments = TicketService(database), Comments()
    service.execute(TicketKey("Acme/Web", 12), Publish("Describe"), comments.context(REQUESTER))
    assert service.load(TicketKey("ACME/web", 12)) is not None


def test_the_installation_that_brought_the_news_is_kept_with_the_ticket(database: Database) -> None:
    """The ticket's writes are shown through the installation of its latest news: given with a
    change (stored with the ticket's row when the change applies, or alone when it does not),
    and found again for a change that names none (the watchdog's)."""
    shown: list[tuple[int, int]] = []
    service = TicketService(
        database, surfaces=lambda installation, ticket: shown.append((installation, ticket.revision)) or []
    )
    comments = Comments()
    assert service.execute(
        KEY, Publish("Fix the flaky upload"), comments.context(REQUESTER), installation_id=7
    ).applied
    assert service.execute(
        KEY, Claim(branch="agent/12-upload"), comments.context(RUNNER), installation_id=9
    ).applied
    assert (
        service.execute(KEY, SendBack("Nothing to send back"), comments.context(REVIEWER)).refusal is not None
    )
    deliver = Deliver("Retries added", branch="agent/12-upload", commit="a" * 40)
    assert service.execute(KEY, deliver, comments.context(RUNNER)).applied  # names no installation
    with database.read() as connection:
        kept = connection.execute(text("SELECT installation_id FROM tickets")).scalar_one()
    assert kept == 9
    assert shown == [(7, 2), (9, 3), (9, 4)]


def test_an_operation_id_replayed_for_another_ticket_says_so(database: Database) -> None:
    """An operation id sent for #13 after it ran on #12 (an API key reused once its kept answer
    was pruned) replays #12's outcome marked `elsewhere`, so the API can refuse it instead of
    answering #13's request with #12; the same id on #12 is a plain replay; #13 is untouched."""
    service, comments = TicketService(database), Comments()
    other = TicketKey("acme/web", 13)
    service.execute(KEY, Publish("Describe"), comments.context(REQUESTER))
    service.execute(other, Publish("Describe"), comments.context(REQUESTER))
    claim = comments.context(RUNNER)
    first = service.execute(KEY, Claim(), claim)
    assert first.applied and not first.elsewhere
    reused = service.execute(other, Claim(), claim)
    assert reused.replayed and reused.elsewhere
    assert service.execute(KEY, Claim(), claim).elsewhere is False
    assert service.load(other).work is WorkState.OPEN  # type: ignore[union-attr]
