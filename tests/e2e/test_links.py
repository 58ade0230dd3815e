"""Which PRs link a ticket, through the real server (SPEC: "The repository rail", Links): a
fork's branch name links nothing, and a merge counts only for the tickets the PR linked when
it merged."""

from __future__ import annotations

import pytest

from app.store.tickets import TicketService
from github_standin import account_id
from policies.model import TicketKey
from support.world import REPO, World, event_payload, pull_request_payload

FORK_HEAD = "ab" * 20


async def delivered(world: World) -> None:
    """#12 published, claimed and delivered on the branch agent/12-fix."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")


def railyard_checks_on(world: World, sha: str) -> list[str]:
    """Titles and summaries of the `railyard` check-runs GitHub shows on a commit."""
    runs = [r for r in world.github.check_runs.values() if r.head_sha == sha and r.name == "railyard"]
    return [f"{r.output['title']}\n{r.output['summary']}" for r in runs]


@pytest.mark.parametrize("head_repo", ["mallory/web", None], ids=["fork", "deleted-fork"])
async def test_a_fork_pull_request_named_like_the_delivered_branch_links_nothing(
    world: World, head_repo: str | None
) -> None:
    """A fork's PR from a branch named agent/12-fix: no PR open, no check naming #12, and the
    fork's `/accept` on it is refused as linking no ticket."""
    await delivered(world)
    assert world.ticket().rails.integration.value == "branch_reported"
    world.github.add_pull(
        REPO, 60, body="Just code", head_ref="agent/12-fix", head_sha=FORK_HEAD, head_repo=head_repo,
        user="mallory",
    )  # fmt: skip
    opened = pull_request_payload("opened", 60, "Just code", head=FORK_HEAD, head_repo=head_repo)
    await world.send("pull_request", opened)
    assert world.ticket().rails.integration.value == "branch_reported"
    assert 60 not in world.ticket().rails.pull_requests
    checks = railyard_checks_on(world, FORK_HEAD)
    assert checks and not any("#12" in text for text in checks)
    await world.say("mallory", "/accept", number=60, pr=True)
    [reply] = world.replies(60)
    assert "links no ticket" in reply
    assert world.ticket().work.value == "delivered"


async def test_a_pull_request_from_this_repository_links_whatever_the_case_of_its_name(world: World) -> None:
    """The head repository is compared without case: `ACME/Web` is acme/web, and its branch links."""
    await delivered(world)
    await world.send("pull_request", pull_request_payload("opened", 61, "Just code", head_repo="ACME/Web"))
    assert world.ticket().rails.integration.value == "pull_request_open"


async def test_a_later_delivery_on_a_forks_branch_name_does_not_link_the_fork(world: World) -> None:
    """A fork PR seen first, then a delivery reporting a branch of the same name: still unlinked."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    opened = pull_request_payload("opened", 60, "Just code", head=FORK_HEAD, head_repo="mallory/web")
    await world.send("pull_request", opened)
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")
    assert world.ticket().rails.integration.value == "branch_reported"
    assert 60 not in world.ticket().rails.pull_requests


def link_observations(world: World, pull: int) -> list[tuple[bool, bool]]:
    """(linked, linked_at_merge) of each observation of PR `pull` in #12's event log, oldest first."""
    return [
        (bool(r.event.data["linked"]), bool(r.event.data["linked_at_merge"]))
        for r in TicketService(world.database).history(TicketKey(REPO, 12))
        if r.event.type.value == "repository_observed" and r.event.data.get("number") == pull
    ]


MERGED_AT = "2026-11-30T11:00:00Z"


def unrelated_merge(number: int = 70) -> dict[str, object]:
    """An unrelated PR, merged at 11:00 with a body that links nothing."""
    return pull_request_payload(
        "closed", number, "Tidy the logs", ref="chore/logs", head="71" * 20, merged=True, state="closed",
        updated=MERGED_AT,
    )  # fmt: skip


