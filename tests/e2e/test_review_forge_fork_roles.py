"""Review (jam): the `railyard` check of a PR that links no ticket asks its author's roles of
GitHub again on every head, one call per team the configuration names, for a role-less fork
author too.

mallory has no role in acme/web. Her fork PR links no ticket. Each push is a new head, so the
check is rendered again, and `Surfaces._only_runner` (app/runtime/surface_renderers.py) builds a
fresh `RoleResolver` and resolves every role for her: six team-membership reads (each a counted
404) per push, never kept, never the one organization-membership read an account found role-less
gets (docs/security.md *Costs an outsider can cause*), although docs/durability.md says the
author's roles of an outsider's fork PR are "asked once when the PR is opened or reopened ... so a
storm of check events or body edits asks nothing".
"""

from __future__ import annotations

from support.world import REPO, World
from tests.e2e.test_links import FORK_HEAD, outsiders_fork_pr

PUSHES = 3


def membership_reads(world: World) -> int:
    calls = world.github.calls
    return sum(1 for c in calls if c.path.startswith("/orgs/") and "/memberships/mallory" in c.path)


async def test_an_outsiders_pushes_to_an_unlinked_fork_pr_do_not_ask_her_roles_each_time(
    world: World,
) -> None:
    pull = world.github.add_pull(
        REPO, 99, body="A small fix", head_ref="patch-1", head_sha=FORK_HEAD, head_repo="mallory/web",
        user="mallory",
    )  # fmt: skip
    opened = outsiders_fork_pr("opened")
    opened["pull_request"]["body"] = "A small fix"
    await world.send("pull_request", opened)
    await world.outbox_settled()
    before = membership_reads(world)

    for push in range(PUSHES):
        head = f"{push + 1:x}" * 40
        pull.head_sha = head
        payload = outsiders_fork_pr("synchronize", updated=f"2026-11-30T10:{push + 10}:00Z")
        payload["pull_request"]["body"] = "A small fix"
        payload["pull_request"]["head"]["sha"] = head
        await world.send("pull_request", payload)
        await world.outbox_settled()

    asked = membership_reads(world) - before
    # Kept from the opening, nothing more; at worst the one org-membership read per push.
    assert asked <= PUSHES, f"{asked} team-membership reads for {PUSHES} pushes by a role-less fork author"
