"""The repository rail from pull-request, check and push events, through the real server."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from app.store.queue_admin import list_deliveries
from github_standin import repository_id
from support.world import CONFIG, FIX, REPO, World, event_payload, pull_request_payload
from tests.fakes import FIXTURES


async def claimed(world: World) -> None:
    """#12 published and claimed by cody."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")


def rails(world: World, number: int = 12) -> tuple[str, str]:
    """(work, integration) of a ticket."""
    ticket = world.ticket(number)
    return ticket.work.value, ticket.rails.integration.value


async def test_an_opened_pull_request_that_fixes_the_ticket_opens_the_repository_rail(world: World) -> None:
    """`Fixes #12` links the PR; the work rail does not move."""
    await claimed(world)
    await world.send("pull_request", pull_request_payload("opened", 50, "Fixes #12"))
    assert rails(world) == ("claimed", "pull_request_open")
    assert world.ticket().rails.pull_requests[50].url.endswith("/pull/50")


async def test_a_failing_check_on_the_head_blocks_and_a_passing_rerun_unblocks(world: World) -> None:
    """A failure from another check blocks; railyard's own never does; a later success clears it."""
    await claimed(world)
    await world.send("pull_request", pull_request_payload("opened", 50, "Fixes #12"))

    def check(name: str, conclusion: str, check_id: int, at: str) -> dict[str, object]:
        payload = event_payload("check_run", "02-completed.json")
        payload["check_run"].update(
            {
                "name": name,
                "head_sha": FIX,
                "status": "completed",
                "conclusion": conclusion,
                "id": check_id,
                "completed_at": at,
            }
        )
        if name == "railyard":  # railyard's own check: this app's (APP_ID 1 in the e2e world)
            payload["check_run"]["app"] = {**payload["check_run"]["app"], "id": 1}
        return payload

    await world.send("check_run", check("railyard", "action_required", 1, "2026-11-30T10:01:00Z"))
    assert rails(world) == ("claimed", "pull_request_open")
    await world.send("check_run", check("ci", "failure", 2, "2026-11-30T10:02:00Z"))
    assert rails(world) == ("claimed", "blocked")
    await world.send("check_run", check("ci", "success", 3, "2026-11-30T10:05:00Z"))
    assert rails(world) == ("claimed", "pull_request_open")


async def test_merged_is_final_whatever_arrives_later(world: World) -> None:
    """A merge is recorded with its commit; a late `opened` or an edit removing the link changes nothing."""
    await claimed(world)
    await world.send("pull_request", pull_request_payload("opened", 50, "Fixes #12"))
    closed = pull_request_payload(
        "closed", 50, "Fixes #12", merged=True, state="closed", updated="2026-11-30T11:00:00Z"
    )
    await world.send("pull_request", closed)
    assert rails(world) == ("claimed", "merged")
    assert world.ticket().rails.merge_commit == "d" * 40
    await world.send(
        "pull_request", pull_request_payload("reopened", 50, "Fixes #12", updated="2026-11-30T10:30:00Z")
    )
    await world.send(
        "pull_request", pull_request_payload("edited", 50, "No link", updated="2026-11-30T12:00:00Z")
    )
    assert rails(world) == ("claimed", "merged")


async def test_editing_the_body_to_remove_the_link_unlinks_the_ticket(world: World) -> None:
    """Unlinking is recorded, and the rail is recomputed from what remains."""
    await claimed(world)
    await world.send(
        "pull_request", pull_request_payload("opened", 50, "Fixes #12", ref="feature/x", head="c" * 40)
    )
    assert rails(world) == ("claimed", "pull_request_open")
    edited = pull_request_payload(
        "edited", 50, "Nothing", ref="feature/x", head="c" * 40, updated="2026-11-30T10:10:00Z"
    )
    await world.send("pull_request", edited)
    assert rails(world) == ("claimed", "unreported")
    assert world.ticket().rails.pull_requests[50].linked is False


async def test_a_ticket_edited_out_in_the_second_the_pr_opened_does_not_show_it_open_after_the_merge(
    world: World,
) -> None:
    """`Fixes #12` corrected to `Fixes #13` in the second the PR opened, then merged: the merge
    tells #12 too (the stored PR no longer names it), so #12 is unreported and #13 merged."""
    await world.say("rachel", "/publish")
    world.github.repositories[REPO].issues[13].body = "Thirteen"
    await world.say("rachel", "/publish", 13)
    await world.send("pull_request", pull_request_payload("opened", 50, "Fixes #12", ref="feature/x"))
    await world.send("pull_request", pull_request_payload("edited", 50, "Fixes #13", ref="feature/x"))
    merged = pull_request_payload(
        "closed",
        50,
        "Fixes #13",
        ref="feature/x",
        merged=True,
        state="closed",
        updated="2026-11-30T10:30:00Z",
    )
    await world.send("pull_request", merged)
    assert (rails(world, 12)[1], rails(world, 13)[1]) == ("unreported", "merged")


