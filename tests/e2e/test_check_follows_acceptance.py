"""The `railyard` check follows an acceptance that stops holding (SPEC *Acceptance that stays
true*), end to end: on the PR's real head when two pushes share one second, and never passing on
a reviewer's role GitHub will not confirm."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from policies.events import EventType
from support.world import CONFIG, FIX, REPO, World, merge_group_payload, pull_request_payload
from tests.e2e.test_acceptance import AMENDED, CHANGED, Setup, _world, check, delivered, events, until
from tests.e2e.test_shared_head_checks import outsiders_unlinked_pr_on, shown


@pytest.fixture
async def accepting(tmp_path: Path) -> AsyncIterator[Setup]:
    """As tests/e2e/test_acceptance.py's: acceptances expire after a day, cody reviews too."""
    config = CONFIG + "acceptance:\n  expires_after_days: 1\nagents: ['@acme/agents']\n"
    async for setup in _world(tmp_path, config):
        yield setup


async def pushed_changed(world: World) -> None:
    """cody pushes CHANGED to PR #34 (`Fixes #12`), and its `synchronize` is processed."""
    world.github.repositories[REPO].pulls[34].head_sha = CHANGED
    changed = pull_request_payload(
        "synchronize", 34, "Fixes #12", head=CHANGED, updated="2026-11-30T10:00:05Z"
    )
    await world.send("pull_request", changed)


async def rita_leaves_the_reviewers(world: World) -> None:
    """rita leaves @acme/reviewers; olivia's `/status` has railyard look (the lapse is recorded)."""
    del world.github.team_memberships[("acme", "reviewers", "rita")]
    await world.say("olivia", "/status")
    await world.settle()


async def test_a_lapse_turns_the_check_on_the_real_head_after_a_same_second_push(accepting: Setup) -> None:
    """rita accepts cody's work at FIX (ffff...). cody pushes an amended commit (same tree, sha
    aaaa...) in the same second GitHub last updated the PR: the check on the new head is green
    ("same content"), as the SPEC allows. rita then leaves @acme/reviewers: the lapse is recorded,
    so the check on the PR's head (AMENDED) must turn action_required. It stays success: the
    ticket's rail still names FIX as PR #34's head (the same-second tie is broken by the larger
    sha), so only FIX's check is written again, and branch protection lets the PR merge on an
    acceptance that no longer holds."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    assert check(world, FIX)[0] == "success"
    # The runner's amended push: same `updated_at` second as the PR's last update.
    await world.send("pull_request", pull_request_payload("synchronize", 34, "Fixes #12", head=AMENDED))
    await world.settle()
    assert check(world, AMENDED)[0] == "success"  # legitimately green at this point

    await rita_leaves_the_reviewers(world)
    [lapse] = events(world, EventType.ACCEPTANCE_INVALIDATED)
    assert lapse["reason"] == "reviewer_lost_role"
    assert check(world, AMENDED) == (
        "action_required",
        "#12: acceptance no longer holds: the reviewer lost the role",
    )


async def amended_without_the_members_permission(world: World) -> dict[int, str | None]:
    """The installation loses the organization members permission (GitHub answers 403 to every
    membership read); cody then pushes an amended commit (same tree, a later second). What each
    installation had, by its `id()`."""
    withdrawn = {
        id(installation): installation.permissions.pop("members", None)
        for installation in world.github.installations.values()
    }
    await world.send(
        "pull_request",
        pull_request_payload("synchronize", 34, "Fixes #12", head=AMENDED, updated="2026-11-30T10:00:05Z"),
    )
    await world.settle()
    return withdrawn


async def test_the_check_never_passes_on_a_reviewer_role_railyard_cannot_verify(accepting: Setup) -> None:
    """rita accepts at FIX and then leaves @acme/reviewers; meanwhile the installation no longer
    has the organization members permission, so GitHub answers 403 to every membership read. A push
    of an amended commit (same tree, a later second) makes railyard compute the check on the new
    head: it cannot verify that rita still reviews. The SPEC: an acceptance is valid only while the
    reviewer still holds the role, re-checked whenever the check-run is computed, and railyard never
    silently treats an actor as authorised when it cannot verify the role (the gate, for the same
    acceptance, holds the deployment back as `unverified`). The check is green instead."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    assert check(world, FIX)[0] == "success"
    del world.github.team_memberships[("acme", "reviewers", "rita")]
    await amended_without_the_members_permission(world)
    assert not events(world, EventType.ACCEPTANCE_INVALIDATED)  # nothing recorded: it was not verified
    assert check(world, AMENDED) == (
        "action_required",
        "#12: acceptance cannot be verified now: GitHub would not confirm the reviewer's role",
    )


