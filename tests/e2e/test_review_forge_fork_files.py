"""Review (forge/jam): what an outsider's fork PR costs the installation per push.

mallory has no role in acme/web. She opens a PR from her fork that touches 3,000 files, none of
them `.github/railyard.yml`, and pushes to it again and again. Every push is a new head, so the
`railyard` check is rendered again, and the check's reader of a proposed configuration
(`app/github/proposed_config.py` `ProposedConfigs._changes_config`) pages through the whole
`pulls/{n}/files` listing with the installation token: 30 calls per push, chosen by the
outsider (SPEC *Answers that cannot be forged or jammed*: an account without a role can cause at
most one installation-token call per request; docs/durability.md: editing an outsider's PR
cannot spend the installation's budget).
"""

from __future__ import annotations

from support.world import REPO, World
from tests.e2e.test_links import FORK_HEAD, outsiders_fork_pr

PUSHES = 3


async def test_an_outsiders_pushes_to_a_wide_fork_pr_cost_few_installation_calls(world: World) -> None:
    await world.say("rachel", "/publish")
    pull = world.github.add_pull(
        REPO, 99, body="A small fix", head_ref="patch-1", head_sha=FORK_HEAD, head_repo="mallory/web",
        user="mallory",
    )  # fmt: skip
    pull.files.update({f"src/generated/{n:04}.txt": "x\n" for n in range(3000)})
    opened = outsiders_fork_pr("opened")
    opened["pull_request"]["body"] = "A small fix"
    await world.send("pull_request", opened)
    await world.outbox_settled()
    before = len(world.github.calls_to("GET", f"/repos/{REPO}/pulls/99/files"))

    for push in range(PUSHES):
        head = f"{push + 1:x}" * 40
        pull.head_sha = head
        payload = outsiders_fork_pr("synchronize", updated=f"2026-11-30T10:{push + 10}:00Z")
        payload["pull_request"]["body"] = "A small fix"
        payload["pull_request"]["head"]["sha"] = head
        await world.send("pull_request", payload)
        await world.outbox_settled()

    listed = len(world.github.calls_to("GET", f"/repos/{REPO}/pulls/99/files")) - before
    # One call per push would already be the outsider's whole share; 30 per push is an amplifier.
    assert listed <= PUSHES, f"{listed} pulls/99/files calls for {PUSHES} pushes by an account without a role"
