"""The `railyard` check when two pull requests share one head commit, end to end.

GitHub keeps check runs per commit, not per pull request: branch protection on PR #34 reads the
newest `railyard` run on #34's head commit (`GET .../commits/{sha}/check-runs` answers only the
newest run of each name and app by default, `filter=latest`), whichever PR railyard wrote it for.
"""

from __future__ import annotations

from github_standin import account_id
from support.world import FIX, REPO, World, pull_request_payload


def shown(world: World, sha: str) -> tuple[str | None, str | None]:
    """(conclusion, title) of the `railyard` run GitHub counts on `sha`: railyard's newest one
    (the stand-in's `filter=latest`: the highest id of each name and app)."""
    runs = [r for r in world.github.check_runs.values() if r.head_sha == sha and r.name == "railyard"]
    newest = max(runs, key=lambda r: r.id)
    return newest.conclusion, newest.output["title"]


async def outsiders_unlinked_pr_on(world: World, sha: str) -> None:
    """mallory (no role) opens PR #99 from her fork whose head is `sha`, linking no ticket."""
    world.github.add_pull(
        REPO, 99, body="Tidy the README.", head_ref="patch-1", head_sha=sha, head_repo="mallory/web",
        user="mallory",
    )  # fmt: skip
    payload = pull_request_payload(
        "opened", 99, "Tidy the README.", head=sha, ref="patch-1", head_repo="mallory/web",
        updated="2026-11-30T10:00:09Z",
    )  # fmt: skip
    pull = payload["pull_request"]
    pull["user"] = {**pull["user"], "login": "mallory", "id": account_id("mallory"), "type": "User"}
    await world.send("pull_request", payload)


async def test_an_outsiders_unlinked_pr_on_the_same_commit_does_not_pass_the_linked_prs_check(
    world: World,
) -> None:
    """#12 is delivered at FIX on PR #34 and nobody has accepted it: the check on FIX asks for
    review. mallory, who holds no role, forks the repository and opens PR #99 whose head is the
    same commit FIX and whose body links nothing: railyard writes its `checks.unlinked` success
    on FIX. GitHub keeps one list of runs per commit, so the `railyard` run branch protection now
    reads for PR #34 is that success, and #34 merges without any acceptance."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12"))
    await world.say("cody", "/deliver branch=agent/12-fix Resumable uploads with a retry cap.")
    assert shown(world, FIX) == ("action_required", "#12: awaiting review")

    await outsiders_unlinked_pr_on(world, FIX)
    await world.settle()
    assert world.ticket().work.value == "delivered"  # nobody accepted anything
    assert shown(world, FIX)[0] == "action_required", shown(world, FIX)
