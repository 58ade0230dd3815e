"""What `railyard audit verify` names beyond an edited digest: last events deleted whose folds
changed no field, an event's data edited into a non-object, and a time spelled another way."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from app.store import audit_log as audit_store
from app.store.database import Database
from app.store.tickets import TicketService, delivery_cost_since
from policies.commands import Claim, Deliver, Publish
from policies.evidence import evidence_from
from policies.notices import DeploymentGated, IssueStateObserved, NoticeContext
from tests.fakes import REQUESTER, RUNNER, START, Comments
from tests.integration.test_audit import KEY, lifecycle, run, tampering, ticket_id

SHA = "c" * 40


def delete_last_events(database: Database, count: int) -> None:
    """The ticket's last `count` events deleted and its row's revision lowered to match, nothing
    else touched (no digest computed, the snapshot and the state columns left as they are)."""
    with tampering(database) as connection:
        revision = connection.execute(
            text("SELECT revision FROM tickets WHERE id = :id"), {"id": ticket_id(database, KEY)}
        ).scalar_one()
        connection.execute(
            text("DELETE FROM ticket_events WHERE ticket_id = :id AND revision > :keep"),
            {"id": ticket_id(database, KEY), "keep": revision - count},
        )
        connection.execute(
            text("UPDATE tickets SET revision = :keep WHERE id = :id"),
            {"id": ticket_id(database, KEY), "keep": revision - count},
        )


def test_a_deleted_deployment_gate_decision_with_the_revision_lowered_is_named(database: Database) -> None:
    """acme/web#12 accepted, then the deployment gate's rejection recorded on it (revision 6).
    Deleting that record and lowering `tickets.revision` to 5 (no digest recomputed, snapshot
    untouched) is the case docs/audit.md says verify's replay names; it does not."""
    service, comments = TicketService(database), Comments()
    lifecycle(service, comments, KEY)
    gated = DeploymentGated("production", SHA, "rejected", "not_accepted", deployment_id=7, run_id=8)
    context = NoticeContext("railyard", "gate:acme/web#12:production:1", START + timedelta(hours=1))
    assert service.execute(KEY, gated, context).applied
    assert audit_store.verify(database) == audit_store.Verified(events=6, tickets=1)
    delete_last_events(database, 1)
    found = audit_store.verify(database)
    assert found.broken_ticket == KEY, found
    status, out, _ = run(database, "audit", "verify")
    assert status == 1 and "acme/web#12" in out


def test_deleted_last_events_that_cancel_out_are_named(database: Database) -> None:
    """The issue closed and reopened after the acceptance (revisions 6 and 7); both rows deleted
    and the row's revision lowered to 5: the log lost two events and verify says every chain holds."""
    service, comments = TicketService(database), Comments()
    lifecycle(service, comments, KEY)
    close = NoticeContext("olivia", "issue-closed:d-1", START + timedelta(hours=1), actor_id=77)
    reopen = NoticeContext("olivia", "issue-reopened:d-2", START + timedelta(hours=2), actor_id=77)
    assert service.execute(KEY, IssueStateObserved(closed=True), close).applied
    assert service.execute(KEY, IssueStateObserved(closed=False), reopen).applied
    assert audit_store.verify(database) == audit_store.Verified(events=7, tickets=1)
    delete_last_events(database, 2)
    assert audit_store.verify(database).broken_ticket == KEY


def test_an_event_whose_data_was_edited_to_a_list_is_named_not_a_crash(database: Database) -> None:
    """The acceptance (revision 5) of acme/web#12 has its `data` replaced by `[]` (no digest
    recomputed): its chain breaks at 5, and verify must say so, exit 1 naming the row."""
    service, comments = TicketService(database), Comments()
    lifecycle(service, comments, KEY)
    with tampering(database) as connection:
        connection.execute(
            text("UPDATE ticket_events SET data = '[]' WHERE ticket_id = :id AND revision = 5"),
            {"id": ticket_id(database, KEY)},
        )
    status, out, err = run(database, "audit", "verify")
    assert "unexpected" not in err, err
    assert status == 1 and "acme/web#12: the audit chain breaks at revision 5" in out, (status, out, err)


