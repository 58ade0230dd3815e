"""The gate after a rename, and when its configuration cannot be read: a request answered once is
never judged again, and one whose file cannot be read is still answered (rejected unjudged)."""

from __future__ import annotations

from handlers.errors import TransientError
from handlers.gate import GIVE_UP_AFTER, MERGE_WAIT_TRIES
from handlers.ports import Rules
from policies.events import EventType
from policies.gate import GateState
from policies.model import TicketKey
from tests.fakes.github import REPOSITORY_ID
from tests.fakes.webhooks import REPOSITORY, deployment_protection_rule, deployment_status
from tests.unit.handlers.test_gate import (
    BASE,
    GATED,
    HEAD,
    M12,
    accepted_and_merged,
    gated,
    gated_world,
    reviews,
)
from tests.unit.handlers.test_repositories import renamed


async def test_a_request_answered_before_a_rename_is_not_judged_again_after_it() -> None:
    """The request for HEAD (deployment 900) is answered under acme/app: rejected unjudged (a merge
    not processed in time), nothing recorded on #12. The merge is processed, the repository is
    renamed acme/tools, then the same stored delivery runs again (`railyard redeliver`, "safe:
    operations are idempotent", or a worker's retry after a crash that followed the commit). It
    was answered: nothing may be judged, sent or recorded again (deployment-gate.md, *One answer,
    one record*: the tickets keep recording what GitHub was told). Run now, #12 records
    `deployment_gated: approved` and a second, approving answer is enqueued."""
    ports = await accepted_and_merged(GATED)
    ports.github.add_history(REPOSITORY, BASE, M12, HEAD)
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    ports.store.close_waits("merge-41", REPOSITORY, runs=MERGE_WAIT_TRIES + 1)
    payload = deployment_protection_rule(HEAD)
    await ports.dispatch("deployment_protection_rule", payload, delivery_id="gate-1")
    ports.store.processed("merge-41")
    [first] = reviews(ports)
    assert first.decision.merges_unrecorded and gated(ports, 12) == []
    ports.github.names[REPOSITORY_ID] = "acme/tools"
    ports.github.add_history("acme/tools", BASE, M12, HEAD)
    await ports.dispatch("repository", renamed(REPOSITORY_ID, REPOSITORY, "acme/tools"), delivery_id="rn")
    await ports.dispatch("deployment_protection_rule", payload, delivery_id="gate-1")
    history = ports.store.history(TicketKey("acme/tools", 12))
    recorded = [dict(r.event.data) for r in history if r.event.type is EventType.DEPLOYMENT_GATED]
    assert recorded == [], recorded
    assert [review.key for review in reviews(ports)] == [first.key]


async def test_a_request_whose_configuration_read_keeps_failing_is_rejected_unjudged() -> None:
    """GitHub fails the `.github/railyard.yml` read (a 502 on the contents API) for longer than
    GIVE_UP_AFTER: the gate, which reads the file fresh before judging, must still answer,
    rejecting unjudged (deployment-gate.md, *Reads that keep failing*: never left without an
    answer once the worker's retries run out)."""
    ports = await gated_world()
    cached = ports.configs.load

    async def contents_down(installation_id: int, repository: str, *, fresh: bool = False) -> Rules:
        if fresh:
            raise TransientError("get_file: 502")
        return await cached(installation_id, repository)

    ports.configs.load = contents_down  # type: ignore[method-assign]
    arrived = ports.clock.now - GIVE_UP_AFTER - 60
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD), received_at=arrived)
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED and review.decision.unjudged
