"""What an outsider's pushes to her own fork's PR cost the installation (SPEC *Answers that
cannot be forged or jammed*; docs/security.md, "Costs an outsider can cause").

mallory has no role in acme/web. Every push to her fork's PR is a new head, so the `railyard`
check is rendered again: that must not cost a call per 100 changed files (the check reads the
proposed `.github/railyard.yml` at the head, never the PR's list of files), nor a call per team
named to learn she is not only a runner (asked once, kept ten minutes)."""

from __future__ import annotations

from github_standin.state import PullRequest
from support.world import REPO, World
from tests.e2e.test_links import FORK_HEAD, outsiders_fork_pr

PUSHES = 3


async def open_fork_pr(world: World, files: dict[str, str] | None = None) -> PullRequest:
    """mallory's fork PR #99, body "A small fix" (no ticket named), opened and settled."""
    pull = world.github.add_pull(
        REPO, 99, body="A small fix", head_ref="patch-1", head_sha=FORK_HEAD, head_repo="mallory/web",
        user="mallory",
    )  # fmt: skip
    pull.files.update(files or {})
    opened = outsiders_fork_pr("opened")
    opened["pull_request"]["body"] = "A small fix"
    await world.send("pull_request", opened)
    await world.outbox_settled()
    return pull


async def push(world: World, pull: PullRequest, times: int = PUSHES) -> None:
    """`times` pushes a minute apart, each a new head, each settled."""
    for push in range(times):
        head = f"{push + 1:x}" * 40
        pull.head_sha = head
        payload = outsiders_fork_pr("synchronize", updated=f"2026-11-30T10:{push + 10}:00Z")
        payload["pull_request"]["body"] = "A small fix"
        payload["pull_request"]["head"]["sha"] = head
        await world.send("pull_request", payload)
        await world.outbox_settled()


def reads(world: World, path: str) -> int:
    return len(world.github.calls_to("GET", path))


async def test_pushes_to_a_wide_fork_pr_never_list_its_files(world: World) -> None:
    """3,000 changed files, none of them the configuration: one read of the file a head."""
    await world.say("rachel", "/publish")
    pull = await open_fork_pr(world, {f"src/generated/{n:04}.txt": "x\n" for n in range(3000)})
    before = reads(world, f"/repos/{REPO}/contents/.github/railyard.yml")

    await push(world, pull)

    assert reads(world, f"/repos/{REPO}/pulls/99/files") == 0
    assert reads(world, f"/repos/{REPO}/contents/.github/railyard.yml") - before == PUSHES


async def test_pushes_to_an_unlinked_fork_pr_do_not_ask_her_roles_each_time(world: World) -> None:
    """Her roles were asked when the check was first written; the pushes ask no team."""
    pull = await open_fork_pr(world)

    def memberships() -> int:
        return sum(
            1 for c in world.github.calls if c.path.startswith("/orgs/") and "/memberships/mallory" in c.path
        )

    before = memberships()
    await push(world, pull)

    assert memberships() == before
