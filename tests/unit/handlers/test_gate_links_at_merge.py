"""What a merge brings to a deployment is fixed when it merges: a pull request edited afterwards
(a link added or dropped) changes nothing the gate judges (SPEC *Deployment gate*; edits after
the merge never make a ticket merged)."""

from __future__ import annotations

from handlers.ports import Rules
from policies.gate import GateState
from policies.states import IntegrationState
from tests.fakes.github import issue_answer, pull_answer
from tests.fakes.webhooks import REPOSITORY, deployment_protection_rule, deployment_status, pull_request
from tests.unit.handlers.steps import RACHEL, say, ticket
from tests.unit.handlers.test_gate import BASE, GATED, M12, accepted_and_merged, reviews


async def test_an_edit_after_the_merge_does_not_add_a_ticket_to_the_range() -> None:
    """#12 accepted, merged as M12 by PR #40. #15 is a published ticket, never merged. After the
    merge someone edits PR #40's body to also say `Refs #15`: SPEC, edits after the merge never
    make a ticket merged, and the gate brings the tickets whose merge commit the sha contains.
    Deploying M12 should bring #12 only and be approved."""
    ports = await accepted_and_merged(GATED)
    ports.github.add_issue(REPOSITORY, issue_answer(15, assignees=(RACHEL,)))
    await say(ports, "/publish", number=15)
    edited = pull_answer(
        REPOSITORY, 40, body="Fixes #12 (see also Refs #15)", state="closed",
        merged_at="2026-11-30T10:30:00Z", merge_commit=M12, updated_at="2026-11-30T12:00:00Z",
        head_ref="fix-40", head_sha="a" * 40,
    )  # fmt: skip
    await ports.dispatch("pull_request", pull_request("edited", edited), delivery_id="edit-40")
    assert ticket(ports, 15).rails.integration is not IntegrationState.MERGED
    ports.github.add_history(REPOSITORY, BASE, M12)
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12, deployment_id=950))
    [review] = reviews(ports)
    assert [v.number for v in review.decision.tickets] == [12]
    assert review.decision.state is GateState.APPROVED


async def test_an_edit_after_the_merge_that_drops_the_link_does_not_make_the_merge_unticketed() -> None:
    """#12 accepted, merged as M12 by PR #40 ("Fixes #12"); `unticketed: reject`. After the merge
    the PR's body is edited to drop the keyword. The merge still belongs to #12 (it linked it
    when it merged): deploying M12 brings #12 alone, accepted: approved, no unticketed merge."""
    ports = await accepted_and_merged(Rules(policy_version="v1", gate=("production",), unticketed="reject"))
    edited = pull_answer(
        REPOSITORY, 40, body="A fix for uploads.", state="closed",
        merged_at="2026-11-30T10:30:00Z", merge_commit=M12, updated_at="2026-11-30T12:00:00Z",
        head_ref="fix-40", head_sha="a" * 40,
    )  # fmt: skip
    await ports.dispatch("pull_request", pull_request("edited", edited), delivery_id="edit-40")
    assert ticket(ports, 12).rails.integration is IntegrationState.MERGED
    ports.github.add_history(REPOSITORY, BASE, M12)
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12, deployment_id=951))
    [review] = reviews(ports)
    assert (review.decision.unticketed, [v.number for v in review.decision.tickets]) == ((), [12])
    assert review.decision.state is GateState.APPROVED