def edited_after_merge(number: int = 70) -> dict[str, object]:
    """The same merged PR, its body edited an hour after the merge to add `Refs #12`."""
    return pull_request_payload(
        "edited", number, "Tidy the logs\n\nRefs #12", ref="chore/logs", head="71" * 20, merged=True,
        state="closed", updated="2026-11-30T12:00:00Z", merged_at=MERGED_AT,
    )  # fmt: skip


@pytest.mark.parametrize("order", ["merge-then-edit", "edit-then-merge"])
async def test_editing_a_merged_unrelated_pull_request_to_link_the_ticket_never_merges_it(
    world: World, order: str
) -> None:
    """`Refs #12` added after the merge is recorded as a link, but #12 is not merged and has no
    merge commit, whichever event arrives first."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    events = [unrelated_merge(), edited_after_merge()]
    for payload in events if order == "merge-then-edit" else events[::-1]:
        await world.send("pull_request", payload)
    ticket = world.ticket()
    assert ticket.rails.integration.value == "unreported"
    assert ticket.rails.merge_commit is None
    assert ticket.rails.pull_requests[70].linked is True
    assert link_observations(world, 70) == [(True, False)]  # the late merge event says nothing of #12


async def test_a_branch_delivered_after_its_pull_request_merged_does_not_merge_the_ticket(
    world: World,
) -> None:
    """A PR from feature/late merged at 11:00; a delivery naming that branch later links it, no merge."""
    world.github.repositories[REPO].branches["feature/late"] = "72" * 20
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    merged = pull_request_payload(
        "closed", 71, "No keywords", ref="feature/late", head="72" * 20, merged=True, state="closed",
        updated=MERGED_AT,
    )  # fmt: skip
    await world.send("pull_request", merged)
    await world.say("cody", "/deliver branch=feature/late\nDone.")
    ticket = world.ticket()
    assert ticket.rails.integration.value == "branch_reported"
    assert ticket.rails.merge_commit is None
    assert link_observations(world, 71) == [(True, False)]


async def test_a_delivery_written_before_the_merge_but_processed_after_it_still_merges(
    world: World,
) -> None:
    """The `/deliver` comment naming feature/late was written at 10:30, before the 11:00 merge;
    railyard processed it later. The branch linked the PR when it merged, so the merge counts."""
    world.github.repositories[REPO].branches["feature/late"] = "72" * 20
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    merged = pull_request_payload(
        "closed", 71, "No keywords", ref="feature/late", head="72" * 20, merged=True, state="closed",
        updated=MERGED_AT,
    )  # fmt: skip
    await world.send("pull_request", merged)
    await world.say("cody", "/deliver branch=feature/late\nDone.", created_at="2026-11-30T10:30:00Z")
    ticket = world.ticket()
    assert ticket.rails.integration.value == "merged"
    assert link_observations(world, 71)[-1] == (True, True)


async def test_the_merge_event_of_a_linked_pull_request_merges_the_ticket(world: World) -> None:
    """The control: the PR's body at the merge links #12, so the merge counts, and an edit after
    the merge that drops the link changes nothing."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    merged = pull_request_payload("closed", 50, "Fixes #12", merged=True, state="closed", updated=MERGED_AT)
    await world.send("pull_request", merged)
    dropped = pull_request_payload(
        "edited",
        50,
        "No link",
        merged=True,
        state="closed",
        updated="2026-11-30T12:00:00Z",
        merged_at=MERGED_AT,
    )
    await world.send("pull_request", dropped)
    assert world.ticket().rails.integration.value == "merged"
    assert world.ticket().rails.merge_commit == "d" * 40


async def test_a_merge_that_arrives_before_the_ticket_is_published_still_merges_it(world: World) -> None:
    """A `Fixes #12` PR's merge processed while #12's /publish was still queued (found by the
    chaos campaign): once #12 is published, claimed and delivered it is merged, as in order."""
    merged = pull_request_payload("closed", 62, "Fixes #12", merged=True, state="closed")
    await world.send("pull_request", merged)
    assert world.ticket() is None
    await delivered(world)
    ticket = world.ticket()
    assert ticket.rails.integration.value == "merged"
    assert ticket.rails.merge_commit == "d" * 40
    assert link_observations(world, 62)[0] == (True, True)


