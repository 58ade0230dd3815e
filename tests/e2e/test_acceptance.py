"""Acceptance that stays true, end to end: the real server (its hourly re-check looking every
50 ms, its clock moved by the test), signed webhooks in, the GitHub stand-in answering; each way
an acceptance stops holding, and the `railyard` check-run's conclusion at each step."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.store.database import Database
from app.store.tickets import TicketService
from app.views.status_json import parse_status_line
from github_standin import running_standin
from policies.events import EventType
from policies.model import TicketKey
from support.world import CONFIG, FIX, REPO, World, event_payload, pull_request_payload, standin_state
from tests.fakes import app_settings, running_server

KEY = TicketKey(REPO, 12)
TREE = "7" * 40
AMENDED, CHANGED = "a" * 40, "b" * 40
CI_APP = 15368  # GitHub Actions' app id


@dataclass
class Wall:
    """The server's clock: the real time, moved forward by `ahead`."""

    ahead: timedelta = timedelta()

    def __call__(self) -> float:
        return time.time() + self.ahead.total_seconds()

    def stamp(self) -> str:
        return datetime.fromtimestamp(self(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Setup = tuple[World, Wall]


async def _world(tmp_path: Path, config: str) -> AsyncIterator[Setup]:
    wall = Wall()
    state = standin_state()
    repository = state.repositories[REPO]
    repository.files[".github/railyard.yml"] = config
    repository.trees.update({FIX: TREE, AMENDED: TREE})
    repository.commits.update({AMENDED, CHANGED})
    state.team_memberships.update(
        {("acme", "reviewers", "cody"): "active", ("acme", "agents", "ava"): "active",
         ("acme", "reviewers", "ava"): "active"}
    )  # fmt: skip
    async with running_standin(state) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = app_settings(
            url, GITHUB_API_URL=standin.url, APP_ID="1", ACCEPTANCE_RECHECK_SECONDS="0.05"
        )
        async with running_server(settings, clock=wall) as server:
            yield World(server, state, Database(url)), wall


@pytest.fixture
async def accepting(tmp_path: Path) -> AsyncIterator[Setup]:
    """acme/web whose acceptances expire after a day, with cody a reviewer too and ava an agent."""
    config = CONFIG + "acceptance:\n  expires_after_days: 1\nagents: ['@acme/agents']\n"
    async for setup in _world(tmp_path, config):
        yield setup


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[Setup]:
    """acme/web with the default acceptance settings and no agents listed (cody a reviewer too)."""
    async for setup in _world(tmp_path, CONFIG):
        yield setup


@pytest.fixture
async def strict(tmp_path: Path) -> AsyncIterator[Setup]:
    """acme/web that accepts only work whose CI passed."""
    async for setup in _world(tmp_path, CONFIG + "acceptance:\n  ci: require\n"):
        yield setup


def check(world: World, sha: str) -> tuple[str, str]:
    """(conclusion, title) of the `railyard` check on a commit."""
    [run] = [r for r in world.github.check_runs.values() if r.head_sha == sha and r.name == "railyard"]
    return run.conclusion, run.output["title"]


def events(world: World, kind: EventType) -> list[dict[str, Any]]:
    return [dict(r.event.data) for r in TicketService(world.database).history(KEY) if r.event.type is kind]


def status_object(world: World) -> dict[str, Any]:
    [body] = world.status_comments()
    found = parse_status_line(body)
    assert found is not None
    return found


async def until(condition: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "never happened"
        await asyncio.sleep(0.05)


async def delivered(world: World) -> None:
    """#12 published, claimed by cody, PR #34 opened with `Fixes #12`, delivered on its branch."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12"))
    await world.say("cody", "/deliver branch=agent/12-fix Resumable uploads with a retry cap.")


async def test_an_expired_acceptance_asks_for_action_and_a_fresh_accept_renews_it(accepting: Setup) -> None:
    """Accepted: green. Two days later (expiry: one) the hourly re-check records `expired` once and
    the check turns action_required; a new `/accept` renews it and the check is green again."""
    world, wall = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    assert check(world, FIX) == ("success", "the linked ticket is accepted at this commit")
    accepted = status_object(world)["acceptance"]
    assert accepted["valid"] is True and accepted["tree"] == TREE and accepted["ci"]["state"] == "none"

    wall.ahead = timedelta(days=2)
    await until(lambda: events(world, EventType.ACCEPTANCE_INVALIDATED))
    await world.settle()
    assert check(world, FIX) == ("action_required", "#12: acceptance expired")
    await asyncio.sleep(0.3)  # more rounds of the re-check
    assert len(events(world, EventType.ACCEPTANCE_INVALIDATED)) == 1
    status = status_object(world)
    assert status["work"] == "accepted"
    assert (status["acceptance"]["valid"], status["acceptance"]["reason"]) == (False, "expired")
    assert "/accept" in [step["command"] for step in status["next"]]
    assert "Acceptance no longer holds" in world.status_comments()[0]

    await world.say("rita", "/accept", created_at=wall.stamp())
    renewal = events(world, EventType.ACCEPTED)[-1]
    assert renewal["renews"] is not None
    assert check(world, FIX) == ("success", "the linked ticket is accepted at this commit")
    assert status_object(world)["acceptance"]["valid"] is True


async def test_a_reviewer_removed_from_the_team_invalidates_the_acceptance(accepting: Setup) -> None:
    """rita leaves @acme/reviewers: the next `/status` records `reviewer_lost_role`; the check asks."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    assert check(world, FIX)[0] == "success"
    del world.github.team_memberships[("acme", "reviewers", "rita")]
    await world.say("olivia", "/status")
    await world.settle()
    [lapse] = events(world, EventType.ACCEPTANCE_INVALIDATED)
    assert lapse["reason"] == "reviewer_lost_role"
    assert check(world, FIX) == (
        "action_required",
        "#12: acceptance no longer holds: the reviewer lost the role",
    )
    assert status_object(world)["acceptance"]["reason"] == "reviewer_lost_role"


async def test_a_high_risk_label_after_a_self_verification_invalidates_it(plain: Setup) -> None:
    """cody self-verifies; `risk:high` is added: recorded `now_high_risk`, check action_required."""
    world, _ = plain
    await delivered(world)
    await world.say("cody", "/accept --self")
    assert check(world, FIX)[0] == "success"
    world.github.repositories[REPO].issues[12].labels.append("risk:high")
    labeled = event_payload("issues", "10-labeled.json", action="labeled")
    labeled["issue"]["number"] = 12
    labeled["label"]["name"] = "risk:high"
    await world.send("issues", labeled)
    await world.settle()
    [lapse] = events(world, EventType.ACCEPTANCE_INVALIDATED)
    assert lapse["reason"] == "now_high_risk"
    conclusion, title = check(world, FIX)
    assert conclusion == "action_required" and "high-risk" in title


async def test_a_force_push_with_the_same_tree_stays_green_and_a_changed_file_does_not(
    accepting: Setup,
) -> None:
    """An amended commit (same tree) passes as "same content"; a head with another tree asks again."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    await world.send("pull_request", pull_request_payload("synchronize", 34, "Fixes #12", head=AMENDED))
    await world.settle()
    assert check(world, AMENDED) == ("success", "the linked ticket is accepted at this commit")
    await world.send("pull_request", pull_request_payload("synchronize", 34, "Fixes #12", head=CHANGED))
    await world.settle()
    assert check(world, CHANGED) == ("action_required", "#12: accepted commit differs from head")


async def test_ci_require_refuses_accept_while_the_delivered_commit_fails(strict: Setup) -> None:
    """A failing `build` on the delivered commit: `/accept` refused naming it; passed: accepted, recorded."""
    world, _ = strict
    run = world.github.add_check_run(
        REPO, "build", FIX, status="completed", conclusion="failure", app_id=CI_APP
    )
    await delivered(world)
    await world.say("rita", "/accept")
    assert status_object(world)["work"] == "delivered"
    [reply] = [r for r in world.replies() if "ci_not_passed" in r or "CI on the delivered commit" in r]
    assert "build" in reply
    run.conclusion = "success"
    await world.say("rita", "/accept")
    assert status_object(world)["acceptance"]["ci"] == {"state": "passed", "checks": ["build"]}


async def test_a_bot_or_a_listed_agent_cannot_accept(accepting: Setup) -> None:
    """ava (in @acme/agents and @acme/reviewers) is refused; so is cody's `/accept --self` (an agent
    too), and a Bot account named as a reviewer."""
    world, _ = accepting
    await delivered(world)
    await world.say("ava", "/accept")
    await world.say("cody", "/accept --self")
    assert status_object(world)["work"] == "delivered"
    assert len([reply for reply in world.replies() if "agents never accept" in reply]) == 2


async def test_an_edited_description_is_recorded_and_flagged(accepting: Setup) -> None:
    """An `issues.edited` changing the body of a claimed ticket: recorded, shown, work untouched."""
    world, _ = accepting
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    edited = event_payload("issues", "01-edited.json", action="edited")
    edited["issue"].update({"number": 12, "body": "Make uploads resumable, and cap retries at 5"})
    edited["changes"] = {"body": {"from": "Make uploads resumable"}}
    await world.send("issues", edited)
    await world.settle()
    [changed] = events(world, EventType.DESCRIPTION_CHANGED)
    assert changed["old_digest"] != changed["new_digest"]
    status = status_object(world)
    assert status["work"] == "claimed" and status["description_changed"] == "claim"
    assert "The description changed after the claim" in world.status_comments()[0]


async def test_a_same_named_run_by_another_app_cannot_pass_a_failing_required_check(strict: Setup) -> None:
    """`build` fails on the delivered commit; a newer passing run named `build` by another app (a
    workflow the runner pushed can create one) does not let `/accept` through `ci: require`."""
    world, _ = strict
    world.github.apps[4242] = "runners-own-app"
    world.github.add_check_run(REPO, "build", FIX, status="completed", conclusion="failure", app_id=CI_APP)
    world.github.add_check_run(REPO, "build", FIX, status="completed", conclusion="success", app_id=4242)
    await delivered(world)
    await world.say("rita", "/accept")
    assert status_object(world)["work"] == "delivered"
    assert [r for r in world.replies() if "CI on the delivered commit" in r and "build" in r]


async def test_an_override_by_the_reviewer_of_a_valid_acceptance_is_refused_and_records_no_lapse(
    plain: Setup,
) -> None:
    """rita (a reviewer and a maintainer) accepts; her `/accept --override` while it still holds is
    refused as wrong_state, and no `acceptance_invalidated` says she lost the reviewer role."""
    world, _ = plain
    world.github.team_memberships[("acme", "maintainers", "rita")] = "active"
    await delivered(world)
    await world.say("rita", "/accept")
    await world.say("rita", "/accept --override Shipping it anyway.")
    assert events(world, EventType.ACCEPTANCE_INVALIDATED) == []
    assert len(events(world, EventType.ACCEPTED)) == 1
    assert status_object(world)["acceptance"]["valid"] is True
    assert [r for r in world.replies() if "its acceptance still holds" in r]


async def test_a_reviewer_who_renamed_is_judged_by_their_account_not_their_old_login(
    accepting: Setup,
) -> None:
    """rita accepts, renames to rita-old and leaves @acme/reviewers; a new account takes the login
    rita and joins the team: the acceptance no longer holds (her account lost the role)."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    gh = world.github
    gh.rename_user("rita", "rita-old")
    del gh.team_memberships[("acme", "reviewers", "rita")]
    gh.register_user("rita")
    gh.team_memberships[("acme", "reviewers", "rita")] = "active"
    await world.say("olivia", "/status")
    await world.settle()
    [lapse] = events(world, EventType.ACCEPTANCE_INVALIDATED)
    assert lapse["reason"] == "reviewer_lost_role"


async def test_a_reviewer_who_renamed_and_still_reviews_keeps_the_acceptance(accepting: Setup) -> None:
    """rita accepts and renames to rita2, still in @acme/reviewers: her acceptance still holds."""
    world, _ = accepting
    await delivered(world)
    await world.say("rita", "/accept")
    gh = world.github
    gh.team_memberships[("acme", "reviewers", "rita2")] = "active"  # the team follows the account
    gh.rename_user("rita", "rita2")
    del gh.team_memberships[("acme", "reviewers", "rita")]
    await world.say("olivia", "/status")
    await world.settle()
    assert events(world, EventType.ACCEPTANCE_INVALIDATED) == []
    assert status_object(world)["acceptance"]["valid"] is True
    assert check(world, FIX)[0] == "success"


async def test_the_check_is_still_written_when_a_linked_tickets_issue_is_gone(plain: Setup) -> None:
    """cody self-verifies #12, then the issue is deleted on GitHub: a push to the PR still gets its
    `railyard` check (judged on the record) instead of failing for ever on the issue's 404."""
    world, _ = plain
    await delivered(world)
    await world.say("cody", "/accept --self")
    del world.github.repositories[REPO].issues[12]
    await world.send("pull_request", pull_request_payload("synchronize", 34, "Fixes #12", head=AMENDED))
    await until(lambda: any(r.head_sha == AMENDED for r in world.github.check_runs.values()), timeout=20)
    assert check(world, AMENDED) == ("success", "the linked ticket is accepted at this commit")


async def accepted_then_closed(world: World, wall: Any, *, merged: bool) -> None:
    """#12 delivered and accepted by rita, PR #34 then closed (merged or not), and the clock two
    days on (past `accepting`'s one-day expiry)."""
    await delivered(world)
    await world.say("rita", "/accept")
    pull = world.github.repositories[REPO].pulls[34]
    pull.merged, pull.state = merged, "closed"
    closed = pull_request_payload(
        "closed", 34, "Fixes #12", merged=merged, state="closed", updated="2026-11-30T12:00:00Z"
    )
    await world.send("pull_request", closed)
    wall.ahead = timedelta(days=2)
    await world.settle()


async def description_edited(world: World) -> None:
    """#12's description edited on GitHub: a change that writes the status comment again."""
    edited = event_payload("issues", "01-edited.json", action="edited")
    edited["issue"].update({"number": 12, "body": "Make uploads resumable, and cap retries at 5"})
    edited["changes"] = {"body": {"from": "Make uploads resumable"}}
    await world.send("issues", edited)
    await world.settle()
    assert events(world, EventType.DESCRIPTION_CHANGED) != []


async def test_a_status_comment_rendered_after_the_expiry_says_expired_with_no_check_to_record_it(
    accepting: Setup,
) -> None:
    """PR #34 closed unmerged (no check is written for it again, and the hourly re-check looks
    only at open PRs): two days past the one-day expiry, the status comment written for an edit
    of the description judges the expiry itself, with nothing recorded."""
    world, wall = accepting
    await accepted_then_closed(world, wall, merged=False)
    await description_edited(world)
    assert events(world, EventType.ACCEPTANCE_INVALIDATED) == []
    shown = status_object(world)
    assert (shown["acceptance"]["valid"], shown["acceptance"]["reason"]) == (False, "expired")
    assert "/accept" in str(shown["next"]), shown["next"]


async def test_the_api_judges_an_expired_acceptance_expired_with_nothing_recorded(accepting: Setup) -> None:
    """PR #34 merged (the hourly re-check looks only at open PRs), then two days past the one-day
    expiry with no `acceptance_invalidated` recorded: the API's ticket, its listing and the status
    comment written since say the acceptance is not valid, `expired`, and offer the renewing `/accept`."""
    from tests.e2e.test_api import TICKETS, call

    world, wall = accepting
    await accepted_then_closed(world, wall, merged=True)
    _, ticket, _ = await call(world, "rita", "GET", f"{TICKETS}/12")
    _, listing, _ = await call(world, "rita", "GET", f"{TICKETS}?work=accepted")
    assert ticket["integration"] == "merged" and events(world, EventType.ACCEPTANCE_INVALIDATED) == []
    await description_edited(world)  # the status comment written after the expiry says so too
    for shown in (ticket, listing["tickets"][0], status_object(world)):
        assert (shown["acceptance"]["valid"], shown["acceptance"]["reason"]) == (False, "expired")
        assert "/accept" in str(shown["next"]), shown["next"]


async def test_an_agent_holding_only_runner_is_refused_as_an_agent(tmp_path: Path) -> None:
    """coder-bot[bot] (a Bot named as a runner) and nick (runner through @acme/agents, which
    `agents:` lists) send `/accept`: each is refused `agents_cannot_accept`, not `not_allowed`."""
    async for world, _ in _world(tmp_path, CONFIG + "agents: ['@acme/agents']\n"):
        world.github.team_memberships[("acme", "agents", "nick")] = "active"
        await delivered(world)
        await world.say("coder-bot[bot]", "/accept")
        await world.say("coder-bot[bot]", "/accept --override Shipping it.")
        await world.say("nick", "/accept")
        refused = [r["refusal_code"] for r in TicketService(world.database).refusals(KEY)]
        assert refused == ["agents_cannot_accept"] * 3, refused


async def test_a_failing_actions_job_named_railyard_counts_for_ci_require(strict: Setup) -> None:
    """An Actions job named `railyard` fails on the delivered commit: it is CI, not railyard's own
    check, so `/accept` under `ci: require` is refused as for any failing check."""
    world, _ = strict
    world.github.add_check_run(REPO, "railyard", FIX, status="completed", conclusion="failure", app_id=15368)
    world.github.add_check_run(REPO, "tests", FIX, status="completed", conclusion="success", app_id=15368)
    await delivered(world)
    await world.say("rita", "/accept")
    assert status_object(world)["work"] == "delivered", "accepted with a failing `railyard` job: ci passed"


def edited_after(world: World, seconds: float) -> dict[str, Any]:
    """#12's body edited on GitHub `seconds` from now (the stand-in answers the new text from
    now on), and the `issues.edited` webhook that says so."""
    issue = world.github.repositories[REPO].issues[12]
    edited = event_payload("issues", "01-edited.json", action="edited")
    moment = (datetime.now(UTC) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    edited["issue"].update({"number": 12, "title": issue.title, "updated_at": moment})
    edited["changes"] = {"body": {"from": issue.body}}
    issue.body = edited["issue"]["body"] = "Make uploads resumable, and cap retries at 5"
    return edited


@pytest.mark.parametrize("edit_first", [True, False], ids=["edit-processed-first", "accept-processed-first"])
async def test_an_accept_that_read_a_description_edited_after_its_comment_is_flagged(
    plain: Setup, edit_first: bool
) -> None:
    """rita writes `/accept`; half a minute later the body is edited, before the accept runs, so
    it reads (and binds) text she never saw. Whether railyard processes the edit or the accept
    first, the acceptance is recorded and flagged "the description changed after acceptance"."""
    world, _ = plain
    await delivered(world)
    accept = world.write("rita", "/accept")  # written now: its `created_at`
    edited = edited_after(world, 30)
    if edit_first:
        await world.send("issues", edited)
    response = await world.server.deliver("issue_comment", json.dumps(accept).encode())
    assert response.status == 202
    await world.settle()
    if not edit_first:
        await world.send("issues", edited)
    [accepted] = events(world, EventType.ACCEPTED)
    [changed] = events(world, EventType.DESCRIPTION_CHANGED)
    assert accepted["description_digest"] == changed["new_digest"]  # the edited text, as read
    assert "read_by_acceptance" not in changed
    status = status_object(world)
    assert (status["work"], status["description_changed"]) == ("accepted", "acceptance")
    assert "The description changed after acceptance" in world.status_comments()[0]
