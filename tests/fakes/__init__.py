"""The one set of test doubles and builders, shared by every test directory.

The in-memory fakes of the handlers' ports live in the modules of this package (`store`,
`github`, `configs`, `roles`, `ancestry`, `clock`, `ports`); `ports.FakePorts` wires them.
What tests share with `bench/` and `scripts/` (the servers, payloads, databases, actors) lives
in the top-level `support` package and is re-exported here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import respx

from app.github.client import GitHubClient
from app.runtime.metrics import Metrics
from policies.commands import Accept, Claim, Command, Context, Deliver, Draft, Publish
from policies.engine import apply_all, decide, observe
from policies.events import Event
from policies.model import Actor, Ticket, TicketKey
from policies.notices import Notice, NoticeContext, decide_notice
from policies.rails import Observation, ObservationContext, RailPolicy
from policies.refusals import Refusal
from policies.states import Role, WorkState
from support import servers
from support.comments import MAINTAINER as MAINTAINER
from support.comments import NOBODY as NOBODY
from support.comments import OTHER_RUNNER as OTHER_RUNNER
from support.comments import REQUESTER as REQUESTER
from support.comments import REVIEWER as REVIEWER
from support.comments import RUNNER as RUNNER
from support.comments import START as START
from support.comments import Clock as Clock
from support.comments import Comments as Comments
from support.databases import reset_schema as reset_schema
from support.payloads import FIXTURES as FIXTURES
from support.payloads import example as example
from support.ports import free_port as free_port
from support.servers import WEBHOOK_SECRET as WEBHOOK_SECRET
from support.servers import ServerHandle as ServerHandle
from support.servers import ServerProcess as ServerProcess
from support.servers import drained as drained
from support.servers import private_key_pem as private_key_pem
from support.servers import process_intake_settings as process_intake_settings
from support.servers import server_env as server_env
from support.servers import signed_headers as signed_headers
from tests.fakes.clock import StillClock as StillClock  # re-exported: `from tests.fakes import StillClock`

GITHUB_API = "http://127.0.0.1:9/api/v3"

app_settings = servers.settings_for_tests  # the tests' servers: the intake on a thread (docs/testing.md)
running_server = servers.server_for_tests  # and unpaced


def token_response(token: str = "ghs_test_token", minutes: int = 60) -> dict[str, Any]:
    """GitHub's answer to POST /app/installations/{id}/access_tokens."""
    expires = (datetime.now(UTC) + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "token": token,
        "expires_at": expires,
        "permissions": {"issues": "write"},
        "repository_selection": "all",
    }


def token_route(installation: int = 7, token: str = "ghs_test_token") -> respx.Route:
    """respx answers the installation's token request (POST .../access_tokens) with `token`."""
    return respx.post(f"{GITHUB_API}/app/installations/{installation}/access_tokens").mock(
        return_value=httpx.Response(201, json=token_response(token))
    )


@asynccontextmanager
async def started_client(**options: Any) -> AsyncIterator[GitHubClient]:
    """A started client of the app (the test key) pointed at respx's GitHub, closed afterwards.

    `options` go to `GitHubClient` (`clock`, `http_cache`, `limits`).
    """
    settings = app_settings("sqlite://", GITHUB_API_URL=GITHUB_API, PRIVATE_KEY=private_key_pem())
    client = GitHubClient(settings, Metrics(), **options)
    await client.start()
    try:
        yield client
    finally:
        await client.close()


@dataclass
class Story:
    """A ticket's life told through the pure core: commands and observations, one a minute.

    Keeps the events in order, as the log would, so renderers can be tested without a database.
    """

    number: int = 12
    environments: tuple[str, ...] = ("production",)
    ticket: Ticket = field(init=False)
    events: list[Event] = field(default_factory=list)
    minute: int = 0

    def __post_init__(self) -> None:
        self.ticket = Ticket(TicketKey("acme/app", self.number))

    def _at(self) -> datetime:
        self.minute += 1
        return START + timedelta(minutes=self.minute)

    def command(self, command: Command, actor: Actor, **context: Any) -> Story:
        """Run a command that must not be refused."""
        at = self._at()
        ctx = Context(
            actor=actor,
            operation_id=f"story-{self.minute}",
            at=at,
            comment_id=5000 + self.minute,
            comment_at=at,
            policy_version="blob-1",
            environments=self.environments,
            **context,
        )
        decision = decide(self.ticket, command, ctx)
        assert not isinstance(decision, Refusal), decision
        return self._record(decision)

    def observe(self, observation: Observation) -> Story:
        """Record what a repository or deployment event showed."""
        ctx = ObservationContext(
            "github",
            f"story-{self.minute}",
            self._at(),
            policy_version="blob-1",
            policy=RailPolicy(environments=self.environments),
        )
        decision = observe(self.ticket, observation, ctx)
        assert not isinstance(decision, Refusal), decision
        return self._record(decision)

    def notice(self, notice: Notice) -> Story:
        """Record what railyard noticed without a command (an overdue claim, the issue closed)."""
        ctx = NoticeContext("railyard", f"story-{self.minute}", self._at(), policy_version="blob-1")
        decision = decide_notice(self.ticket, notice, ctx)
        assert not isinstance(decision, Refusal), decision
        return self._record(decision)

    def _record(self, events: tuple[Event, ...]) -> Story:
        self.ticket = apply_all(self.ticket, events)
        self.events.extend(events)
        return self

    def walk_to(self, state: WorkState, *, commit: str = "a1b2c3d4e5f6", pull: int | None = None) -> Story:
        """draft → open → claimed → delivered → accepted, stopping at `state`."""
        deliver = Deliver(summary="Retries now stop after 5 tries.", commit=commit, pull_request=pull)
        steps: dict[WorkState | None, tuple[Command, Actor]] = {
            None: (Draft(), REQUESTER_AND_OWNER),
            WorkState.DRAFT: (
                Publish(description="Stop retrying forever.", first_assignee="rachel"),
                REQUESTER_AND_OWNER,
            ),
            WorkState.OPEN: (Claim(), RUNNER),
            WorkState.CLAIMED: (deliver, RUNNER),
            WorkState.DELIVERED: (Accept(), REVIEWER),
        }
        while self.ticket.work is not state:
            self.command(*steps[self.ticket.work])
        return self


REQUESTER_AND_OWNER = Actor("rachel", frozenset({Role.REQUESTER, Role.TASK_OWNER}))


def manifest_conversion(**overrides: Any) -> dict[str, Any]:
    """GitHub's answer to POST /app-manifests/{code}/conversions (the example in @octokit/openapi)."""
    path = Path(__file__).parent.parent / "fixtures" / "github" / "app-manifest-conversion.json"
    answer: dict[str, Any] = json.loads(path.read_text())
    return {**answer, **overrides}
