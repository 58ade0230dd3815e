"""A transferred issue, through the real server: GitHub answers 301 at its old address; reads
follow it, writes fail once with the reason instead of failing the delivery or retrying."""

from __future__ import annotations

from sqlalchemy import select

from app.store.effects import effects_table
from app.store.queue_admin import list_deliveries
from support.world import REPO, World


def effects(world: World, kind: str) -> list[tuple[str, str | None]]:
    """(status, last_error) of each outbox effect of a kind."""
    with world.database.read() as connection:
        rows = connection.execute(
            select(effects_table.c.status, effects_table.c.last_error).where(effects_table.c.kind == kind)
        )
        return [(row.status, row.last_error) for row in rows]


async def test_a_command_on_an_issue_transferred_away_reads_it_at_its_new_address(world: World) -> None:
    """/publish on #13 after it moved to acme/api#7: railyard follows GitHub's 301 to read the
    issue, the delivery is processed, and the status comment (a write at the old address)
    fails once, saying where the issue went, instead of being retried."""
    world.github.repositories[REPO].issues[13].body = "Second ticket"
    world.github.add_repository("acme/api")
    world.github.transfer_issue(REPO, 13, "acme/api", 7)
    await world.say("rachel", "/publish", number=13)
    assert [d["status"] for d in list_deliveries(world.database, limit=10)] == ["done"]
    assert world.ticket(13).work.value == "open"
    moved_to = f"/repositories/{world.github.repositories['acme/api'].id}/issues/7"
    [(status, error)] = effects(world, "status_comment")
    assert status == "failed" and error is not None and moved_to in error and "transferred" in error
    follows = world.github.calls_to("GET", moved_to)
    assert follows and all(call.status == 200 for call in follows)
