"""The deployment gate end to end: the real server as a custom deployment protection rule of
acme/web's `production`, signed `deployment_protection_rule` webhooks in, its answers read from
the GitHub stand-in; SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import func, select

from app.cli import main
from app.settings import Settings
from app.store.database import Database
from app.store.effects import effect_counts
from app.store.gate_approvals import gate_approvals
from app.store.tickets import TicketService, events_table
from github_standin import Deployment, Webhooks, running_standin
from policies.events import EventType
from policies.model import TicketKey
from support.world import CONFIG, REPO, World, pull_request_payload, standin_state
from tests.fakes import app_settings, running_server

BASE, M12, M14, HEAD = ("b0" * 20, "c1" * 20, "c4" * 20, "e9" * 20)
FIX14 = "f4" * 20
GATED = CONFIG + "deployments:\n  gate: [production]\n"


@pytest.fixture
async def gated(database: Database) -> AsyncIterator[tuple[World, Webhooks, Settings]]:
    """acme/web gating `production`, its history BASE, M12, M14, HEAD, and #14 to work on."""
    state = standin_state()
    repository = state.repositories[REPO]
    repository.files[".github/railyard.yml"] = GATED
    repository.branches["agent/14-limit"] = FIX14
    state.add_issue(REPO, 14, body="Rate-limit uploads", assignees=["olivia"])
    state.add_pull(REPO, 36, body="Fixes #14", head_ref="agent/14-limit", head_sha=FIX14)
    state.history.add_line(REPO, BASE, M12, M14, HEAD)
    async with running_standin(state) as standin:
        settings = app_settings(database.url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings) as server:
            yield World(server, state, database), Webhooks(state, standin.url), settings


async def burst(world: World, *events: tuple[str, dict[str, Any]]) -> None:
    """GitHub sends these events one after the other; wait once until all are processed (one
    issue's comments are processed in order)."""
    for event, payload in events:
        response = await world.server.deliver(event, json.dumps(payload).encode())
        assert response.status == 202
    await world.settle()


def said(world: World, login: str, body: str, number: int) -> tuple[str, dict[str, Any]]:
    """`login` writes `body` on issue `number`: its webhook."""
    return "issue_comment", world.write(login, body, number)


def delivered(world: World, number: int, pull: int, branch: str) -> list[tuple[str, dict[str, Any]]]:
    """Ticket `number` published, claimed by cody, delivered on `branch` through PR `pull`."""
    head = world.github.repositories[REPO].branches[branch]
    return [
        said(world, "rachel", "/publish", number),
        said(world, "cody", "/claim", number),
        ("pull_request", pull_request_payload("opened", pull, f"Fixes #{number}", ref=branch, head=head)),
        said(world, "cody", f"/deliver branch={branch} Done.", number),
    ]


def twelve_accepted_fourteen_delivered(world: World) -> list[tuple[str, dict[str, Any]]]:
    """#12 delivered through PR #34 and accepted by rita; #14 delivered through PR #36."""
    return [
        *delivered(world, 12, 34, "agent/12-fix"),
        said(world, "rita", "/accept", 12),
        *delivered(world, 14, 36, "agent/14-limit"),
    ]


def merged(world: World, pull: int, number: int, branch: str, merge: str) -> tuple[str, dict[str, Any]]:
    """PR `pull` (fixing `number`) merged as `merge`."""
    repository = world.github.repositories[REPO]
    stored = repository.pulls[pull]
    stored.state, stored.merged, stored.merge_commit_sha = "closed", True, merge
    payload = pull_request_payload(
        "closed", pull, f"Fixes #{number}", ref=branch, head=repository.branches[branch], merged=True,
        state="closed", updated="2026-11-30T11:00:00Z",
    )  # fmt: skip
    payload["pull_request"]["merge_commit_sha"] = merge
    return "pull_request", payload


