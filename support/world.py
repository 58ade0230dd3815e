"""The e2e world: the real server, the GitHub stand-in seeded with acme/web, and the verbs
tests use (someone comments, GitHub sends an event, wait until everything settled)."""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.contracts.effect_types import status_key
from app.store.database import Database
from app.store.effects import effect_counts, marker
from app.store.signs import read_clocks
from app.store.tickets import TicketService
from app.views.render import StatusView
from app.views.status_json import status_comment_body
from github_standin import StandinState, account_id, fork_id, repository_id
from policies.model import TicketKey
from support.payloads import example
from support.servers import drained

REPO = "acme/web"
MAIN, FIX = "1" * 40, "f" * 40
CI_APP_ID = 15368  # GitHub Actions' app id: the CI app whose check runs e2e tests add
CONFIG = """
roles:
  requester: ["@acme/product"]
  task_owner: ["@acme/leads"]
  runner: ["@acme/agents", "coder-bot[bot]"]
  reviewer: ["@acme/reviewers"]
  repository_maintainer: ["@acme/maintainers"]
  release_owner: ["@acme/release"]
high_risk:
  labels: ["risk:high"]
"""
MEMBERS = {
    ("product", "rachel"): "active",
    ("agents", "cody"): "active",
    ("reviewers", "rita"): "active",
    ("reviewers", "pat"): "pending",
    ("maintainers", "max"): "active",
}
_comment_ids = itertools.count(5_000_000_001)


def standin_state() -> StandinState:
    """acme/web with a configuration file, teams, a branch, issues #12 and #13, PRs #34 and #35."""
    state = StandinState()
    state.add_installation(7, "acme")
    repository = state.add_repository(REPO, files={".github/railyard.yml": CONFIG})
    repository.branches.update({"main": MAIN, "agent/12-fix": FIX})
    state.add_issue(REPO, 12, body="Make uploads resumable", assignees=["olivia"])
    state.add_issue(REPO, 13, body="")
    state.add_issue(REPO, 40, body="Not a ticket")
    state.add_pull(REPO, 34, body="Fixes #12", head_ref="agent/12-fix", head_sha=FIX)
    state.add_pull(REPO, 35, body="Fixes #12\nCloses #13", head_ref="agent/both", head_sha="e" * 40)
    state.team_memberships.update({("acme", team, login): s for (team, login), s in MEMBERS.items()})
    # `state.add_check_run(REPO, "tests", FIX, conclusion="success", app_id=CI_APP_ID)` is a CI run.
    state.apps[CI_APP_ID] = "github-actions"
    return state


