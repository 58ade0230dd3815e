"""Repository identity in the database, on SQLite and PostgreSQL: migration 0015 on existing data
(ids backfilled from the stored payloads), and `repositories.place` moving records by id."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, insert, select, text

from app.store.database import Database, alembic_config
from app.store.effects import effects_table
from app.store.installations import installation_repositories as listings
from app.store.installations import set_repositories
from app.store.repositories import holds, place, place_all, repositories
from app.store.signs import watched_claims
from app.store.tables import HeldObservationRow, PullRequestRow, TicketRow, WebhookDeliveryRow, table
from app.store.tickets import TicketService
from policies.commands import Claim, Publish
from policies.model import TicketKey
from support.databases import migrated_back_to
from tests.fakes import REQUESTER, RUNNER, Comments

tickets, deliveries, pulls = table(TicketRow), table(WebhookDeliveryRow), table(PullRequestRow)
held = table(HeldObservationRow)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def a_ticket(repository: str, number: int, created: datetime = T0) -> dict[str, Any]:
    """A tickets row as 0013 stored it (no repository id)."""
    return {
        "repository": repository, "number": number, "revision": 1, "work": "open",
        "integration": "unreported", "deployment": "not_deployed", "snapshot": {},
        "created_at": created, "updated_at": created, "installation_id": 7,
    }  # fmt: skip


def a_delivery(guid: str, repository: str, repository_id: int) -> dict[str, Any]:
    """A stored webhook delivery whose payload names the repository and its id."""
    payload = json.dumps({"repository": {"id": repository_id, "full_name": repository}})
    return {
        "delivery_id": guid, "event": "issues", "action": "opened", "installation_id": 7,
        "repository": repository, "ordering_key": None, "status": "done", "payload": payload,
        "payload_bytes": len(payload), "received_at": 1.0, "attempts": 1, "next_attempt_at": 1.0,
    }  # fmt: skip


@pytest.fixture
def before_0015(database: Database) -> Iterator[Database]:
    """The database at 0014, before the identity migration, brought back to head afterwards."""
    with migrated_back_to(database, "0014"):
        yield database


def test_the_migration_takes_each_repositorys_id_from_the_stored_payloads_that_agree(
    before_0015: Database,
) -> None:
    """acme/web's payloads all say id 55: its tickets get it. acme/reused's payloads name two ids
    (the name was reused before): no id. acme/quiet has no payload left: no id, shown to nobody."""
    with before_0015.write() as connection:
        connection.execute(insert(tickets), [a_ticket("acme/web", 1), a_ticket("acme/web", 2)])
        connection.execute(insert(tickets), [a_ticket("acme/reused", 1), a_ticket("acme/quiet", 1)])
        connection.execute(
            insert(pulls).values(
                repository="acme/web", number=9, url="u", open=True, merged=False, linked=[1], updated_at=1.0
            )
        )
        connection.execute(
            insert(deliveries),
            [
                a_delivery("d1", "acme/web", 55),
                a_delivery("d2", "ACME/Web", 55),
                a_delivery("d3", "acme/reused", 60),
                a_delivery("d4", "acme/reused", 61),
            ],
        )
    command.upgrade(alembic_config(before_0015.url), "head")
    with before_0015.read() as connection:
        ids = dict(connection.execute(select(tickets.c.repository, tickets.c.repository_id)).all())
        registry = dict(connection.execute(select(repositories.c.full_name, repositories.c.id)).all())
        kept_pull = connection.execute(select(pulls.c.number, pulls.c.linked, pulls.c.author_has_role)).one()
    assert ids == {"acme/web": 55, "acme/reused": None, "acme/quiet": None}
    assert tuple(kept_pull) == (9, [1], None)  # the PR kept, its author not asked yet
    assert registry == {"acme/web": 55}
    assert holds(before_0015, "acme/web", 55) and not holds(before_0015, "acme/quiet", 70)


def test_a_first_webhook_adopts_the_tickets_from_before_ids_unless_older_than_the_repository(
    database: Database,
) -> None:
    """Tickets stored without an id become the repository's at its first webhook; one created
    before the repository was (so another repository's) goes where no name reaches it."""
    with database.write() as connection:
        connection.execute(
            insert(tickets),
            [a_ticket("acme/quiet", 1, T0), a_ticket("acme/quiet", 2, datetime(2026, 6, 1, tzinfo=UTC))],
        )
        place(connection, 70, "acme/quiet", created_at=datetime(2026, 3, 1, tzinfo=UTC).timestamp(), now=2.0)
    with database.read() as connection:
        rows = connection.execute(
            select(tickets.c.repository, tickets.c.number, tickets.c.repository_id)
        ).all()
    assert sorted((r.repository, r.number, r.repository_id) for r in rows) == [
        ("acme/quiet", 2, 70),
        (f"acme/quiet@legacy-{1}", 1, None),
    ]


def test_a_rename_moves_every_record_and_a_reuse_retires_the_old_ones_and_cancels_their_writes(
    database: Database,
) -> None:
    """acme/vault (id 1) renamed acme/archive takes its tickets, PRs and status-comment key along;
    a new acme/vault (id 2) then finds nothing, and the old repository's pending writes never leave."""
    with database.write() as connection:
        place(connection, 1, "acme/vault", None, 1.0)
        connection.execute(insert(tickets), [{**a_ticket("acme/vault", 7), "repository_id": 1}])
        connection.execute(
            insert(pulls),
            [{"repository": "acme/vault", "number": 9, "url": "u", "open": True, "merged": False,
              "linked": [7], "updated_at": 1.0}],
        )  # fmt: skip
        connection.execute(
            insert(effects_table),
            [{"dedupe_key": "status:acme/vault#7", "installation_id": 7, "repository": "acme/vault",
              "kind": "status_comment", "payload": {}, "status": "pending", "next_attempt_at": 1.0,
              "created_at": 1.0, "updated_at": 1.0}],
        )  # fmt: skip
        place(connection, 1, "acme/archive", None, 2.0)
    with database.read() as connection:
        assert connection.execute(select(tickets.c.repository)).scalars().all() == ["acme/archive"]
        assert connection.execute(select(pulls.c.repository)).scalars().all() == ["acme/archive"]
        effect = connection.execute(select(effects_table.c.dedupe_key, effects_table.c.status)).one()
    assert tuple(effect) == ("status:acme/archive#7", "pending")
    with database.write() as connection:
        place(connection, 2, "acme/archive", None, 3.0)  # another repository takes the name
    with database.read() as connection:
        assert connection.execute(select(tickets.c.repository)).scalars().all() == ["acme/archive@1"]
        effect = connection.execute(select(effects_table.c.status)).one()
    assert effect.status == "cancelled"
    assert holds(database, "acme/archive", 2) and not holds(database, "acme/archive", 1)


def test_the_watchdog_watches_no_claim_of_a_repository_that_lost_its_name(database: Database) -> None:
    """A claimed ticket of the old acme/vault, retired when a new acme/vault appeared, gets no
    overdue notices: they would go to a repository that is not its own."""
    service = TicketService(database)
    key, comments = TicketKey("acme/vault", 12), Comments()
    with database.write() as connection:
        place(connection, 1, "acme/vault", None, 1.0)
    service.execute(key, Publish("Rotate"), comments.context(REQUESTER))
    service.execute(key, Claim(), comments.context(RUNNER))
    with database.read() as connection:
        assert [w.ticket.key.number for w in watched_claims(connection)] == [12]
    with database.write() as connection:
        place(connection, 2, "acme/vault", None, 2.0)
    with database.read() as connection:
        assert watched_claims(connection) == []


def test_two_first_deliveries_of_a_repository_at_once_place_it_once(database: Database) -> None:
    """PostgreSQL: two deliveries of a repository railyard has not seen, placed at the same time
    (both read "unknown" first): the second waits for the first and finds the id placed, rather
    than failing on the duplicate row (which dropped its delivery: a command lost). SQLite's
    writers queue (`BEGIN IMMEDIATE`), so there the two cannot overlap."""
    if database.engine.dialect.name == "sqlite":
        pytest.skip("SQLite serializes write transactions")
    first_placed, release, failures = threading.Event(), threading.Event(), []

    def first() -> None:
        with database.write() as connection:
            place(connection, 41, "acme/race", None, 1.0)
            first_placed.set()
            release.wait(10)

    def second() -> None:
        try:
            with database.write() as connection:
                place(connection, 41, "acme/race", None, 2.0)
        except Exception as error:  # the failure is what the test looks for
            failures.append(error)

    one = threading.Thread(target=first)
    one.start()
    assert first_placed.wait(10)
    two = threading.Thread(target=second)
    two.start()
    _until_a_backend_waits_for_a_lock(database)
    release.set()
    one.join(10)
    two.join(10)
    assert failures == []
    with database.read() as connection:
        assert [
            tuple(row) for row in connection.execute(select(repositories.c.id, repositories.c.full_name))
        ] == [(41, "acme/race")]


def _until_a_backend_waits_for_a_lock(database: Database) -> None:
    """Wait until some session is blocked on a lock (the second insert behind the first)."""
    query = text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
    for _ in range(1000):
        with database.engine.connect() as connection:
            if connection.execute(query).scalar_one() > 0:
                return
        threading.Event().wait(0.01)
    raise AssertionError("the second placement never waited for the first")


def keep_records(connection: Connection, name: str, repository_id: int | None) -> None:
    """Ticket #12 (of `repository_id`, None: from before ids), PR #40 linking it, an observation
    held on a commit and the ticket's pending status comment, all kept under `name`."""
    connection.execute(insert(tickets).values(**a_ticket(name, 12), repository_id=repository_id))
    connection.execute(
        insert(pulls).values(
            repository=name, number=40, url="u", open=True, merged=False, linked=[12], updated_at=1.0
        )
    )
    connection.execute(
        insert(held).values(repository=name, subject="check:a", fingerprint="f", data={}, held_at=1.0)
    )
    connection.execute(
        insert(effects_table).values(
            dedupe_key=f"status:{name}#12", installation_id=7, repository=name, kind="status_comment",
            payload={}, status="pending", next_attempt_at=1.0, created_at=1.0, updated_at=1.0,
        )
    )  # fmt: skip


def test_a_rename_into_a_name_whose_records_no_repository_holds_retires_them_and_moves_every_record(
    database: Database,
) -> None:
    """Installation 7 listed acme/web and acme/site; acme/site was renamed away without a webhook
    of its own, leaving records from before ids under the name. acme/web (id 1) renamed acme/site
    takes the name: its records move there whole (no unique key meets the old ones), the old ones
    go where no name reaches them, and their pending write is never sent."""
    with database.write() as connection:
        set_repositories(connection, 7, ["acme/web", "acme/site"], True, 1.0)
        place(connection, 1, "acme/web", None, 1.0)
        keep_records(connection, "acme/web", 1)
        keep_records(connection, "acme/site", None)
        place(connection, 1, "acme/site", None, 2.0)
    with database.read() as connection:
        ours = connection.execute(select(tickets.c.repository).where(tickets.c.repository_id == 1)).scalars()
        assert list(ours) == ["acme/site"]
        for keyed in (tickets, pulls, held, listings):
            names = sorted(connection.execute(select(keyed.c.repository)).scalars())
            assert names[0] == "acme/site" and names[1].startswith("acme/site@unheld-"), names
        effects = dict(connection.execute(select(effects_table.c.dedupe_key, effects_table.c.status)).all())
    assert effects.pop("status:acme/site#12") == "pending" and list(effects.values()) == ["cancelled"]
    assert holds(database, "acme/site", 1)


def test_a_rename_keeps_a_pull_request_from_the_repositorys_own_branch_its_own(database: Database) -> None:
    """acme/vault's PR #9 is from its own branch (its head spelled as GitHub sent it, any case)
    and acme/docs's PR #3 from acme/vault's: once acme/vault is acme/archive both heads say so,
    so #9 still links tickets by branch; a fork's head (acme/other) stays as it was."""
    heads = {
        ("acme/vault", 9): "ACME/Vault",
        ("acme/docs", 3): "acme/vault",
        ("acme/vault", 10): "acme/other",
    }
    with database.write() as connection:
        place(connection, 1, "acme/vault", None, 1.0)
        for (name, number), head in heads.items():
            connection.execute(
                insert(pulls).values(
                    repository=name, number=number, url="u", open=True, merged=False, linked=[7],
                    updated_at=1.0, head_repository=head,
                )
            )  # fmt: skip
        place(connection, 1, "acme/archive", None, 2.0)
    with database.read() as connection:
        rows = connection.execute(select(pulls.c.repository, pulls.c.number, pulls.c.head_repository)).all()
    assert sorted(tuple(row) for row in rows) == [
        ("acme/archive", 9, "acme/archive"),
        ("acme/archive", 10, "acme/other"),
        ("acme/docs", 3, "acme/archive"),
    ]


def test_a_transfer_to_an_owner_with_another_installation_moves_the_tickets_and_writes_to_it(
    database: Database,
) -> None:
    """acme/vault (id 1, installation 7) is transferred to bravo, whose installation is 9: its
    tickets (what the watchdog writes with) and its effects, pending or a done status comment
    the next change re-arms, go through installation 9; another repository's stay on 7."""
    with database.write() as connection:
        place(connection, 1, "acme/vault", None, 1.0)
        place(connection, 2, "acme/other", None, 1.0)
        for name, repository_id in (("acme/vault", 1), ("acme/other", 2)):
            keep_records(connection, name, repository_id)
        connection.execute(
            insert(effects_table).values(
                dedupe_key="check:acme/vault:40:a", installation_id=7, repository="acme/vault",
                kind="check_run", payload={}, status="done", next_attempt_at=1.0, created_at=1.0,
                updated_at=1.0,
            )
        )  # fmt: skip
        place(connection, 1, "bravo/vault", None, 2.0, installation_id=9)
    with database.read() as connection:
        ticket_rows = connection.execute(select(tickets.c.repository, tickets.c.installation_id)).all()
        effects = connection.execute(
            select(effects_table.c.dedupe_key, effects_table.c.installation_id)
        ).all()
    assert sorted(tuple(row) for row in ticket_rows) == [("acme/other", 7), ("bravo/vault", 9)]
    assert sorted(tuple(row) for row in effects) == [
        ("check:bravo/vault:40:a", 9),
        ("status:acme/other#12", 7),
        ("status:bravo/vault#12", 9),
    ]


def test_a_swap_placed_together_then_a_transfer_keeps_every_write_and_moves_the_installation(
    database: Database,
) -> None:
    """What the webhook guard does for a transfer that took a name another id held (acme/vault,
    id 2, which took 1's old name bravo/vault meanwhile): both placed together (`place_all`),
    then 1 placed with its new installation 9: nothing retired, no write cancelled, and 1's
    tickets and writes go through installation 9 although `place_all` had placed it already."""
    with database.write() as connection:
        place(connection, 1, "bravo/vault", None, 1.0)
        place(connection, 2, "acme/vault", None, 1.0)
        for name, repository_id in (("bravo/vault", 1), ("acme/vault", 2)):
            keep_records(connection, name, repository_id)
        place_all(connection, {2: "bravo/vault", 1: "acme/vault"}, 2.0)
        place(connection, 1, "acme/vault", None, 2.0, installation_id=9)
    with database.read() as connection:
        names = dict(connection.execute(select(repositories.c.id, repositories.c.full_name)).all())
        ticket_rows = connection.execute(select(tickets.c.repository, tickets.c.installation_id)).all()
        effects = connection.execute(
            select(effects_table.c.dedupe_key, effects_table.c.status, effects_table.c.installation_id)
        ).all()
    assert names == {1: "acme/vault", 2: "bravo/vault"}
    assert sorted(tuple(row) for row in ticket_rows) == [("acme/vault", 9), ("bravo/vault", 7)]
    assert sorted(tuple(row) for row in effects) == [
        ("status:acme/vault#12", "pending", 9),
        ("status:bravo/vault#12", "pending", 7),
    ]
