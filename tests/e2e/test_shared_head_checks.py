"""The `railyard` check when two pull requests share one head commit, end to end.

GitHub keeps check runs per commit, not per pull request: branch protection on PR #34 reads the
newest `railyard` run on #34's head commit (`GET .../commits/{sha}/check-runs` answers only the
newest run of each name and app by default, `filter=latest`), whichever PR railyard wrote it for.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import insert

from app.store.effects import effects_table
from app.store.tickets import TicketService
from github_standin import account_id, repository_id
from policies.model import TicketKey
from support.world import FIX, REPO, World, merge_group_payload, pull_request_payload
from tests.e2e.test_rerun import rerequested


def shown(world: World, sha: str) -> tuple[str | None, str | None]:
    """(conclusion, title) of the `railyard` run GitHub counts on `sha`: railyard's newest one
    (the stand-in's `filter=latest`: the highest id of each name and app)."""
    runs = [r for r in world.github.check_runs.values() if r.head_sha == sha and r.name == "railyard"]
    newest = max(runs, key=lambda r: r.id)
    return newest.conclusion, newest.output["title"]


async def outsiders_unlinked_pr_on(world: World, sha: str) -> None:
    """mallory (no role) opens PR #99 from her fork whose head is `sha`, linking no ticket."""
    await fork_pr_on(world, "mallory", 99, "Tidy the README.", sha)


async def lapse_of_12(world: World) -> None:
    """rita leaves @acme/reviewers and `/status` records #12's acceptance lapsed."""
    del world.github.team_memberships[("acme", "reviewers", "rita")]
    await world.say("olivia", "/status")
    await world.settle()
    assert any(
        r.event.type.value == "acceptance_invalidated"
        for r in TicketService(world.database).history(TicketKey(REPO, 12))
    )


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


async def accepted_on_34_with_13_open(world: World) -> None:
    """#12 delivered on PR #34 (head FIX) and accepted by rita: the check on FIX is green. #13
    is a published ticket nobody claimed."""
    world.github.repositories[REPO].issues[13].body = "Cap upload retries"
    await world.say("rachel", "/publish", 13)
    assert world.ticket(13).work.value == "open"
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12"))
    await world.say("cody", "/deliver branch=agent/12-fix Resumable uploads with a retry cap.")
    await world.say("rita", "/accept")
    await world.settle()
    assert shown(world, FIX)[0] == "success"


async def fork_pr_on(
    world: World, login: str, number: int, body: str, sha: str, *, state: str = "open"
) -> None:
    """`login` opens (or closes) PR `number` from their fork `login/web`, head `sha`."""
    action = "opened" if state == "open" else "closed"
    if state == "open":
        world.github.add_pull(
            REPO, number, body=body, head_ref="patch-1", head_sha=sha, head_repo=f"{login}/web", user=login
        )
    else:
        world.github.repositories[REPO].pulls[number].state = "closed"
    updated = "2026-11-30T10:00:09Z" if state == "open" else "2026-11-30T10:00:19Z"
    await world.send("pull_request", fork_payload(action, login, number, body, sha, updated, state=state))
    await world.settle()


def fork_payload(
    action: str, login: str, number: int, body: str, sha: str, updated: str, *, state: str = "open"
) -> dict[str, Any]:
    """A `pull_request` delivery of `login`'s PR `number` from their fork `login/web`, head `sha`."""
    payload = pull_request_payload(
        action, number, body, head=sha, ref="patch-1", head_repo=f"{login}/web", state=state, updated=updated
    )
    pull = payload["pull_request"]
    pull["user"] = {**pull["user"], "login": login, "id": account_id(login), "type": "User"}
    return payload


async def test_an_outsiders_pr_naming_an_unaccepted_ticket_never_passes_on_an_accepted_prs_commit(
    world: World,
) -> None:
    """#12 is accepted at FIX (PR #34). mallory, who holds no role, opens fork PR #99 whose head
    is FIX and whose body says `Fixes #13`, a ticket nobody claimed. docs/durability.md: an
    outsider's fork PR's merge still counts for the tickets its body names, so its check "passes
    only once they are accepted at its head". railyard writes success for #99: the tickets PR
    #34 links on FIX stand in for #99's own, and #99's `Fixes #13` is never judged. A maintainer
    merging #99 (its check green) merges #13 without anyone accepting it."""
    await accepted_on_34_with_13_open(world)
    await fork_pr_on(world, "mallory", 99, "Fixes #13", FIX)
    assert world.ticket(13).work.value == "open"
    assert shown(world, FIX)[0] == "action_required", shown(world, FIX)


async def test_closing_the_pr_that_shared_a_head_gives_the_other_pr_its_own_verdict_back(
    world: World,
) -> None:
    """#12 is accepted at FIX (PR #34, green). cody, a runner, opens PR #36 from his fork whose
    head is also FIX and whose body says `Closes #13` (his links count): every PR on FIX is now
    judged over #12 and #13, so FIX's check asks for #13's claim — as it should while both are
    open. A maintainer closes #36. PR #34 links only #12, accepted at FIX, yet FIX's check stays
    action_required: a closed PR gets no check, and nothing writes #34's again, so anyone whose
    PR links count (a runner's fork PR, an agent's) jams an accepted PR for as long as nobody
    pushes or presses Re-run, even after the PR is closed."""
    await accepted_on_34_with_13_open(world)
    await fork_pr_on(world, "cody", 36, "Closes #13", FIX)
    assert shown(world, FIX) == ("action_required", "#13: awaiting claim")
    await fork_pr_on(world, "cody", 36, "Closes #13", FIX, state="closed")
    await world.send("check_run", rerequested("check_run", "08-rerequested.json"))  # Re-run on #34
    await world.settle()
    assert shown(world, FIX)[0] == "success", shown(world, FIX)


async def test_a_lapse_turns_the_run_an_unlinked_pr_wrote_on_the_same_commit(world: World) -> None:
    """#12 is accepted at FIX (PR #34, green). mallory (no role) then opens her unlinked fork PR
    #99 whose head is FIX: its run, the newest `railyard` run on FIX, is given #34's verdict,
    success — right at that moment. rita then leaves @acme/reviewers and the lapse is recorded:
    railyard writes PR #34's own run again (action_required), but not #99's, which links no
    ticket; #99's newer success is still the run GitHub counts on FIX, so #34 merges on an
    acceptance the record says no longer holds — what c993fba set out to close, in the other
    order. (A closed PR's run stays too: the test above.)"""
    await accepted_on_34_with_13_open(world)
    await outsiders_unlinked_pr_on(world, FIX)
    await world.settle()
    assert shown(world, FIX)[0] == "success"
    await lapse_of_12(world)
    assert shown(world, FIX)[0] == "action_required", shown(world, FIX)


async def test_a_push_that_moves_the_blocking_pr_off_the_commit_gives_the_other_pr_its_verdict_back(
    world: World,
) -> None:
    """#12 is accepted at FIX (PR #34, green). cody (a runner) opens fork PR #36 whose head is
    also FIX and whose body says `Closes #13` (unclaimed): FIX's run shows #36's verdict, the
    strictest, action_required — as it should while both are on FIX. cody then pushes #36 on to
    another commit. Nothing writes FIX's run again: the `synchronize` writes only #36's new head,
    and the closed path (`shared_only`) runs only when a PR closes. PR #34, alone on FIX and
    accepted there, stays action_required for good (closing #36 now writes its new head, not
    FIX); docs/what-people-see.md says the run is given back to the PRs left on the commit."""
    await accepted_on_34_with_13_open(world)
    await fork_pr_on(world, "cody", 36, "Closes #13", FIX)
    assert shown(world, FIX) == ("action_required", "#13: awaiting claim")
    pushed = "b" * 40
    world.github.repositories[REPO].pulls[36].head_sha = pushed
    payload = fork_payload("synchronize", "cody", 36, "Closes #13", pushed, "2026-11-30T10:00:29Z")
    await world.send("pull_request", payload)
    await world.settle()
    assert shown(world, pushed)[0] == "action_required"  # #36's own verdict, on its new head
    assert shown(world, FIX)[0] == "success", shown(world, FIX)


@pytest.mark.xfail(
    strict=True,
    reason="known limit (docs/what-people-see.md): a PR head's render ignores the queued PR "
    "whose queue commit it is (and vice versa)",
)
async def test_an_unlinked_pr_on_a_merge_queue_commit_does_not_pass_the_queued_pr(world: World) -> None:
    """#12 is accepted at FIX (PR #34, green) and #34 enters the merge queue: GitHub builds group
    commit c…c, railyard writes success there. olivia reopens #12 while #34 waits: the run on c…c
    turns action_required (the queue must not merge it). mallory (no role) pushes that queue
    commit, public in the base repository as `gh-readonly-queue/main/pr-34-…`, to her fork and
    opens unlinked PR #99 with it as head. The commit's one run is now judged by the open PRs
    whose head it is, #99 alone (`_open_at_head`: the queued PR is no PR's head there), and gets
    `checks.unlinked` success: the queue merges #34 on the success, its ticket reopened."""
    await accepted_on_34_with_13_open(world)
    queued = "c" * 40
    await world.send("merge_group", merge_group_payload(queued))
    await world.settle()
    assert shown(world, queued)[0] == "success"
    await world.say("olivia", "/reopen Uploads corrupt files over 2 GB in staging.")
    await world.settle()
    assert shown(world, queued)[0] == "action_required"
    await outsiders_unlinked_pr_on(world, queued)
    await world.settle()
    assert world.ticket().work.value == "open"
    assert shown(world, queued)[0] == "action_required", shown(world, queued)


async def test_a_check_pending_under_the_old_per_pr_key_does_not_outlive_the_upgrade(world: World) -> None:
    """Before 2d854d7 a check's outbox key named the PR (`check:acme/web:34:<sha>`). One such
    write is waiting when railyard is upgraded (a 502 at its create, in backoff). After the
    upgrade #12 is accepted at FIX and the new per-commit row creates FIX's run, green. The old
    row's backoff ends: rendered now, it creates another run on FIX, the newest, green too. That
    row is never enqueued again (no key of that form is made any more) and no migration retired
    it: when rita leaves @acme/reviewers and the lapse is recorded, the per-commit row edits
    its own run, action_required, but GitHub counts the newest run on FIX, the old row's
    success, and PR #34 merges on an acceptance the record says no longer holds."""
    await accepted_on_34_with_13_open(world)
    with world.database.write() as connection:
        connection.execute(
            insert(effects_table).values(
                dedupe_key=f"check:{REPO}:34:{FIX}", installation_id=7, repository=REPO,
                repository_id=repository_id(REPO), kind="check_run",
                payload={"pull_request": 34, "head_sha": FIX, "merge_group": False}, status="pending",
                attempts=1, next_attempt_at=time.time(), created_at=1.0, updated_at=1.0,
            )
        )  # fmt: skip
    await world.outbox_settled()
    runs = [r for r in world.github.check_runs.values() if r.head_sha == FIX and r.name == "railyard"]
    assert len(runs) == 1 and shown(world, FIX)[0] == "success"  # the old row wrote nothing
    await lapse_of_12(world)
    assert shown(world, FIX)[0] == "action_required", shown(world, FIX)


async def test_an_outsider_dropping_the_ticket_its_pr_named_gives_the_shared_commit_its_verdict_back(
    world: World,
) -> None:
    """#12 is accepted at FIX (PR #34, green). mallory (no role) opens fork PR #99 whose head is
    FIX and whose body says `Fixes #13`: its merge would count for #13, so FIX's one run shows
    #99's action_required — as it should. mallory edits #99's body to drop the mention (`Tidy the
    README.`). Her PR's links never counted, so stored links before and after are both empty and
    `_edit_changes_no_check` calls it an edit that changes no check: FIX is not written again,
    and PR #34, accepted at its head with nothing left on the commit that cannot pass, stays
    action_required (and #99's own check keeps naming #13)."""
    await accepted_on_34_with_13_open(world)
    await fork_pr_on(world, "mallory", 99, "Fixes #13", FIX)
    assert shown(world, FIX)[0] == "action_required"
    world.github.repositories[REPO].pulls[99].body = "Tidy the README."
    payload = pull_request_payload(
        "edited", 99, "Tidy the README.", head=FIX, ref="patch-1", head_repo="mallory/web",
        updated="2026-11-30T10:00:29Z",
    )  # fmt: skip
    payload["changes"] = {"body": {"from": "Fixes #13"}}
    pull = payload["pull_request"]
    pull["user"] = {**pull["user"], "login": "mallory", "id": account_id("mallory"), "type": "User"}
    await world.send("pull_request", payload)
    await world.settle()
    assert shown(world, FIX)[0] == "success", shown(world, FIX)
