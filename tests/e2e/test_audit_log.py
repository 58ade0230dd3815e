"""The audit chain through the real server: signed webhooks write chained events, and
`railyard audit verify` / `export` read them from the server's database."""

from __future__ import annotations

import csv
import io

from sqlalchemy import func, select, text

from app.cli import main
from app.settings import Settings
from app.store.tickets import events_table
from support.world import REPO, World


def cli(world: World, *argv: str) -> tuple[int, str]:
    """`railyard ARGV` against the server's database: exit status and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), settings=Settings(DATABASE_URL=world.database.url), out=out, err=err)
    return code, out.getvalue() + err.getvalue()


async def test_audit_verify_holds_then_names_the_ticket_whose_event_row_was_edited_with_sql(
    world: World,
) -> None:
    """Published, claimed, delivered: verify exits 0; one event's actor rewritten in the database
    (the append-only trigger dropped first): exit 1 naming #12 and the revision; the CSV export
    has one row per event."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")
    with world.database.read() as connection:
        events = int(connection.execute(select(func.count()).select_from(events_table)).scalar_one())
        claimed = connection.execute(
            select(events_table.c.revision).where(events_table.c.type == "claimed")
        ).scalar_one()
    code, said = cli(world, "audit", "verify")
    assert (code, said) == (0, f"railyard: {events} events of 1 ticket checked: every chain holds.\n")

    code, exported = cli(world, "audit", "export", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert code == 0 and len(rows) == events
    assert [row["revision"] for row in rows] == [str(r) for r in range(1, events + 1)]
    assert {row["ticket"] for row in rows} == {f"{REPO}#12"}

    with world.database.write() as connection:
        connection.execute(text("DROP TRIGGER ticket_events_no_update"))
        connection.execute(
            text("UPDATE ticket_events SET actor = 'mallory' WHERE revision = :r"), {"r": claimed}
        )
    code, said = cli(world, "audit", "verify")
    assert code == 1
    assert said.startswith(f"railyard: {REPO}#12: the audit chain breaks at revision {claimed} ")
