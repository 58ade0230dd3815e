"""Review of 0091492: a one-off 404 on the head's read of `.github/railyard.yml` is kept as
"the head has no file" for that head, so a PR proposing a broken configuration keeps a
passing `railyard` check at every later render of that head (SPEC *Configuration tools*).

GitHub answers `GET contents/...?ref=SHA` with 404 "No commit found for the ref" while it does
not know the commit yet (the stand-in answers the same for an unknown ref), so a render that
comes right after a push can meet a 404 that says nothing about the file.
`ProposedConfigs._head_file` (app/github/proposed_config.py:86, `_file_at` turning any 404
into None at :98) stores that None for the head; `problems` then answers () for ever for it.
This is the head-read twin of the pull-read 404 fixed in 0091492."""

from __future__ import annotations

import pytest

from support.world import CONFIG, REPO, World, pull_request_payload
from tests.e2e.test_surfaces import verdict

CONFIG_PATH = ".github/railyard.yml"
BROKEN = CONFIG + "tickets:\n  lable: ready\n"
PROBLEM = "line 12: unknown key: tickets.lable (did you mean label?)"
OLD, NEW = "a" * 40, "b" * 40
BRANCH = "docs/tweak"  # links no ticket: the check is `checks.unlinked` (success)


@pytest.mark.xfail(
    strict=True,
    reason="a 404 on the head's file read (GitHub not knowing the commit yet) is kept as 'no file' "
    "for that head: the broken proposed config passes at every later render",
)
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


async def test_control_the_same_head_known_from_the_start_is_blocked(world: World) -> None:
    """The control: GitHub knows NEW at the first render: the check is blocked."""
    world.github.add_pull(REPO, 61, head_ref=BRANCH, head_sha=NEW, files={CONFIG_PATH: BROKEN})
    opened = pull_request_payload("opened", 61, "Tidy the docs", head=NEW, ref=BRANCH)
    await world.send("pull_request", opened)
    assert verdict(world, NEW) == ("action_required", f"{CONFIG_PATH} in this PR: {PROBLEM}")
