"""The `railyard` check of an outsider's fork PR whose body names tickets never passes: its merge
would count for them, yet no runner delivered it (a check that could pass would go stale when a
ticket changes, since it is written again only when the PR does). A PR edited to name a ticket
gets its check written again then."""

from __future__ import annotations

from support.world import REPO, World
from tests.e2e.test_links import FORK_HEAD, outsiders_fork_pr


def railyard_on(world: World, sha: str) -> list[str | None]:
    return [
        r.conclusion for r in world.github.check_runs.values() if r.head_sha == sha and r.name == "railyard"
    ]


async def fork_pr(world: World) -> None:
    world.github.add_pull(
        REPO, 99, body="Fixes #12", head_ref="patch-1", head_sha=FORK_HEAD, head_repo="mallory/web",
        user="mallory",
    )  # fmt: skip
    await world.send("pull_request", outsiders_fork_pr("opened"))
    await world.outbox_settled()


async def test_the_fork_prs_check_never_passes_even_once_the_named_ticket_is_accepted_at_its_head(
    world: World,
) -> None:
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await fork_pr(world)
    assert railyard_on(world, FORK_HEAD) == ["action_required"]
    await world.say("cody", f"/deliver commit={FORK_HEAD}\nmallory's fix.")
    await world.say("rita", "/accept")
    assert world.ticket().work.value == "accepted"
    assert world.ticket().review.commit == FORK_HEAD
    await world.outbox_settled()
    # Written again with the PR's next change: still action_required (no runner delivered it).
    await world.send("pull_request", outsiders_fork_pr("edited", updated="2026-11-30T10:30:00Z"))
    await world.outbox_settled()
    assert set(railyard_on(world, FORK_HEAD)) == {"action_required"}


async def test_the_fork_prs_check_does_not_pass_while_the_named_ticket_is_accepted(world: World) -> None:
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    world.github.add_pull(
        REPO, 99, body="Fixes #12", head_ref="patch-1", head_sha=FORK_HEAD, head_repo="mallory/web",
        user="mallory",
    )  # fmt: skip
    await world.say("cody", f"/deliver commit={FORK_HEAD}\nmallory's fix.")
    await world.say("rita", "/accept")
    await world.send("pull_request", outsiders_fork_pr("opened"))  # opened after the acceptance
    await world.outbox_settled()
    # Never success, so no later change of #12 (a reopen) can leave a passing check behind.
    assert railyard_on(world, FORK_HEAD) == ["action_required"]


async def test_a_fork_pr_edited_to_fix_the_ticket_gets_its_check_judged_again(world: World) -> None:
    """mallory opens her fork PR saying nothing (unlinked: success), then edits its body to say
    `Fixes #12`: the mention first recorded on #12 writes the PR's check again, not passing."""
    await world.say("rachel", "/publish")
    pull = world.github.add_pull(
        REPO, 99, body="A small fix", head_ref="patch-1", head_sha=FORK_HEAD, head_repo="mallory/web",
        user="mallory",
    )  # fmt: skip
    opened = outsiders_fork_pr("opened")
    opened["pull_request"]["body"] = "A small fix"
    await world.send("pull_request", opened)
    await world.outbox_settled()
    assert railyard_on(world, FORK_HEAD) == ["success"]
    pull.body = "A small fix\n\nFixes #12"
    await world.send("pull_request", outsiders_fork_pr("edited", updated="2026-11-30T10:30:00Z"))
    await world.outbox_settled()
    assert "#99 mentions this ticket" in world.status_comments()[0]
    assert railyard_on(world, FORK_HEAD) == ["action_required"]


async def test_an_outsiders_fork_pr_that_fixes_the_ticket_does_not_pass_the_railyard_check(
    world: World,
) -> None:
    """mallory (no role) opens a fork PR saying `Fixes #12`: its links only mention #12 and move
    no rail, but its merge would count for #12, so its `railyard` check judges #12 (not accepted:
    action_required), never success as a PR that links no ticket."""
    await world.say("rachel", "/publish")
    await fork_pr(world)
    assert railyard_on(world, FORK_HEAD) == ["action_required"]