async def test_a_delivery_and_a_push_report_the_branch_after_verifying_it(world: World) -> None:
    """/deliver branch=... verifies and records the branch; a push to it is verified again."""
    await claimed(world)
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")
    assert rails(world) == ("delivered", "branch_reported")
    world.github.repositories[REPO].branches["agent/12-fix"] = "9" * 40
    push = event_payload("push", "01-none.json", ref="refs/heads/agent/12-fix", after="9" * 40)
    push["repository"]["pushed_at"] = int(time.time()) + 1  # pushes are ordered by GitHub's time
    await world.send("push", push)
    assert world.ticket().rails.branches["agent/12-fix"].sha == "9" * 40
    del world.github.repositories[REPO].branches["agent/12-fix"]
    deleted = event_payload("push", "01-none.json", ref="refs/heads/agent/12-fix", after="0" * 40)
    deleted["repository"]["pushed_at"] = int(time.time()) + 2
    await world.send("push", deleted)
    assert rails(world) == ("delivered", "unreported")


async def test_a_pull_request_from_the_delivered_branch_is_linked_without_keywords(world: World) -> None:
    """The delivery's branch links a PR opened from it, even one whose body names no ticket."""
    await claimed(world)
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")
    await world.send("pull_request", pull_request_payload("opened", 51, "Just code"))
    assert rails(world) == ("delivered", "pull_request_open")


async def test_branches_matching_the_branch_pattern_are_found_without_naming_them(world: World) -> None:
    """`tickets.branch_pattern`: a push to `agent/12-...` reports the branch, and a PR from it links #12."""
    world.github.repositories[REPO].files[".github/railyard.yml"] = (
        CONFIG + 'tickets:\n  branch_pattern: "agent/{number}-*"\n'
    )
    await claimed(world)
    world.github.repositories[REPO].branches["agent/12-resume"] = "5" * 40
    push = event_payload("push", "01-none.json", ref="refs/heads/agent/12-resume", after="5" * 40)
    push["repository"]["pushed_at"] = int(time.time()) + 1
    await world.send("push", push)
    assert rails(world) == ("claimed", "branch_reported")
    assert world.ticket().rails.branches["agent/12-resume"].sha == "5" * 40
    opened = pull_request_payload("opened", 52, "No keywords here", head="5" * 40, ref="agent/12-resume")
    await world.send("pull_request", opened)
    assert rails(world) == ("claimed", "pull_request_open")
    other = pull_request_payload("opened", 53, "Nothing", head="6" * 40, ref="agent/13-other")
    await world.send("pull_request", other)
    assert 53 not in world.ticket().rails.pull_requests and world.ticket(13) is None


REPOSITORY_EVENTS = ("pull_request", "push", "check_suite", "check_run", "deployment", "deployment_status")


@pytest.mark.parametrize("event", REPOSITORY_EVENTS)
async def test_every_real_example_goes_through_without_moving_the_work_rail(world: World, event: str) -> None:
    """Each example (github.com and GHES), pointed at a claimed ticket's PR and branch, is handled cleanly."""
    await claimed(world)
    await world.send("pull_request", pull_request_payload("opened", 50, "Fixes #12"))
    before = world.ticket()
    for path in sorted(FIXTURES.glob(f"*/{event}/*.json")):  # GitHub sends them as they come
        response = await world.server.deliver(event, json.dumps(_adjusted(path, event)).encode())
        assert response.status == 202, path
    await world.settle()
    failed = [d for d in list_deliveries(world.database, limit=1000) if d["status"] == "failed"]
    assert failed == []
    after = world.ticket()
    assert (after.work, after.claimant, after.attempt, after.last_delivery) == (
        before.work, before.claimant, before.attempt, before.last_delivery,
    )  # fmt: skip


def _adjusted(path: Path, event: str) -> dict[str, Any]:
    """The example, moved to acme/web and pointed at PR #50 / the ticket's branch and head."""
    payload: dict[str, Any] = json.loads(path.read_text())
    payload["installation"] = {"id": 7}
    payload.setdefault("repository", {})["full_name"] = REPO
    payload["repository"]["id"] = repository_id(REPO)  # the stand-in's acme/web
    if event == "pull_request":
        payload["pull_request"]["number"] = 50
        payload["pull_request"]["body"] = "Fixes #12"
    elif event == "push":
        payload["ref"] = "refs/heads/agent/12-fix"
    elif event in ("check_run", "check_suite"):
        payload[event]["head_sha"] = FIX
    return payload