async def gate_cli(settings: Settings, sha: str) -> tuple[int, str]:
    """`railyard gate acme/web --environment production --sha SHA`: exit status and its output."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["gate", REPO, "--environment", "production", "--sha", sha]
    code = await asyncio.to_thread(main, argv, settings=settings, out=out, err=err)
    return code, out.getvalue() + err.getvalue()


def recorded(world: World) -> tuple[int, dict[str, int]]:
    """How many events the record holds, and its effects by status."""
    with world.database.read() as connection:
        events = connection.execute(select(func.count()).select_from(events_table)).scalar_one()
    return events, effect_counts(world.database)


def gated_events(world: World, number: int) -> list[dict[str, Any]]:
    history = TicketService(world.database).history(TicketKey(REPO, number))
    return [dict(r.event.data) for r in history if r.event.type is EventType.DEPLOYMENT_GATED]


async def test_a_deployment_is_rejected_naming_the_unaccepted_ticket_then_approved_once_accepted(
    gated: tuple[World, Webhooks, Settings],
) -> None:
    """#12 accepted and #14 merged unaccepted, both since production's last success: rejected,
    naming #14 alone (and `railyard gate` says the same, recording nothing); staging (not gated)
    and an unsigned request get no answer; #14 accepted, the re-run is approved."""
    world, hooks, settings = gated
    repository = world.github.repositories[REPO]
    await burst(
        world,
        *twelve_accepted_fourteen_delivered(world),
    )
    assert (world.ticket(12).work.value, world.ticket(14).work.value) == ("accepted", "delivered")
    await burst(
        world,
        merged(world, 34, 12, "agent/12-fix", M12),
        merged(world, 36, 14, "agent/14-limit", M14),
        ("deployment_status", hooks.deployment_status(repository, Deployment(900, BASE), "success")),
    )

    first = hooks.deployment_protection_rule(repository, Deployment(901, HEAD), 77)
    staging = hooks.deployment_protection_rule(repository, Deployment(902, HEAD, environment="staging"), 78)
    forged = hooks.deployment_protection_rule(repository, Deployment(904, HEAD), 79)
    refused = await world.server.deliver(
        "deployment_protection_rule", json.dumps(forged).encode(), secret="x"
    )
    assert refused.status == 401
    await burst(world, ("deployment_protection_rule", first), ("deployment_protection_rule", staging))
    assert world.github.history.answers(REPO, 79) == []
    [rejected] = world.github.history.answers(REPO, 77)
    assert (rejected["environment_name"], rejected["state"]) == ("production", "rejected")
    assert rejected["comment"] == "railyard rejected: #14 is not accepted."
    assert [(e["state"], e["blocker"]) for e in gated_events(world, 14)] == [("rejected", "not_accepted")]
    assert [(e["state"], e["blocker"]) for e in gated_events(world, 12)] == [("rejected", None)]

    assert world.github.history.answers(REPO, 78) == []
    assert world.github.calls_to("POST", f"/repos/{REPO}/actions/runs/78/") == []
    before = recorded(world)
    printed = ["railyard rejected: #14 is not accepted.", f"range: since {BASE[:12]}", "  #12 is accepted"]
    assert await gate_cli(settings, HEAD) == (3, "\n".join([*printed, "  #14 is not accepted", ""]))
    assert recorded(world) == before

    rerun = hooks.deployment_protection_rule(repository, Deployment(903, HEAD), 77)
    await world.say("rita", "/accept", 14)
    await world.send("deployment_protection_rule", rerun)
    answers = world.github.history.answers(REPO, 77)
    assert [answer["state"] for answer in answers] == ["rejected", "approved"]
    assert (
        answers[1]["comment"]
        == "railyard approved: every ticket this deployment brings is accepted: #12; #14."
    )
    assert len(world.github.calls_to("POST", f"/repos/{REPO}/actions/runs/77/")) == 2


async def test_a_pr_body_edited_after_the_merge_does_not_bring_another_ticket(
    gated: tuple[World, Webhooks, Settings],
) -> None:
    """#12 accepted and merged as M12 by PR #34; #14 delivered, not accepted, not merged. After
    the merge PR #34's body is edited to add `Refs #14`. Deploying M12 (BASE was production's
    last success) brings #12 only: approved. (SPEC: the tickets a deployment brings are those
    whose merge commit it contains; edits after the merge never make a ticket merged.)"""
    world, hooks, _ = gated
    repository = world.github.repositories[REPO]
    await burst(
        world,
        *twelve_accepted_fourteen_delivered(world),
        merged(world, 34, 12, "agent/12-fix", M12),
        ("deployment_status", hooks.deployment_status(repository, Deployment(900, BASE), "success")),
    )
    assert world.ticket(12).rails.integration.value == "merged"
    body = "Fixes #12\n\nSee also Refs #14"
    repository.pulls[34].body = body
    edited = pull_request_payload(
        "edited", 34, body, ref="agent/12-fix", head=repository.branches["agent/12-fix"], merged=True,
        state="closed", updated="2026-11-30T12:00:00Z", merged_at="2026-11-30T11:00:00Z",
    )  # fmt: skip
    edited["pull_request"]["merge_commit_sha"] = M12
    await burst(world, ("pull_request", edited))
    assert world.ticket(14).rails.integration.value != "merged"

    request = hooks.deployment_protection_rule(repository, Deployment(901, M12), 77)
    await burst(world, ("deployment_protection_rule", request))
    [answer] = world.github.history.answers(REPO, 77)
    assert (answer["state"], answer["comment"]) == (
        "approved",
        "railyard approved: every ticket this deployment brings is accepted: #12.",
    )