def test_an_event_time_rewritten_in_another_offset_is_named(database: Database) -> None:
    """acme/web#12's delivery (revision 4, $5 reported) at 2026-11-30 09:00:03Z has its stored `at`
    rewritten as `2026-11-29T19:00:03-14:00`: the same instant, so no digest changes and a kept
    export shows the same time, yet `audit export --since 2026-11-30` and the runner's cost since
    then no longer see it. verify must name the row."""
    if database.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's timestamptz stores the instant, not the text")
    service, comments = TicketService(database), Comments()
    assert service.execute(KEY, Publish("Fix the upload"), comments.context(REQUESTER)).applied
    assert service.execute(KEY, Claim(branch="agent/12"), comments.context(RUNNER)).applied
    deliver = Deliver("Done", branch="agent/12", commit="a" * 40, evidence=evidence_from(cost="5"))
    assert service.execute(KEY, deliver, comments.context(RUNNER)).applied
    since = datetime(2026, 11, 30, tzinfo=UTC)
    with database.read() as connection:
        at = connection.execute(text("SELECT at FROM ticket_events WHERE revision = 4")).scalar_one()
        assert at == "2026-11-30 09:00:03.000000"
        assert delivery_cost_since(connection, "acme/web", None, since) == "5"  # the fakes store no actor_id
    with tampering(database) as connection:
        connection.execute(
            text("UPDATE ticket_events SET at = '2026-11-29T19:00:03.000000-14:00' WHERE revision = 4")
        )
    _, exported, _ = run(database, "audit", "export", "--since", "2026-11-30")
    assert '"revision":4' not in exported  # the delivery left the nightly export's window
    with database.read() as connection:  # and the runner's reported cost since then
        assert delivery_cost_since(connection, "acme/web", None, since) == "0"
    found = audit_store.verify(database)
    assert (found.broken_ticket, found.broken_revision) == (KEY, 4), found


def delivery_time_rewritten_as_no_time(database: Database) -> None:
    """acme/web#12's lifecycle, then its delivery's (revision 4) stored `at` rewritten as text that
    is no time (`2026-11-31 ...`, a day November lacks); SQLite only (PostgreSQL stores instants)."""
    if database.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's timestamptz stores only instants")
    lifecycle(TicketService(database), Comments(), KEY)
    with tampering(database) as connection:
        connection.execute(
            text("UPDATE ticket_events SET at = :at WHERE ticket_id = :id AND revision = 4"),
            {"at": "2026-11-31 09:00:03.000000", "id": ticket_id(database, KEY)},
        )


def test_an_event_time_rewritten_as_no_time_at_all_is_named_not_a_crash(database: Database) -> None:
    """acme/web#12's delivery (revision 4) has its stored `at` rewritten as text that is not a time
    (`2026-11-31 09:00:03.000000`, a day November lacks). docs/audit.md: a time not spelled as
    railyard writes it is named a break at its revision, and verify never crashes on edited data;
    here verify stops with "unexpected ValueError", naming no ticket, and the nightly export that
    keeps the chain heads elsewhere stops too."""
    delivery_time_rewritten_as_no_time(database)
    status, out, err = run(database, "audit", "verify")
    assert "unexpected" not in err, err
    assert status == 1 and "acme/web#12: the audit chain breaks at revision 4" in out, (status, out, err)


def test_an_export_writes_a_time_that_is_no_time_as_stored(database: Database) -> None:
    """The same edited row (`at` no time at all): `audit export` still writes every event, that
    one's time as it is stored (its digest then fails against it, as verify says), never a crash."""
    delivery_time_rewritten_as_no_time(database)
    status, out, err = run(database, "audit", "export")
    assert status == 0 and "unexpected" not in err, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["revision"] for row in rows] == [1, 2, 3, 4, 5]
    assert rows[3]["at"] == "2026-11-31 09:00:03.000000"
    assert rows[2]["at"].endswith("Z")