MERGE = "d" * 40
LATER, OLDER = "e1" * 20, "0a" * 20


def deployment(
    deployment_id: int, sha: str, status: str | None = None, status_id: int = 0
) -> tuple[str, dict[str, Any]]:
    """A real deployment (or deployment_status) payload for production."""
    if status is None:
        payload = event_payload("deployment", "01-created.json")
        event = "deployment"
    else:
        payload = event_payload("deployment_status", "01-created.json")
        payload["deployment_status"].update({"id": status_id, "state": status, "environment": "production"})
        event = "deployment_status"
    payload["deployment"].update({"id": deployment_id, "sha": sha, "environment": "production"})
    return event, payload


async def merged(world: World) -> None:
    """#12 claimed, its PR #50 merged with merge commit ddd..."""
    await claimed(world)
    closed = pull_request_payload("closed", 50, "Fixes #12", merged=True, state="closed")
    await world.send("pull_request", closed)
    compare = world.github.repositories[REPO].compare
    compare.update({(MERGE, LATER): "ahead", (MERGE, OLDER): "behind"})


def deployment_state(world: World) -> str:
    """The headline deployment rail of #12."""
    return world.ticket().rails.deployment.value


async def test_a_deployment_containing_the_merge_goes_deploying_then_deployed(world: World) -> None:
    """in_progress -> deploying; success of a later commit (compare: ahead) -> deployed; work untouched."""
    await merged(world)
    assert deployment_state(world) == "not_deployed"
    await world.send(*deployment(900, LATER))
    await world.send(*deployment(900, LATER, "in_progress", 1))
    assert deployment_state(world) == "deploying"
    await world.send(*deployment(900, LATER, "success", 2))
    assert deployment_state(world) == "deployed"
    assert world.ticket().work.value == "claimed"


async def test_a_rollback_to_a_commit_without_the_merge_is_not_deployed(world: World) -> None:
    """A later successful deployment of an older commit takes the change away from users."""
    await merged(world)
    await world.send(*deployment(900, MERGE, "success", 1))
    assert deployment_state(world) == "deployed"
    await world.send(*deployment(901, OLDER, "success", 2))
    assert deployment_state(world) == "not_deployed"


async def test_a_failed_deployment_of_the_merge_is_failed(world: World) -> None:
    """failure/error on the newest deployment attempt that contains the merge."""
    await merged(world)
    await world.send(*deployment(900, LATER, "failure", 1))
    assert deployment_state(world) == "failed"


async def test_a_deployment_seen_before_the_merge_is_checked_again_when_the_ticket_merges(
    world: World,
) -> None:
    """The latest deployment of each environment is re-checked when a ticket becomes merged."""
    await claimed(world)
    world.github.repositories[REPO].compare[(MERGE, LATER)] = "ahead"
    await world.send(*deployment(900, LATER, "success", 1))
    assert deployment_state(world) == "not_deployed"
    await world.send(
        "pull_request", pull_request_payload("closed", 50, "Fixes #12", merged=True, state="closed")
    )
    assert deployment_state(world) == "deployed"


async def test_an_unmergeable_pull_request_blocks_until_a_push_makes_it_mergeable(world: World) -> None:
    """Mergeability is polled from the PR API when the PR opens and after pushes to its head."""
    await claimed(world)
    pull = world.github.add_pull(REPO, 52, body="Fixes #12", head_ref="feature/conflict", head_sha="c" * 40)
    pull.mergeable = False
    opened = pull_request_payload("opened", 52, "Fixes #12", ref="feature/conflict", head="c" * 40)
    await world.send("pull_request", opened)
    assert rails(world) == ("claimed", "blocked")
    pull.mergeable, pull.head_sha = True, "c2" * 20
    push = event_payload("push", "01-none.json", ref="refs/heads/feature/conflict", after="c2" * 20)
    await world.send("push", push)
    await world.send(
        "pull_request",
        pull_request_payload("synchronize", 52, "Fixes #12", ref="feature/conflict", head="c2" * 20,
                             updated="2026-11-30T10:20:00Z"),
    )  # fmt: skip
    assert rails(world) == ("claimed", "pull_request_open")


SECOND_MERGE = "5" * 40


async def two_merged_tickets(world: World) -> None:
    """#12 and #13 merged (merge commits ddd... and 555...), both contained in LATER, not in OLDER."""
    world.github.repositories[REPO].issues[13].body = "Second ticket"
    await world.say("rachel", "/publish", number=13)
    await world.say("cody", "/claim", number=13)
    await merged(world)
    second = pull_request_payload(
        "closed", 51, "Fixes #13", merged=True, state="closed", ref="agent/13", head="b" * 40
    )
    second["pull_request"]["merge_commit_sha"] = SECOND_MERGE
    compare = world.github.repositories[REPO].compare
    compare.update({(SECOND_MERGE, LATER): "ahead", (SECOND_MERGE, OLDER): "behind"})
    await world.send("pull_request", second)


