"""`push` events through the handlers and the in-memory fakes."""

from __future__ import annotations

from datetime import UTC, datetime

from handlers.ports import Rules
from tests.fakes.webhooks import REPOSITORY, push
from tests.unit.handlers.steps import KEY, claimed, ticket, world

API_HEAD, PAYLOAD_HEAD = "f" * 40, "c" * 40


async def test_a_push_to_the_claimed_branch_records_the_head_the_api_reports() -> None:
    """A push to the branch a claim reported records the branch with its head as the API answers now."""
    ports = world()
    await claimed(ports, branch="agent/12-fix")
    ports.github.add_branch(REPOSITORY, "agent/12-fix", API_HEAD)
    await ports.dispatch("push", push("agent/12-fix", head=PAYLOAD_HEAD))
    assert ticket(ports).rails.branches["agent/12-fix"].sha == API_HEAD


async def test_the_claimants_push_is_a_sign_of_life() -> None:
    """A push to the attempt's branch moves its sign of life to the push's time."""
    ports = world()
    await claimed(ports, branch="agent/12-fix")
    ports.github.add_branch(REPOSITORY, "agent/12-fix", API_HEAD)
    await ports.dispatch("push", push("agent/12-fix", pushed_at=1_800_000_500))
    sign = ports.store.sign_of_life(KEY, 1)
    assert sign is not None
    assert (sign.kind, sign.at) == ("push", datetime.fromtimestamp(1_800_000_500, UTC))


async def test_a_branch_the_pattern_names_is_found_without_being_reported() -> None:
    """With `tickets.branch_pattern`, a push to `agent/12-...` is recorded on claimed ticket #12."""
    ports = world(Rules("blob-sha-1", branch_pattern="agent/{number}-*"))
    await claimed(ports)
    ports.github.add_branch(REPOSITORY, "agent/12-retries", API_HEAD)
    await ports.dispatch("push", push("agent/12-retries"))
    assert ticket(ports).rails.branches["agent/12-retries"].sha == API_HEAD


async def test_a_push_to_the_default_branch_forgets_the_rules() -> None:
    """A push to the default branch makes the rules be read again; it records nothing on tickets."""
    ports = world()
    await claimed(ports, branch="agent/12-fix")
    await ports.dispatch("push", push("main"))
    assert ports.configs.forgotten == [REPOSITORY]
    assert ticket(ports).rails.branches == {}
