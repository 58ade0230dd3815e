"""A head GitHub does not know yet (its contents read answers 404 "No commit found for the
ref ..." just after a push) says nothing about its `.github/railyard.yml`: nothing is kept for
it, and the next render judges the file it proposes (SPEC *Configuration tools*)."""

from __future__ import annotations

from support.world import CONFIG, REPO, World, pull_request_payload
from tests.e2e.test_surfaces import verdict

CONFIG_PATH = ".github/railyard.yml"
BROKEN = CONFIG + "tickets:\n  lable: ready\n"
PROBLEM = "line 12: unknown key: tickets.lable (did you mean label?)"
OLD, NEW = "a" * 40, "b" * 40
BRANCH = "docs/tweak"  # links no ticket: the check is `checks.unlinked` (success)


async def test_a_head_github_did_not_know_at_first_is_judged_once_it_does(world: World) -> None:
    pull = world.github.add_pull(REPO, 61, head_ref=BRANCH, head_sha=OLD, files={CONFIG_PATH: BROKEN})
    # The webhook names NEW; GitHub's API does not know NEW yet (contents?ref=NEW: 404).
    opened = pull_request_payload("opened", 61, "Tidy the docs", head=NEW, ref=BRANCH)
    await world.send("pull_request", opened)
    assert verdict(world, NEW) == ("success", "no linked ticket")  # the glitch: whatever it says now

    pull.head_sha = NEW  # GitHub knows the commit now
    # Anything that renders the check on NEW again: here an `edited` event carrying a base change.
    edited = pull_request_payload(
        "edited", 61, "Tidy the docs", head=NEW, ref=BRANCH, updated="2026-11-30T10:05:00Z"
    )
    edited["changes"] = {"base": {"ref": {"from": "main"}, "sha": {"from": OLD}}}
    await world.send("pull_request", edited)

    assert verdict(world, NEW) == ("action_required", f"{CONFIG_PATH} in this PR: {PROBLEM}")


async def test_the_same_head_known_from_the_start_is_blocked(world: World) -> None:
    """The control: GitHub knows NEW at the first render: the check is blocked."""
    world.github.add_pull(REPO, 61, head_ref=BRANCH, head_sha=NEW, files={CONFIG_PATH: BROKEN})
    opened = pull_request_payload("opened", 61, "Tidy the docs", head=NEW, ref=BRANCH)
    await world.send("pull_request", opened)
    assert verdict(world, NEW) == ("action_required", f"{CONFIG_PATH} in this PR: {PROBLEM}")
