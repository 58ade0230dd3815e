"""At most one visible effect per intended effect across timeouts (SPEC *Durability and
idempotency*), where an ambiguous create meets another feature: a status comment deleted by a
person and written again, a repository renamed while the create's outcome is unknown."""

from __future__ import annotations

import pytest

from app.store.effects import effect_counts
from github_standin import Fault
from support.world import REPO, World

COMMENTS = rf"/repos/{REPO}/issues/12/comments$"


@pytest.mark.xfail(
    strict=True,
    reason="outbox: after a deleted status comment is re-created and the create's answer is lost, "
    "the retry edits the stale comment id again (404) and creates a second status comment without "
    "looking for the one GitHub already made (app/runtime/outbox.py _comment_once)",
)
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
