"""Commands through the API, through the handlers and the in-memory fakes: the answer is kept with
the change, a replay returns it, and nothing is kept when the command never reached the door."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pytest

from handlers.answers import Assign, Malformed, ReopenedNotice, Unassign
from handlers.api import ApiCommand, ApiCommandRun
from handlers.errors import CannotVerify
from handlers.ports import Outcome
from policies.model import Ticket
from policies.parser import parse_comment
from policies.states import WorkState
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import INSTALLATION, REPOSITORY
from tests.unit.handlers.steps import CAROL, NORA, RITA, claimed, published, ticket, world


def worded(
    outcome: Outcome, after: Ticket | None, now: datetime, clocks: object, policy: object
) -> tuple[int, Mapping[str, Any]]:
    """A stand-in for the API's wording: enough to tell answers apart."""
    code = outcome.refusal.code.value if outcome.refusal else None
    return (200 if code is None else 409), {"code": code, "revision": after.revision if after else None}


def request(key: str = "k1", by: tuple[str, int] = CAROL, digest: str = "d1") -> ApiCommand:
    return ApiCommand(INSTALLATION, REPOSITORY, 12, by[1], by[0], False, key, digest)


async def run(ports: FakePorts, text: str, key: str = "k1", **kwargs: Any) -> ApiCommandRun:
    command = ApiCommandRun(request(key, **kwargs), parse_comment(text), ports.services, worded)
    await command.run()
    return command


async def test_an_applied_command_keeps_its_answer_with_the_change_and_assigns_the_claimant() -> None:
    """The claim applies via api under the account-scoped key; its answer is kept; carol is assigned."""
    ports = world()
    await published(ports)
    command = await run(ports, "/claim")
    claimed = ticket(ports)
    assert claimed.work is WorkState.CLAIMED and claimed.claimant_id == CAROL[1]
    assert command.kept is not None and command.kept.status == 200
    assert ports.store.records.api_answers[(CAROL[1], "k1")] == command.kept
    [event] = [r.event for r in ports.store.history(claimed.key) if r.event.type.value == "claimed"]
    assert event.operation_id == f"api:{CAROL[1]}:k1" and event.data["via"] == "api"
    assert Assign(INSTALLATION, REPOSITORY, 12, ("carol",), f"claim:api:{CAROL[1]}:k1") in ports.store.answers


async def test_a_reopen_through_the_api_unassigns_and_tells_the_previous_claimant() -> None:
    """rita's /reopen via the API unassigns carol and tells her why, under the account-scoped key."""
    ports = world()
    await claimed(ports)
    await run(ports, "/reopen Wrong approach", key="r1", by=RITA)
    operation = f"api:{RITA[1]}:r1"
    assert Unassign(INSTALLATION, REPOSITORY, 12, ("carol",), f"reopen:{operation}") in ports.store.answers
    told = ReopenedNotice(
        INSTALLATION, REPOSITORY, 12, "carol", "rita", "Wrong approach", False, f"reopened:{operation}"
    )
    assert told in ports.store.answers


async def test_the_same_operation_again_is_a_replay_that_finds_the_kept_answer() -> None:
    """Run twice under one key, the door applies once and the second run finds the first's answer."""
    ports = world()
    await published(ports)
    first = await run(ports, "/claim")
    second = await run(ports, "/claim")
    assert second.kept == first.kept
    assert [r.event.type.value for r in ports.store.history(ticket(ports).key)].count("claimed") == 1


async def test_a_command_that_never_reaches_the_door_keeps_nothing() -> None:
    """A malformed command is said back (no answer kept, no change)."""
    ports = world()
    await published(ports)
    command = await run(ports, "/claim --check-in soon")
    assert isinstance(command.early, Malformed) and command.kept is None
    assert ports.store.records.api_answers == {} and ticket(ports).work is WorkState.OPEN


async def test_a_role_github_cannot_verify_raises_and_keeps_nothing() -> None:
    """When GitHub will not say, the run raises (the API answers 503) and nothing is kept."""
    ports = world()
    await published(ports)
    ports.roles.unverifiable.add("carol")
    with pytest.raises(CannotVerify):
        await run(ports, "/claim")
    assert ports.store.records.api_answers == {} and ticket(ports).work is WorkState.OPEN


async def test_a_command_no_role_less_account_can_run_asks_github_nothing_past_the_role_check() -> None:
    """nora (no role) delivers a commit and publishes: refused at the door, no commit or issue read."""
    ports = world()
    await claimed(ports)
    ports.github.calls.clear()
    delivered = await run(ports, "/deliver commit=0123456789abcdef\nDone.", key="n1", by=NORA)
    assert delivered.roles == frozenset() and delivered.kept is not None and delivered.kept.status == 409
    published_again = await run(ports, "/publish", key="n2", by=NORA)
    assert published_again.kept is not None and published_again.kept.status == 409  # refused all the same
    assert [c.name for c in ports.github.calls] == []
