"""Arrival order does not matter: every permutation of a ticket's repository events, through
the handlers, ends in the same rails and the same set of recorded observations."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.bootstrap import Shell, wire
from app.github.client import GitHubClient
from app.runtime.metrics import Metrics
from github_standin import StandinState, running_standin
from handlers import ROUTER
from handlers.routing import WebhookEvent
from policies.commands import Claim, Publish
from policies.model import TicketKey
from tests.conftest import sqlite_database
from tests.fakes import REQUESTER, RUNNER, Comments, app_settings, example

HEAD, MERGE = "c" * 40, "d" * 40
BRANCH = "agent/12-order"
MERGED_AT = "2026-11-30T11:00:00Z"
FORK = "mallory/order"


def _pull(action: str, updated: str, *, merged: bool = False) -> tuple[str, dict[str, Any]]:
    payload = json.loads(example("api.github.com", "pull_request", "01-opened.json"))
    payload["action"] = action
    payload["pull_request"].update(
        {
            "number": 50, "body": "Fixes #12", "state": "closed" if merged else "open", "merged": merged,
            "merge_commit_sha": MERGE, "updated_at": updated, "html_url": "https://github.com/x/pull/50",
        }
    )  # fmt: skip
    payload["pull_request"]["head"].update({"ref": BRANCH, "sha": HEAD})
    return "pull_request", payload


def _unrelated(action: str, body: str, updated: str) -> tuple[str, dict[str, Any]]:
    """PR #70 from another branch, merged at 11:00 with a body linking nothing, then maybe edited."""
    payload = json.loads(example("api.github.com", "pull_request", "01-opened.json"))
    payload["action"] = action
    payload["pull_request"].update(
        {
            "number": 70, "body": body, "state": "closed", "merged": True, "merged_at": MERGED_AT,
            "merge_commit_sha": "7" * 40, "updated_at": updated, "html_url": "https://github.com/x/pull/70",
        }
    )  # fmt: skip
    payload["pull_request"]["head"].update({"ref": "chore/other", "sha": "6" * 40})
    return "pull_request", payload


def _check(conclusion: str, check_id: int, at: str) -> tuple[str, dict[str, Any]]:
    payload = json.loads(example("api.github.com", "check_run", "02-completed.json"))
    payload["check_run"].update(
        {
            "name": "ci",
            "head_sha": HEAD,
            "status": "completed",
            "conclusion": conclusion,
            "id": check_id,
            "completed_at": at,
        }
    )
    return "check_run", payload


def _push() -> tuple[str, dict[str, Any]]:
    payload = json.loads(example("api.github.com", "push", "01-none.json"))
    payload.update({"ref": f"refs/heads/{BRANCH}", "after": HEAD})
    payload["repository"]["pushed_at"] = 1_795_000_000
    return "push", payload


EVENTS = [
    _push(),
    _pull("opened", "2026-11-30T10:00:00Z"),
    _check("failure", 1, "2026-11-30T10:05:00Z"),
    _check("success", 2, "2026-11-30T10:10:00Z"),
    _pull("closed", "2026-11-30T11:00:00Z", merged=True),
]


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[tuple[Shell, StandinState]]:
    """Handlers' collaborators over SQLite, GitHub answered by the in-process stand-in."""
    state = StandinState()
    state.add_installation(7, "acme")
    database = sqlite_database(tmp_path / "order.db")
    async with running_standin(state) as standin:
        github = GitHubClient(app_settings(database.url, GITHUB_API_URL=standin.url, APP_ID="1"), Metrics())
        await github.start()
        yield wire(database, github=github, app_id=1), state
        await github.close()
    database.close()