def failing_check(head: str, check_id: int) -> dict[str, object]:
    """`ci` completed as failure on `head`."""
    payload = event_payload("check_run", "02-completed.json")
    payload["check_run"].update(
        {"name": "ci", "head_sha": head, "status": "completed", "conclusion": "failure", "id": check_id}
    )
    payload["check_run"]["completed_at"] = "2026-11-30T10:02:00Z"
    return payload


def outsiders_fork_pr(action: str, **changes: object) -> dict[str, object]:
    """mallory's PR #99 from her fork, saying `Fixes #12`."""
    payload = pull_request_payload(
        action,
        99,
        "Fixes #12",
        head=FORK_HEAD,
        ref="patch-1",
        head_repo="mallory/web",
        **changes,  # type: ignore[arg-type]
    )
    pull: dict[str, object] = payload["pull_request"]
    pull["user"] = {**pull["user"], "login": "mallory", "id": account_id("mallory"), "type": "User"}  # type: ignore[dict-item]
    return payload


async def test_an_outsiders_fork_pr_with_a_failing_check_only_mentions_the_ticket_until_merged(
    world: World,
) -> None:
    """mallory (no role) opens a fork PR fixing #12 and its check fails: the rail stays, the status
    comment shows the mention; a maintainer merging it makes #12 merged."""
    await world.say("rachel", "/publish")
    world.github.add_pull(
        REPO,
        99,
        body="Fixes #12",
        head_ref="patch-1",
        head_sha=FORK_HEAD,
        head_repo="mallory/web",
        user="mallory",
    )
    await world.send("pull_request", outsiders_fork_pr("opened"))
    await world.send("check_run", failing_check(FORK_HEAD, 9901))
    assert world.ticket().rails.integration.value == "unreported"
    [status] = world.status_comments()
    assert "#99 mentions this ticket" in status
    merged = outsiders_fork_pr("closed", merged=True, state="closed", updated="2026-11-30T11:00:00Z")
    merged["pull_request"]["merged_by"] = {"login": "max", "id": account_id("max"), "type": "User"}  # type: ignore[index]
    await world.send("pull_request", merged)
    assert world.ticket().rails.integration.value == "merged"


async def test_an_outsider_editing_a_fork_pr_twenty_times_costs_no_call_no_write_no_revision(
    world: World,
) -> None:
    """mallory's fork PR says `Fixes #12, fixes #13`; twenty edits of its body cost no
    installation call (no role check, no sidebar read), write no status comment, and leave both
    tickets' revisions (so a `rev=N` command is not made stale) where the opening left them."""
    await world.say("rachel", "/publish")
    world.github.repositories[REPO].issues[13].body = "Real work"
    await world.say("rachel", "/publish", number=13)
    body = "Fixes #12, fixes #13"
    world.github.add_pull(
        REPO, 99, body=body, head_ref="patch-1", head_sha=FORK_HEAD, head_repo="mallory/web", user="mallory"
    )
    opened = outsiders_fork_pr("opened")
    opened["pull_request"]["body"] = body  # type: ignore[index]
    await world.send("pull_request", opened)
    revisions = (world.ticket(12).revision, world.ticket(13).revision)
    before = len(world.github.calls)
    for k in range(20):
        edit = outsiders_fork_pr("edited", updated=f"2026-11-30T10:{10 + k}:00Z")
        edit["pull_request"]["body"] = body + " " * k  # type: ignore[index]
        await world.send("pull_request", edit)
    calls = world.github.calls[before:]
    assert [c.path for c in calls if c.auth == "installation" and c.counted] == []
    assert [c.path for c in calls if c.content_write] == []
    assert (world.ticket(12).revision, world.ticket(13).revision) == revisions
    for number in (12, 13):
        [status] = world.status_comments(number)
        assert "#99 mentions this ticket" in status