def both(world: World) -> tuple[str, str]:
    """The headline deployment rail of #12 and #13."""
    return world.ticket(12).rails.deployment.value, world.ticket(13).rails.deployment.value


async def test_one_deployment_moves_every_merged_ticket_it_contains(world: World) -> None:
    """One deployment deploys two merged tickets; a rollback undoes both; a later failure leaves deployed."""
    await two_merged_tickets(world)
    await world.send(*deployment(900, LATER, "success", 1))
    assert both(world) == ("deployed", "deployed")
    await world.send(*deployment(901, OLDER, "success", 2))
    assert both(world) == ("not_deployed", "not_deployed")
    await world.send(*deployment(902, LATER, "success", 3))
    await world.send(*deployment(903, LATER, "failure", 4))
    assert both(world) == ("deployed", "deployed")
    assert (world.ticket(12).work.value, world.ticket(13).work.value) == ("claimed", "claimed")


async def test_the_whole_repository_and_deployment_scenario_for_two_tickets(world: World) -> None:
    """Branch pushed, PR opened, checks fail then pass, merged, deploying, deployed, rolled back:
    the rails follow for both tickets and the work rail never moves."""
    world.github.repositories[REPO].issues[13].body = "Second ticket"
    world.github.repositories[REPO].branches["agent/13"] = "b" * 40
    for number, branch in ((12, "agent/12-fix"), (13, "agent/13")):
        await world.say("rachel", "/publish", number=number)
        await world.say("cody", f"/claim branch={branch}", number=number)
    compare = world.github.repositories[REPO].compare
    compare.update({(MERGE, LATER): "ahead", (MERGE, OLDER): "behind", ("5" * 40, LATER): "ahead"})
    compare[("5" * 40, OLDER)] = "behind"

    def state() -> list[tuple[str, str, str]]:
        return [
            (t.work.value, t.rails.integration.value, t.rails.deployment.value)
            for t in (world.ticket(12), world.ticket(13))
        ]

    push = event_payload("push", "01-none.json", ref="refs/heads/agent/12-fix", after=FIX)
    push["repository"]["pushed_at"] = int(time.time()) + 1
    await world.send("push", push)
    push13 = event_payload("push", "01-none.json", ref="refs/heads/agent/13", after="b" * 40)
    push13["repository"]["pushed_at"] = int(time.time()) + 1
    await world.send("push", push13)
    assert state() == [("claimed", "branch_reported", "not_deployed")] * 2
    await world.send("pull_request", pull_request_payload("opened", 50, "Fixes #12"))
    await world.send(
        "pull_request", pull_request_payload("opened", 51, "Fixes #13", ref="agent/13", head="b" * 40)
    )
    assert state() == [("claimed", "pull_request_open", "not_deployed")] * 2
    for head in (FIX, "b" * 40):
        await world.send("check_run", ci_check(head, "failure", 10, "2026-11-30T10:05:00Z"))
    assert state() == [("claimed", "blocked", "not_deployed")] * 2
    for head in (FIX, "b" * 40):
        await world.send("check_run", ci_check(head, "success", 11, "2026-11-30T10:10:00Z"))
    assert state() == [("claimed", "pull_request_open", "not_deployed")] * 2
    await world.send(
        "pull_request", pull_request_payload("closed", 50, "Fixes #12", merged=True, state="closed")
    )
    second = pull_request_payload(
        "closed", 51, "Fixes #13", merged=True, state="closed", ref="agent/13", head="b" * 40
    )
    second["pull_request"]["merge_commit_sha"] = "5" * 40
    await world.send("pull_request", second)
    assert state() == [("claimed", "merged", "not_deployed")] * 2
    await world.send(*deployment(900, LATER, "in_progress", 1))
    assert state() == [("claimed", "merged", "deploying")] * 2
    await world.send(*deployment(900, LATER, "success", 2))
    assert state() == [("claimed", "merged", "deployed")] * 2
    await world.send(*deployment(901, OLDER, "success", 3))
    assert state() == [("claimed", "merged", "not_deployed")] * 2


def ci_check(head: str, conclusion: str, check_id: int, at: str) -> dict[str, Any]:
    """A real completed `check_run` named ci on `head`."""
    payload = event_payload("check_run", "02-completed.json")
    run = {"name": "ci", "head_sha": head, "status": "completed", "conclusion": conclusion, "id": check_id}
    payload["check_run"].update({**run, "completed_at": at})
    return payload
