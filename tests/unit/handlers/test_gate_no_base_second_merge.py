"""The gate without a range (no earlier success known: an environment's first deployment, a
comparison GitHub cannot list whole, a base force-pushed away): a ticket with two merged pull
requests is brought by either merge the deployed commit contains."""

from __future__ import annotations

from handlers.answers import DeploymentReview
from policies.gate import Blocker, GateState
from tests.fakes.github import issue_answer
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import REPOSITORY, deployment_protection_rule
from tests.unit.handlers.steps import RACHEL, say, world
from tests.unit.handlers.test_gate import ACCEPTED_AT, GATED, merge

M_LATER, M_FIRST = ("4" * 40, "3" * 40)


def reviews(ports: FakePorts) -> list[DeploymentReview]:
    return [answer for answer in ports.store.answers if isinstance(answer, DeploymentReview)]


async def test_a_ticket_brought_by_its_higher_numbered_merge_is_judged_without_a_range() -> None:
    """#13 (published, never accepted) is linked by PR #40 and PR #41. PR #41 merges first
    (M_FIRST); PR #40 merges later (M_LATER). Production has no successful deployment yet. The
    first deployment is of M_FIRST (it contains #41's merge, not #40's): it brings #13's code,
    unaccepted, so it must be rejected naming #13. Before the fix #13 was asked only by #40's merge
    commit (the lowest PR number's), which M_FIRST does not contain: no ticket, approved."""
    ports = world(GATED)
    ports.clock.now = ACCEPTED_AT + 3600
    ports.github.add_issue(REPOSITORY, issue_answer(13, assignees=(RACHEL,)))
    await say(ports, "/publish", number=13)
    await merge(ports, 41, "Fixes #13", M_FIRST, head="5" * 40)
    await merge(ports, 40, "Fixes #13", M_LATER, head="6" * 40)
    ports.ancestry.pairs.add((M_FIRST, M_LATER))  # history: M_FIRST, then M_LATER
    ports.github.add_commit(REPOSITORY, M_FIRST)
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M_FIRST, deployment_id=901))
    [review] = reviews(ports)
    assert [(v.number, v.blocker) for v in review.decision.tickets] == [(13, Blocker.NOT_ACCEPTED)]
    assert review.decision.state is GateState.REJECTED
