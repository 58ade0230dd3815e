"""`deployments.unticketed: reject` holds back commits no recorded pull request merged: a push
straight to the deployed branch, or a merge railyard did not record. Each commit of the range
that is not a recorded merge commit is asked which merged pull requests brought it (through the
handlers and the in-memory fakes)."""

from __future__ import annotations

from app.views.gate_text import gate_comment
from handlers.answers import DeploymentReview
from handlers.ports import Rules
from policies.gate import GateState
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import REPOSITORY, deployment_protection_rule, deployment_status
from tests.unit.handlers.test_gate import BASE, M12, accepted, accepted_and_merged, merge, reviews

REJECT = Rules(policy_version="v1", gate=("production",), unticketed="reject")
ALLOW = Rules(policy_version="v1", gate=("production",))
BRANCH, PUSHED = "c" * 40, "7" * 40


async def deployed(
    ports: FakePorts, history: tuple[str, ...], brought: tuple[str, list[int]]
) -> DeploymentReview:
    """BASE last deployed; the history runs BASE then `history`, whose last commit is requested
    for production; GitHub says the merged PRs `brought[1]` brought commit `brought[0]`."""
    ports.github.add_history(REPOSITORY, BASE, *history)
    ports.github.commit_pulls[(REPOSITORY.casefold(), brought[0])] = brought[1]
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    await ports.dispatch(
        "deployment_protection_rule", deployment_protection_rule(history[-1], deployment_id=905)
    )
    [review] = reviews(ports)
    return review


async def test_a_merged_branchs_own_commits_count_as_merged_by_it() -> None:
    """PR #40 (#12, accepted) merged with a merge commit: its branch's commit C is in the range
    too; GitHub says #40 brought C, and #40 is a recorded merge in the range, so the deployment of
    M12 is approved (a squash or rebase merge's commits are asked the same way)."""
    ports = await accepted_and_merged(REJECT)
    review = await deployed(ports, (BRANCH, M12), (BRANCH, [40]))
    assert (review.decision.state, review.decision.unmerged) == (GateState.APPROVED, ())
    asked = [call.args for call in ports.github.called("merged_pulls_of_commit")]
    assert asked == [(REPOSITORY, BRANCH)], "a recorded merge commit is not asked about"


async def test_a_commit_a_pull_request_railyard_never_recorded_merged_is_held_back() -> None:
    """GitHub says #77 brought commit X, but railyard recorded no merge of #77 (its webhook
    lost): X counts as merged by no recorded pull request, and the comment names it."""
    review = await deployed(await accepted_and_merged(REJECT), (M12, PUSHED), (PUSHED, [77]))
    assert (review.decision.state, review.decision.unmerged) == (GateState.REJECTED, (PUSHED,))
    assert "commits no recorded pull request merged (not allowed by deployments.unticketed): 7777777" in (
        gate_comment(review.decision)
    )


async def test_with_unticketed_allowed_no_commit_is_asked_about() -> None:
    """`unticketed: allow` (the default): a pushed commit lets the deployment go, as before, and
    GitHub is not asked which pull request merged each commit."""
    ports = await accepted(ALLOW)
    await merge(ports, 40, "Fixes #12", M12)
    ports.github.add_history(REPOSITORY, BASE, M12, PUSHED)
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(PUSHED, deployment_id=905))
    [review] = reviews(ports)
    assert review.decision.state is GateState.APPROVED
    assert ports.github.called("merged_pulls_of_commit") == []