async def test_a_check_that_could_not_verify_turns_green_once_github_confirms_the_role(
    accepting: Setup,
) -> None:
    """As above, but rita still reviews: only the members permission was withdrawn, so the
    check on the amended head says it cannot verify her role. The permission is given back and
    nobody pushes or presses Re-run: the acceptance re-check (every 50 ms here, hourly by
    default) confirms rita's role and writes the check again, green. Before, it stayed blocked
    until the next push, Re-run or change to the ticket."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    withdrawn = await amended_without_the_members_permission(world)
    assert check(world, AMENDED)[1].endswith("GitHub would not confirm the reviewer's role")
    for installation in world.github.installations.values():
        if withdrawn[id(installation)] is not None:
            installation.permissions["members"] = withdrawn[id(installation)]
    await until(lambda: check(world, AMENDED)[0] == "success")
    assert check(world, AMENDED) == ("success", "the linked ticket is accepted at this commit")
    assert await rewritten(world) == 1
    assert not events(world, EventType.ACCEPTANCE_INVALIDATED)


async def rewritten(world: World) -> object:
    """How many checks the acceptance re-check has written again, as `/healthz` reports it."""
    async with world.server.client.get("/healthz") as response:
        report = await response.json()
    return report["loops"]["acceptance_rechecks"]["checks_rewritten_total"]


async def test_a_check_that_could_not_verify_is_not_written_again_while_github_still_will_not_say(
    accepting: Setup,
) -> None:
    """The permission stays withdrawn: the re-check cannot confirm rita's role either, so the
    check that says so is not rendered again (each round would cost the render's reads for the
    same answer), and GitHub gets no second write."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    await amended_without_the_members_permission(world)
    writes = world.github.calls_to("POST", "/repos/acme/web/check-runs")
    writes += world.github.calls_to("PATCH", "/repos/acme/web/check-runs")
    await asyncio.sleep(0.5)  # ten rounds of the re-check
    await world.settle()
    assert await rewritten(world) == 0
    again = world.github.calls_to("POST", "/repos/acme/web/check-runs")
    assert again + world.github.calls_to("PATCH", "/repos/acme/web/check-runs") == writes
    assert check(world, AMENDED)[0] == "action_required"


