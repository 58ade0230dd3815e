"""At most one visible effect per intended effect across timeouts (SPEC *Durability and
idempotency*), where an ambiguous create meets another feature: a status comment deleted by a
person and written again, a repository renamed while the create's outcome is unknown."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from sqlalchemy import select

from app.store.effects import effect_counts, effects_table, retry_waiting_effects
from github_standin import Fault
from github_standin.events import repository_moved
from support.servers import drained
from support.world import REPO, World

COMMENTS = rf"/repos/{REPO}/issues/12/comments$"
COMMENTS_ANY_NAME = r"/issues/12/comments$"
TOOLS = "acme/tools"


async def test_a_deleted_status_comment_written_again_through_a_502_appears_once(world: World) -> None:
    """rachel publishes #12 (one status comment); someone deletes it; cody claims, and GitHub
    creates the new status comment but answers 502. After the retry: one status comment."""
    await world.say("rachel", "/publish")
    assert len(world.status_comments()) == 1
    shown = next(c for c in world.github.comments.values() if c.body in world.status_comments())
    del world.github.comments[shown.id]  # a maintainer deleted the status comment
    assert world.status_comments() == []
    world.github.inject("POST", COMMENTS, Fault(status=502, apply_then_fail=True))
    await world.say("cody", "/claim")
    await world.settle()
    assert effect_counts(world.database).get("failed") is None
    assert len(world.status_comments()) == 1, world.status_comments()


async def test_a_status_comment_whose_create_was_ambiguous_appears_once_after_a_rename(world: World) -> None:
    """rachel publishes #12; GitHub creates the status comment but answers 502, and then cannot
    list the issue's comments for a while (500). Meanwhile acme/web is renamed acme/tools and its
    `renamed` webhook is processed. Once GitHub answers again: one status comment."""
    world.github.inject("POST", COMMENTS_ANY_NAME, Fault(status=502, apply_then_fail=True))
    world.github.inject("GET", COMMENTS_ANY_NAME, *(Fault(status=500) for _ in range(1000)))
    payload = world.write("rachel", "/publish")
    assert (await world.server.deliver("issue_comment", json.dumps(payload).encode())).status == 202
    await drained(world.database)
    for _ in range(400):  # GitHub created it; railyard does not know
        if world_status_comments(world) and the_status_effect(world)["ambiguous"]:
            break
        await asyncio.sleep(0.025)
    assert len(world_status_comments(world)) == 1

    moved = world.github.rename_repository(REPO, TOOLS)
    guid, renamed = repository_moved(world.github, "https://api.github.com", moved, REPO, 7, "max")
    assert (await world.server.deliver("repository", json.dumps(renamed).encode(), guid)).status == 202
    await drained(world.database)
    assert the_status_effect(world)["dedupe_key"] == f"status:{TOOLS}#12"

    world.github.faults.clear()  # GitHub answers again
    retry_waiting_effects(world.database, time.time() + 1)
    await world.outbox_settled()
    assert effect_counts(world.database).get("failed") is None
    assert len(world_status_comments(world)) == 1, world_status_comments(world)


def world_status_comments(world: World) -> list[str]:
    """The app's status comments on #12, whatever the repository is called now."""
    return [
        c.body
        for c in world.github.comments.values()
        if c.issue_number == 12 and c.app_id and "**Work:" in c.body
    ]


def the_status_effect(world: World) -> dict[str, Any]:
    with world.database.read() as connection:
        rows = connection.execute(select(effects_table).where(effects_table.c.kind == "status_comment"))
        return dict(rows.mappings().one())


async def test_an_assignment_retried_after_the_claim_was_given_up_leaves_nobody_assigned(
    world: World,
) -> None:
    """cody claims #12, but GitHub answers 502 to the assignment (twice). cody gives the claim up
    with `/reopen`; the unassignment goes through at once. Once every write settled, GitHub must
    not show cody assigned to a ticket nobody holds."""
    await world.say("rachel", "/publish")
    assignees = rf"/repos/{REPO}/issues/12/assignees$"
    world.github.inject("POST", assignees, Fault(status=502), Fault(status=502))
    for body in ("/claim", "/reopen giving this up"):
        payload = world.write("cody", body)
        assert (await world.server.deliver("issue_comment", json.dumps(payload).encode())).status == 202
        await drained(world.database)
    ticket = world.ticket()
    assert ticket.work is not None and ticket.work.value == "open"
    await world.outbox_settled()
    assert effect_counts(world.database).get("failed") is None
    assert "cody" not in world.github.repositories[REPO].issues[12].assignees
