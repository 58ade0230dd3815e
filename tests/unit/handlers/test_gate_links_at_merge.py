"""What a merge brings to a deployment is fixed when it merges: a pull request edited afterwards
(a link added or dropped) changes nothing the gate judges (SPEC *Deployment gate*; edits after
the merge never make a ticket merged)."""

from __future__ import annotations

from handlers.answers import DeploymentReview
from handlers.ports import Rules
from handlers.resync import resync
from policies.gate import GateState
from policies.states import IntegrationState
from tests.fakes.github import issue_answer, pull_answer
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import (
    INSTALLATION,
    REPOSITORY,
    deployment_protection_rule,
    deployment_status,
    pull_request,
)
from tests.unit.handlers.steps import KEY, RACHEL, published, say, ticket, world
from tests.unit.handlers.test_gate import (
    BASE,
    DELIVERED,
    GATED,
    M12,
    accepted,
    accepted_and_merged,
    reviews,
)

REJECT = Rules(policy_version="v1", gate=("production",), unticketed="reject")


async def edit_then_deploy(ports: FakePorts, body: str, deployment_id: int) -> DeploymentReview:
    """PR #40, merged as M12, gets its body edited after the merge; then M12 is deployed to
    production (BASE its last success): the gate's one answer."""
    edited = pull_answer(
        REPOSITORY, 40, body=body, state="closed", merged_at="2026-11-30T10:30:00Z", merge_commit=M12,
        updated_at="2026-11-30T12:00:00Z", head_ref="fix-40", head_sha="a" * 40,
    )  # fmt: skip
    await ports.dispatch("pull_request", pull_request("edited", edited), delivery_id="edit-40")
    ports.github.add_history(REPOSITORY, BASE, M12)
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    await ports.dispatch(
        "deployment_protection_rule", deployment_protection_rule(M12, deployment_id=deployment_id)
    )
    [review] = reviews(ports)
    return review


async def test_an_edit_after_the_merge_does_not_add_a_ticket_to_the_range() -> None:
    """#12 accepted, merged as M12 by PR #40; #15 a published ticket, never merged. PR #40's body
    edited after the merge to say `Refs #15` too: deploying M12 brings #12 only, approved."""
    ports = await accepted_and_merged(GATED)
    ports.github.add_issue(REPOSITORY, issue_answer(15, assignees=(RACHEL,)))
    await say(ports, "/publish", number=15)
    review = await edit_then_deploy(ports, "Fixes #12 (see also Refs #15)", 950)
    assert ticket(ports, 15).rails.integration is not IntegrationState.MERGED
    assert [v.number for v in review.decision.tickets] == [12]
    assert review.decision.state is GateState.APPROVED


async def test_an_edit_after_the_merge_that_drops_the_link_does_not_make_the_merge_unticketed() -> None:
    """`unticketed: reject`; PR #40 ("Fixes #12") edited after the merge to drop the keyword: the
    merge still belongs to #12 (it linked it when it merged), so deploying M12 is approved."""
    ports = await accepted_and_merged(REJECT)
    review = await edit_then_deploy(ports, "A fix for uploads.", 951)
    assert ticket(ports, 12).rails.integration is IntegrationState.MERGED
    assert (review.decision.unticketed, [v.number for v in review.decision.tickets]) == ((), [12])
    assert review.decision.state is GateState.APPROVED


def merged_40(updated_at: str, body: str = "Fixes #12") -> dict[str, object]:
    """PR #40 from agent/12, merged as M12 at 10:30, as GitHub answers at `updated_at`."""
    return pull_answer(
        REPOSITORY, 40, body=body, state="closed", merged_at="2026-11-30T10:30:00Z",
        merge_commit=M12, updated_at=updated_at, head_ref="fix-40", head_sha=DELIVERED,
    )  # fmt: skip


async def test_an_edit_processed_before_the_closed_keeps_the_merge_with_its_ticket() -> None:
    """#12 accepted; PR #40 "Fixes #12" merged as M12. A title edit after the merge is processed
    before the merge's `closed` (webhooks have no order): the PR still linked #12 when it merged,
    so deploying M12 brings #12 and no merge without a ticket."""
    ports = await accepted(REJECT)
    edited = pull_request("edited", merged_40("2026-11-30T12:00:00Z"))
    await ports.dispatch("pull_request", edited, delivery_id="edit-40")
    closed = pull_request("closed", merged_40("2026-11-30T10:30:00Z"))
    await ports.dispatch("pull_request", closed, delivery_id="merge-40")
    assert ticket(ports, 12).rails.integration is IntegrationState.MERGED
    ports.github.add_history(REPOSITORY, BASE, M12)
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12, deployment_id=952))
    [review] = reviews(ports)
    assert (review.decision.unticketed, review.decision.state) == ((), GateState.APPROVED)


async def test_resync_stores_a_merged_pr_with_the_links_it_had_when_it_merged() -> None:
    """PR #40 "Fixes #12" merged while railyard heard nothing, then edited to add `Refs #15`.
    Resync #12 stores it merged linking #12 only, as it was seen before it merged."""
    ports = world()
    ports.github.installations[REPOSITORY] = INSTALLATION
    await published(ports)
    await ports.dispatch(
        "pull_request", pull_request("opened", pull_answer(REPOSITORY, 40, body="Fixes #12"))
    )
    ports.github.add_pull(REPOSITORY, merged_40("2026-11-30T12:00:00Z", "Fixes #12\n\nRefs #15"))
    await resync(ports.services, KEY)
    async with ports.services.store.read() as reads:
        stored = await reads.stored_pull(REPOSITORY, 40)
    assert stored is not None and stored[0].merged and stored[1] == {12}