async def test_an_acceptance_stops_holding_once_its_reviewer_is_an_agent(accepting: Setup) -> None:
    """rita (a reviewer) accepts; she is then added to @acme/agents, which `agents:` lists: her
    account is now an agent, and an agent can never `/accept` in any form, whatever roles it holds
    (SPEC: valid only while the account still holds a role that could make that decision). The
    `/status` re-check records nothing and the check on the PR's head stays green."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    assert check(world, FIX)[0] == "success"
    world.github.team_memberships[("acme", "agents", "rita")] = "active"
    await world.say("rita", "/accept")  # refused as an agent now: she could not make this decision
    assert [r for r in world.replies() if "agents never accept" in r]
    await world.say("olivia", "/status")
    await world.send("pull_request", pull_request_payload("synchronize", 34, "Fixes #12", head=AMENDED))
    await world.settle()
    assert check(world, AMENDED)[0] == "action_required", check(world, AMENDED)


async def test_a_lapse_leaves_no_green_check_on_the_accepted_commit_a_force_push_can_return_to(
    accepting: Setup,
) -> None:
    """rita accepts cody's work at FIX: the check on FIX is green. cody pushes CHANGED (its check
    asks for review), and rita then leaves @acme/reviewers: the lapse is recorded and the check
    on CHANGED says so. The `railyard` run on FIX still says success: when cody force-pushes the
    branch back to FIX (with auto-merge on, or a maintainer's click), GitHub counts that run for
    the PR's new head before railyard has heard of the push, and merges on an acceptance the
    record already says no longer holds."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    assert check(world, FIX)[0] == "success"
    await pushed_changed(world)
    assert check(world, CHANGED) == ("action_required", "#12: accepted commit differs from head")

    await rita_leaves_the_reviewers(world)
    [lapse] = events(world, EventType.ACCEPTANCE_INVALIDATED)
    assert lapse["reason"] == "reviewer_lost_role"
    assert check(world, CHANGED)[1] == "#12: acceptance no longer holds: the reviewer lost the role"
    # cody force-pushes the branch back to FIX: GitHub shows FIX's runs on PR #34 at once.
    world.github.repositories["acme/web"].pulls[34].head_sha = FIX
    assert check(world, FIX)[0] == "action_required", check(world, FIX)


async def test_a_broken_configuration_never_lets_a_reviewer_without_the_files_role_keep_an_acceptance(
    accepting: Setup,
) -> None:
    """rita (write permission on acme/web) accepts as a member of @acme/reviewers, the file's
    only reviewers. A commit on the default branch leaves the file with an unknown key: commands
    are refused until it is fixed, since nobody's roles can be read from it. rita then leaves the
    team. The hourly re-check and the check on a new head judge rita's roles under the defaults
    instead (write permission makes her a reviewer): nothing is recorded and the check is green;
    with the file intact, the same departure is recorded `reviewer_lost_role`."""
    world, _ = accepting
    world.github.permissions[(REPO, "rita")] = "write"
    await delivered(world)
    await world.say("rita", "/accept")
    assert check(world, FIX)[0] == "success"
    world.github.repositories[REPO].files[".github/railyard.yml"] = CONFIG + "typo_key: 1\n"
    await world.say("olivia", "/status")  # read at once: the file cannot be used
    del world.github.team_memberships[("acme", "reviewers", "rita")]
    await world.send(
        "pull_request",
        pull_request_payload("synchronize", 34, "Fixes #12", head=AMENDED, updated="2026-11-30T10:00:05Z"),
    )
    await world.settle()
    assert check(world, AMENDED)[0] == "action_required", check(world, AMENDED)


async def test_another_pr_linking_the_ticket_does_not_judge_the_accepted_prs_head_by_its_own_tickets(
    accepting: Setup,
) -> None:
    """#12 is delivered on PR #34 (head FIX, `Fixes #12`) and #13 is a published ticket nobody
    delivered. PR #35 (head eeee..., `Fixes #12` and `Closes #13`) is open too. rita accepts #12
    at FIX: PR #34 links only #12, accepted at its head, so its check on FIX is green. Each change
    to #12 now also writes the check on #12's accepted commit FIX for PR #35, judged by #35's
    tickets: #13 is not accepted at FIX, so railyard writes action_required on FIX, and branch
    protection (which reads the newest `railyard` run on the commit) holds #34 — a commit that
    is no head of #35's. Anyone who can open a PR linking #12 and another ticket jams #34."""
    world, _ = accepting
    world.github.repositories[REPO].issues[13].body = "Cap upload retries"
    await world.say("rachel", "/publish", 13)
    assert world.ticket(13).work.value == "open"
    opened = pull_request_payload("opened", 35, "Fixes #12\nCloses #13", head="e" * 40, ref="agent/both")
    await world.send("pull_request", opened)
    await delivered(world)
    await world.say("rita", "/accept")
    await world.settle()
    assert world.ticket().review is not None and world.ticket().review.commit == FIX
    assert shown(world, FIX) == ("success", "the linked ticket is accepted at this commit"), shown(world, FIX)


async def test_a_lapse_on_a_two_ticket_prs_accepted_commit_is_not_undone_by_the_other_tickets_change(
    accepting: Setup,
) -> None:
    """PR #34 links #12 and #13 and cody delivers both at FIX; rita accepts #12 there. cody pushes
    CHANGED; rita leaves @acme/reviewers and #12's lapse is recorded: the run on FIX (no open PR's
    head now) is written judged on #12 alone, action_required, so a force-push back to FIX finds
    no success (03855a7). rex then accepts #13, delivered at FIX too: that change writes FIX's one
    run again judged on #13 alone — success. cody force-pushes #34 back to FIX: GitHub counts
    that success for #34, whose #12 no longer holds, before railyard hears the push."""
    world, _ = accepting
    world.github.team_memberships[("acme", "reviewers", "rex")] = "active"
    world.github.repositories[REPO].issues[13].body = "Cap upload retries"
    world.github.repositories[REPO].pulls[34].body = "Fixes #12\nCloses #13"
    for number in (12, 13):
        await world.say("rachel", "/publish", number)
        await world.say("cody", "/claim", number)
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12\nCloses #13"))
    for number in (12, 13):
        await world.say("cody", "/deliver branch=agent/12-fix Resumable uploads with a retry cap.", number)
    await world.say("rita", "/accept")
    world.github.repositories[REPO].pulls[34].head_sha = CHANGED
    await world.send(
        "pull_request",
        pull_request_payload(
            "synchronize", 34, "Fixes #12\nCloses #13", head=CHANGED, updated="2026-11-30T10:00:05Z"
        ),
    )
    await rita_leaves_the_reviewers(world)
    assert [lapse["reason"] for lapse in events(world, EventType.ACCEPTANCE_INVALIDATED)] == [
        "reviewer_lost_role"
    ]
    assert shown(world, FIX)[0] == "action_required"  # the lapse turned the accepted commit's run
    await world.say("rex", "/accept", 13)
    await world.settle()
    assert world.ticket(13).work.value == "accepted" and world.ticket(13).review.commit == FIX
    # cody force-pushes the branch back to FIX: GitHub shows FIX's newest run on PR #34 at once.
    world.github.repositories[REPO].pulls[34].head_sha = FIX
    assert shown(world, FIX)[0] == "action_required", shown(world, FIX)


async def test_a_lapse_turns_the_accepted_commit_even_while_an_unlinked_pr_sits_on_it(
    accepting: Setup,
) -> None:
    """rita accepts #12 at FIX; cody pushes CHANGED to PR #34. mallory (no role, or anyone's
    helper) opens unlinked fork PR #99 whose head is FIX: FIX's one run is judged by #99 alone,
    `checks.unlinked` success. rita leaves @acme/reviewers and the lapse is recorded: the write at
    the accepted commit (`only_ticket=12`) is judged by the open PRs on FIX instead, #99, and
    says success again. cody force-pushes #34 back to FIX: GitHub counts that success for #34
    before railyard hears the push — what the accepted commit's write exists to prevent."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    await pushed_changed(world)
    await outsiders_unlinked_pr_on(world, FIX)
    await world.settle()
    await rita_leaves_the_reviewers(world)
    assert [lapse["reason"] for lapse in events(world, EventType.ACCEPTANCE_INVALIDATED)] == [
        "reviewer_lost_role"
    ]
    assert shown(world, CHANGED)[0] == "action_required"
    # cody force-pushes the branch back to FIX: GitHub shows FIX's newest run on PR #34 at once.
    world.github.repositories[REPO].pulls[34].head_sha = FIX
    assert shown(world, FIX)[0] == "action_required", shown(world, FIX)


async def test_an_unlinked_pr_opened_on_the_accepted_commit_after_a_lapse_does_not_write_success_there(
    accepting: Setup,
) -> None:
    """rita accepts #12 at FIX; cody pushes CHANGED to PR #34; rita leaves @acme/reviewers and the
    lapse is recorded: FIX's one run turns action_required (the accepted commit's write, judged by
    #34's tickets accepted there), so a force-push back to FIX finds no success. mallory (no role)
    then opens unlinked fork PR #99 whose head is FIX. Its write of FIX's one run is judged by the
    open PRs on FIX (#99) and by the asking PR's tickets accepted at FIX — #99's, none: #12's
    lapse there is not judged, and `checks.unlinked` success becomes the newest run on FIX. cody
    force-pushes #34 back to FIX: GitHub counts that success for #34 before railyard hears the
    push (the variant, in the other order, of the test above: 'an unlinked PR sitting on an
    accepted commit hides nothing')."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    await pushed_changed(world)
    await rita_leaves_the_reviewers(world)
    assert [lapse["reason"] for lapse in events(world, EventType.ACCEPTANCE_INVALIDATED)] == [
        "reviewer_lost_role"
    ]
    assert shown(world, FIX)[0] == "action_required"  # the lapse turned the accepted commit's run
    await outsiders_unlinked_pr_on(world, FIX)
    await world.settle()
    # cody force-pushes the branch back to FIX: GitHub shows FIX's newest run on PR #34 at once.
    world.github.repositories[REPO].pulls[34].head_sha = FIX
    assert shown(world, FIX)[0] == "action_required", shown(world, FIX)


async def test_a_late_synchronize_does_not_forget_the_queue_commit_built_on_its_head(
    accepting: Setup,
) -> None:
    """rita accepts #12 at FIX. cody amends the commit (AMENDED, same tree) and #34 enters the
    merge queue at once; the `synchronize` for the push is redelivered late (a failed delivery),
    after the `merge_group` `checks_requested` for the queue commit c…c built on AMENDED. c…c is
    judged at GitHub's head, AMENDED: same content, success, and kept as #34's queue commit. The
    late `synchronize` then moves #34's stored head FIX -> AMENDED, and `remember` takes that for a
    push after the queue (`queue_heads` forgotten) though the queue commit is built on it: the PR
    is still queued on c…c. olivia reopens #12 while #34 waits: the heads turn, c…c is not written
    again and stays success, and the queue merges #34 on it (docs: a change to the ticket while
    the PR waits in the queue writes it again on the PR's last five queue commits)."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    assert check(world, FIX)[0] == "success"
    world.github.repositories[REPO].pulls[34].head_sha = AMENDED  # its webhook not processed yet
    queued = "c" * 40
    await world.send("merge_group", merge_group_payload(queued))
    await world.settle()
    assert shown(world, queued) == ("success", "the linked ticket is accepted at this commit")
    late = pull_request_payload("synchronize", 34, "Fixes #12", head=AMENDED, updated="2026-11-30T10:00:05Z")
    await world.send("pull_request", late)  # redelivered: the push came before the queue
    await world.settle()
    await world.say("olivia", "/reopen Uploads corrupt files over 2 GB in staging.")
    await world.settle()
    assert world.ticket().work.value == "open"
    assert shown(world, AMENDED)[0] == "action_required"
    assert shown(world, queued)[0] == "action_required", shown(world, queued)