async def twelve_accepted_fourteen_merged_base_deployed(world: World, hooks: Webhooks) -> None:
    """#12 accepted and merged as M12, #14 merged unaccepted as M14, production's last success
    BASE (deployment 900): the starting point of the REST-forgery tests."""
    repository = world.github.repositories[REPO]
    await burst(
        world,
        *twelve_accepted_fourteen_delivered(world),
        merged(world, 34, 12, "agent/12-fix", M12),
        merged(world, 36, 14, "agent/14-limit", M14),
        ("deployment_status", hooks.deployment_status(repository, Deployment(900, BASE), "success")),
    )


async def test_a_success_posted_through_the_rest_api_for_a_deployment_no_rule_guarded_starts_no_range(
    gated: tuple[World, Webhooks, Settings],
) -> None:
    """#12 accepted and merged as M12, #14 merged unaccepted as M14. The gate approves deploying
    M12 (BASE the last success: the bootstrap), and that deployment succeeds. Then cody, who has
    push access, creates deployment 905 of HEAD in production through the REST API and posts its
    `success` (no protection rule guards that API; GitHub sends the same `deployment_status`). The
    next request for HEAD is judged from M12, the newest success the gate approved: rejected,
    naming #14; `railyard gate` says the same. Both answers are kept by the repository's id."""
    world, hooks, settings = gated
    repository = world.github.repositories[REPO]
    await twelve_accepted_fourteen_merged_base_deployed(world, hooks)
    await burst(
        world,
        (
            "deployment_protection_rule",
            hooks.deployment_protection_rule(repository, Deployment(901, M12), 77),
        ),
    )
    [approved] = world.github.history.answers(REPO, 77)
    assert approved["state"] == "approved"
    forged = Deployment(905, HEAD, creator="cody")
    await burst(
        world,
        ("deployment_status", hooks.deployment_status(repository, Deployment(901, M12), "success")),
        ("deployment_status", hooks.deployment_status(repository, forged, "success")),
    )
    await burst(
        world,
        (
            "deployment_protection_rule",
            hooks.deployment_protection_rule(repository, Deployment(906, HEAD), 78),
        ),
    )
    [rejected] = world.github.history.answers(REPO, 78)
    assert (rejected["state"], rejected["comment"]) == ("rejected", "railyard rejected: #14 is not accepted.")
    code, printed = await gate_cli(settings, HEAD)
    assert code == 3 and f"range: since {M12[:12]}" in printed
    with world.database.read() as connection:
        columns = (gate_approvals.c.repository_id, gate_approvals.c.sha, gate_approvals.c.approved)
        kept = connection.execute(select(*columns).order_by(gate_approvals.c.request)).all()
    assert [tuple(row) for row in kept] == [(repository.id, M12, True), (repository.id, HEAD, False)]


async def test_a_success_forged_after_the_first_request_was_rejected_starts_no_range(
    gated: tuple[World, Webhooks, Settings],
) -> None:
    """#12 accepted and merged as M12, #14 merged unaccepted as M14; BASE was production's last
    success. The gate's first request there, for HEAD (deployment 901), is rejected naming #14.
    Then cody, who has push access, creates deployment 905 of HEAD through the REST API and posts
    its `success`. The next request for HEAD (906) must not start from it (an empty range,
    approved with #14 in it): the rejection is kept with BASE, where its range started, and HEAD
    was never approved nor a range's start, so the range starts at BASE: rejected, naming #14
    again."""
    world, hooks, settings = gated
    repository = world.github.repositories[REPO]
    await twelve_accepted_fourteen_merged_base_deployed(world, hooks)
    first = hooks.deployment_protection_rule(repository, Deployment(901, HEAD), 77)
    await burst(world, ("deployment_protection_rule", first))
    [rejected] = world.github.history.answers(REPO, 77)
    assert (rejected["state"], rejected["comment"]) == ("rejected", "railyard rejected: #14 is not accepted.")
    forged = Deployment(905, HEAD, creator="cody")
    await burst(world, ("deployment_status", hooks.deployment_status(repository, forged, "success")))
    again = hooks.deployment_protection_rule(repository, Deployment(906, HEAD), 78)
    await burst(world, ("deployment_protection_rule", again))
    [answer] = world.github.history.answers(REPO, 78)
    assert (answer["state"], answer["comment"]) == ("rejected", "railyard rejected: #14 is not accepted.")
    code, printed = await gate_cli(settings, HEAD)
    assert code == 3 and f"range: since {BASE[:12]}" in printed
