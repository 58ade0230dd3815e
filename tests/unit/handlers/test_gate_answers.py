"""The deployment gate always answers GitHub: a request is judged under the file read now when the
process's copy predates the environment's gate, and judging that keeps failing is retried, then
rejected unjudged, never left without an answer (through the handlers and the in-memory fakes)."""

from __future__ import annotations

import pytest

from app.views.gate_text import gate_comment
from handlers.errors import TransientError
from handlers.gate import GIVE_UP_AFTER
from handlers.ports import Rules
from policies.gate import GateState
from tests.fakes.webhooks import deployment_protection_rule
from tests.unit.handlers.test_gate import HEAD, gated_world, reviews


async def test_an_environment_gated_since_the_file_was_last_read_is_answered() -> None:
    """The process read the file before `production` joined `deployments.gate` (its copy is up
    to a minute old): a request for it is judged under the file read now, not dropped unanswered."""
    ports = await gated_world()
    fresh_load = ports.configs.load

    async def cached_before_the_gate(installation_id: int, repository: str, *, fresh: bool = False) -> Rules:
        rules = await fresh_load(installation_id, repository, fresh=fresh)
        return rules if fresh else Rules(policy_version="v0")

    ports.configs.load = cached_before_the_gate  # type: ignore[method-assign]
    before = len(ports.configs.loads)
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD))
    assert [review.decision.state for review in reviews(ports)] == [GateState.REJECTED]
    assert [load.fresh for load in ports.configs.loads[before:]].count(True) == 1, "read from GitHub once"


async def test_a_request_whose_reads_keep_failing_is_retried_then_rejected_unjudged() -> None:
    """GitHub failing the compare: the request is retried (TransientError) while it is young;
    past GIVE_UP_AFTER since it arrived it is rejected unjudged, saying so, so GitHub is never
    left waiting on the rule once the worker gives up."""
    ports = await gated_world()

    async def down(*args: object) -> list[str]:
        raise TransientError("compare_commits: 502")

    ports.github.compare_commits = down  # type: ignore[method-assign]
    arrived = ports.clock.now
    request = deployment_protection_rule(HEAD)
    with pytest.raises(TransientError):
        await ports.dispatch("deployment_protection_rule", request, received_at=arrived)
    assert reviews(ports) == []
    ports.clock.now = arrived + GIVE_UP_AFTER + 1
    await ports.dispatch("deployment_protection_rule", request, received_at=arrived)
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED and review.decision.unjudged
    assert "nothing was judged" in gate_comment(review.decision)


async def test_a_request_whose_read_github_refuses_is_retried_then_rejected_unjudged() -> None:
    """A read refused outright (an error the worker would fail the delivery on at once, as a 403):
    retried as transient while the request is young, then rejected unjudged, rather than the
    delivery failing and GitHub waiting on the rule."""
    ports = await gated_world()

    async def refused(*args: object) -> list[str]:
        raise PermissionError("403 Resource not accessible by integration")

    ports.github.compare_commits = refused  # type: ignore[method-assign]
    arrived, request = ports.clock.now, deployment_protection_rule(HEAD)
    with pytest.raises(TransientError):
        await ports.dispatch("deployment_protection_rule", request, received_at=arrived)
    ports.clock.now = arrived + GIVE_UP_AFTER
    await ports.dispatch("deployment_protection_rule", request, received_at=arrived)
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED and review.decision.unjudged