async def run(
    services: Shell, state: StandinState, repository: str, order: list[tuple[str, dict[str, Any]]]
) -> tuple[Any, frozenset[str]]:
    """A fresh claimed ticket in its own repository, the events in `order`; its rails and observations."""
    state.add_repository(repository).branches[BRANCH] = HEAD
    key, comments = TicketKey(repository, 12), Comments()
    services.tickets.execute(key, Publish("Order"), comments.context(REQUESTER))
    services.tickets.execute(key, Claim(branch=BRANCH), comments.context(RUNNER))
    for number, (event, payload) in enumerate(order):
        payload = json.loads(json.dumps(payload))
        payload["installation"] = {"id": 7}
        payload["repository"]["full_name"] = repository
        payload["repository"]["id"] = state.repositories[repository].id  # each repository its own id
        head = payload["pull_request"]["head"] if event == "pull_request" else {}
        if head.get("repo", {}).get("full_name") != FORK:  # the head branch is in the repository itself
            head.setdefault("repo", {})["full_name"] = repository
        delivery = WebhookEvent(f"{repository}-{number}", event, payload.get("action"), 7, payload)
        for handler in ROUTER.handlers_for(event, delivery.action):
            await handler(delivery, services.ports)
    ticket = services.tickets.load(key)
    observed = frozenset(
        json.dumps(dict(r.event.data), sort_keys=True)
        for r in services.tickets.history(key)
        if r.event.type.value.endswith("_observed")
    )
    return (ticket.work, ticket.rails.integration, dict(ticket.rails.deployments)), observed


async def test_every_order_and_every_duplicate_ends_the_same(services: tuple[Shell, StandinState]) -> None:
    """120 orders of five events, each also with one duplicated: one outcome, one set of observations."""
    handlers, state = services
    outcomes = set()
    observation_sets = set()
    for index, order in enumerate(itertools.permutations(EVENTS)):
        for duplicate in (None, index % len(EVENTS)):
            sequence = list(order) if duplicate is None else [*order, order[duplicate]]
            rails, observed = await run(handlers, state, f"acme/order-{index}-{duplicate}", sequence)
            outcomes.add(repr(rails))
            observation_sets.add(observed)
    assert len(outcomes) == 1, outcomes
    assert "merged" in outcomes.pop() and len(observation_sets) == 1


LATE_LINK = [
    _pull("opened", "2026-11-30T10:00:00Z"),
    _unrelated("closed", "Tidy the logs", "2026-11-30T11:00:00Z"),
    _unrelated("edited", "Tidy the logs\n\nRefs #12", "2026-11-30T12:00:00Z"),
]


async def test_a_link_added_after_an_unrelated_merge_never_merges_in_any_order(
    services: tuple[Shell, StandinState],
) -> None:
    """Every order (and duplicate) of an open linked PR, an unrelated merge and the edit that
    links it afterwards: the ticket stays pull_request_open, with one set of observations."""
    handlers, state = services
    outcomes, observation_sets = set(), set()
    for index, order in enumerate(itertools.permutations(LATE_LINK)):
        for duplicate in (None, index % len(LATE_LINK)):
            sequence = list(order) if duplicate is None else [*order, order[duplicate]]
            rails, observed = await run(handlers, state, f"acme/late-{index}-{duplicate}", sequence)
            outcomes.add(repr(rails))
            observation_sets.add(observed)
    assert len(outcomes) == 1, outcomes
    assert "pull_request_open" in outcomes.pop() and len(observation_sets) == 1


def _fork_pull(action: str, updated: str, *, merged: bool = False) -> tuple[str, dict[str, Any]]:
    """PR #80 from a fork whose branch has the claimed branch's name, linking nothing by its body."""
    event, payload = _pull(action, updated, merged=merged)
    payload["pull_request"].update(
        {"number": 80, "body": "Just code", "html_url": "https://github.com/x/pull/80"}
    )
    payload["pull_request"]["head"]["repo"] = {"full_name": FORK}
    return event, payload


FORKED = [
    _push(),
    _fork_pull("opened", "2026-11-30T10:00:00Z"),
    _check("failure", 1, "2026-11-30T10:05:00Z"),
    _fork_pull("closed", "2026-11-30T11:00:00Z", merged=True),
]


async def test_a_fork_named_like_the_claimed_branch_links_nothing_in_any_order(
    services: tuple[Shell, StandinState],
) -> None:
    """Every order of a push, a fork's PR from a branch of the same name, a failing check on its
    head and its merge: the ticket stays branch_reported and never hears of the fork's PR."""
    handlers, state = services
    outcomes, observation_sets = set(), set()
    for index, order in enumerate(itertools.permutations(FORKED)):
        rails, observed = await run(handlers, state, f"acme/fork-{index}", list(order))
        outcomes.add(repr(rails))
        observation_sets.add(observed)
        assert not any('"number": 80' in o for o in observed)
    assert len(outcomes) == 1, outcomes
    assert "branch_reported" in outcomes.pop() and len(observation_sets) == 1