def comment_payload(
    login: str, body: str, number: int, *, pr: bool = False, user_id: int | None = None, **comment: Any
) -> dict[str, Any]:
    """A real `issue_comment.created` payload, pointed at acme/web and the given issue or PR.

    `user_id` is the author's account (by default the stand-in's stable id for the login).
    """
    payload: dict[str, Any] = json.loads(example("api.github.com", "issue_comment", "02-created.json"))
    comment_id = comment.pop("id", None) or next(_comment_ids)
    payload["installation"] = {"id": 7, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNw=="}
    payload["repository"]["full_name"], payload["repository"]["name"] = REPO, "web"
    payload["repository"]["id"] = repository_id(REPO)  # the stand-in's acme/web
    payload["issue"]["number"] = number
    if pr:
        payload["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/{REPO}/pulls/{number}"}
    created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    payload["comment"].update({"id": comment_id, "body": body, "created_at": created, "updated_at": created})
    account = user_id if user_id is not None else account_id(login)
    payload["comment"]["user"].update({"login": login, "type": "User", "id": account})
    payload["comment"].update(comment)
    payload["sender"].update({"login": login, "id": account})
    return payload


@dataclass
class World:
    """The server, the stand-in and the database, with the verbs tests use."""

    server: Any
    github: StandinState
    database: Database

    def write(
        self, login: str, body: str, number: int = 12, *, pr: bool = False, **extra: Any
    ) -> dict[str, Any]:
        """The comment exists on GitHub (the stand-in), and this is its webhook payload."""
        user_type = "Bot" if login.endswith("[bot]") else "User"
        written = self.github.add_comment(REPO, number, body, user=login, user_type=user_type)
        account = self.github.user_id(login)
        payload = comment_payload(login, body, number, pr=pr, id=written.id, user_id=account, **extra)
        payload["comment"]["user"]["type"] = user_type
        return payload

    async def send(self, event: str, payload: dict[str, Any]) -> None:
        """GitHub sends an event; wait until it is processed."""
        response = await self.server.deliver(event, json.dumps(payload).encode())
        assert response.status == 202
        await self.settle()

    async def say(self, login: str, body: str, number: int = 12, *, pr: bool = False, **extra: Any) -> int:
        """`login` writes a comment; wait until it has been processed and answered."""
        action = extra.pop("action", "created")
        payload = self.write(login, body, number, pr=pr, **extra)
        payload["action"] = action
        response = await self.server.deliver("issue_comment", json.dumps(payload).encode())
        assert response.status == 202
        await self.settle()
        return int(payload["comment"]["id"])

    async def settle(self, timeout: float = 60.0) -> None:
        """Wait for the worker and the outbox to finish (retries after faults back off for seconds)."""
        await drained(self.database)
        await self.outbox_settled(timeout)

    async def outbox_settled(self, timeout: float = 60.0) -> None:
        """Wait until no GitHub write is pending."""
        for _ in range(int(timeout / 0.025)):
            if not effect_counts(self.database).get("pending"):
                return
            await asyncio.sleep(0.025)
        raise TimeoutError("outbox effects still pending")

    def expected_status(self, number: int = 12) -> str:
        """The status comment as railyard's stored state says it should read now, marker included."""
        service = TicketService(self.database)
        key = TicketKey(REPO, number)
        ticket = service.load(key)
        assert ticket is not None, f"#{number} is not a ticket"
        events = tuple(recorded.event for recorded in service.history(key))
        view = StatusView(ticket, events, clocks=read_clocks(self.database, ticket))
        return f"{status_comment_body(view)}\n\n{marker(status_key(REPO, number))}"

    def ticket(self, number: int = 12) -> Any:
        return TicketService(self.database).load(TicketKey(REPO, number))

    def replies(self, number: int = 12) -> list[str]:
        """What railyard wrote on the issue (or PR), its status comment aside."""
        status = marker(status_key(REPO, number))
        return [
            c.body
            for c in self.github.comments.values()
            if c.issue_number == number and c.app_id and status not in c.body
        ]

    def status_comments(self, number: int = 12) -> list[str]:
        """The ticket's status comments as GitHub shows them (there must only ever be one)."""
        status = marker(status_key(REPO, number))
        return [
            c.body for c in self.github.comments.values() if c.issue_number == number and status in c.body
        ]

    def reactions_to(self, comment_id: int) -> list[str]:
        return [r.content for r in self.github.reactions if r.comment_id == comment_id]


def event_payload(event: str, name: str, **changes: Any) -> dict[str, Any]:
    """A real example payload of `event`, moved to acme/web under installation 7."""
    payload: dict[str, Any] = json.loads(example("api.github.com", event, name))
    payload["installation"] = {"id": 7}
    payload["repository"]["full_name"], payload["repository"]["name"] = REPO, "web"
    payload["repository"]["id"] = repository_id(REPO)  # the stand-in's acme/web
    payload.update(changes)
    return payload


def merge_group_payload(head_sha: str, number: int = 34, base: str = "9" * 40) -> dict[str, Any]:
    """`merge_group.checks_requested` for the queue commit `head_sha` GitHub built for PR `number`
    on `base` (its `gh-readonly-queue/main/pr-N-BASE` branch)."""
    group = event_payload("merge_group", "01-checks_requested.json")
    group["merge_group"].update(
        {"head_sha": head_sha, "head_ref": f"refs/heads/gh-readonly-queue/main/pr-{number}-{base}"}
    )
    return group


def pull_request_payload(
    action: str,
    number: int,
    body: str,
    *,
    head: str = FIX,
    ref: str = "agent/12-fix",
    merged: bool = False,
    state: str = "open",
    updated: str = "2026-11-30T10:00:00Z",
    merged_at: str | None = None,
    head_repo: str | None = REPO,
    base: str = "main",
) -> dict[str, Any]:
    """A real `pull_request` payload for PR `number` with the given body, head and state.

    `head_repo` is the head branch's repository: acme/web itself, a fork's name, or None for
    a deleted fork. A merged PR merged at `merged_at` (default: when it was last updated).
    `base`: the branch it targets, as the stand-in's pulls API answers it (its PRs target
    `main`; the recorded payload's `master` would be another base).
    """
    payload = event_payload("pull_request", "01-opened.json", action=action, number=number)
    pull = payload["pull_request"]
    pull.update({"number": number, "body": body, "state": state, "merged": merged, "updated_at": updated})
    pull.update({"html_url": f"https://github.com/{REPO}/pull/{number}", "merge_commit_sha": "d" * 40})
    pull["merged_at"] = (merged_at or updated) if merged else None
    pull["head"].update({"ref": ref, "sha": head})
    pull["base"]["repo"].update({"full_name": REPO, "id": repository_id(REPO)})
    pull["base"]["ref"] = base
    if head_repo is None:
        pull["head"]["repo"] = None
    else:
        fork = head_repo.casefold() != REPO.casefold()
        head_id = fork_id(head_repo) if fork else repository_id(REPO)
        pull["head"]["repo"] = {**pull["head"]["repo"], "full_name": head_repo, "id": head_id, "fork": fork}
    return payload
