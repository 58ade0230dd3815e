"""Where the deployment gate's range starts (`handlers.gate_base`): the newest successful
deployment of a commit the gate itself approved in the environment, or of one a range of its
started from there (its answers, approved or rejected, kept by GitHub's repository id); while
the bootstrap lasts there, any success."""

from __future__ import annotations

import pytest

from handlers.gate import GateFindings, judge_gate
from handlers.gate_ports import GateAnswer
from handlers.ports import Rules
from policies.gate import Blocker, GateState
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import (
    INSTALLATION,
    REPOSITORY,
    REPOSITORY_ID,
    deployment_protection_rule,
    deployment_status,
)
from tests.unit.handlers.test_gate import BASE, GATED, HEAD, M12, M13, gated_world, reviews


async def approved_m12(ports: FakePorts) -> None:
    """The gate approves deploying M12 to production (deployment 901, run 4242)."""
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12, deployment_id=901))
    assert reviews(ports)[-1].decision.state is GateState.APPROVED


async def test_every_answer_is_kept_with_it_approved_or_rejected() -> None:
    """Approving M12 keeps one answer (repository id, environment casefolded, sha, run, request,
    approved, the commit its range started from); the same request redelivered keeps nothing
    more; rejecting HEAD keeps a rejection, its range started at M12's success."""
    ports = await gated_world()
    await approved_m12(ports)
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12, deployment_id=901))
    await ports.dispatch("deployment_status", deployment_status(901, M12, "success"))
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=902))
    assert [review.decision.state for review in reviews(ports)] == [GateState.APPROVED, GateState.REJECTED]
    at = ports.clock.now
    assert ports.store.records.gate_approvals == [
        GateAnswer(REPOSITORY_ID, "production", M12, 4242, "901", 901, True, at, BASE.lower()),
        GateAnswer(REPOSITORY_ID, "production", HEAD, 4242, "902", 902, False, at, M12.lower()),
    ]


async def test_before_the_gate_answered_anything_there_any_success_starts_the_range() -> None:
    """Bootstrap, and its caveat: with no answer kept for production, the newest success
    starts the range whoever posted it, so a success forged for HEAD before the gate's first
    answer there still empties HEAD's range (docs/deployment-gate.md says so)."""
    ports = await gated_world()
    await ports.dispatch("deployment_status", deployment_status(950, HEAD, "success"))
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=951))
    [review] = reviews(ports)
    assert review.decision.state is GateState.APPROVED and review.decision.tickets == ()


async def test_an_answer_in_another_environment_does_not_end_the_bootstrap_here() -> None:
    """The gate approved M12 in staging only: production has no approval, so its newest success
    (BASE) still starts its range, and what the gate approved in staging never does."""
    rules = Rules(policy_version="v1", gate=("production", "staging"))
    ports = await gated_world(rules)
    payload = deployment_protection_rule(M12, deployment_id=901, environment="Staging")
    await ports.dispatch("deployment_protection_rule", payload)
    await ports.dispatch("deployment_status", deployment_status(901, M12, "success", environment="staging"))
    findings = await judge_gate(ports, INSTALLATION, REPOSITORY, "production", HEAD, rules, record=False)
    assert findings.base == BASE
    assert [approval.environment for approval in ports.store.records.gate_approvals] == ["staging"]


async def test_github_s_list_of_deployments_is_read_through_the_same_approvals() -> None:
    """No `deployment_status` seen (or its record expired): GitHub's newest deployments are read.
    The newest, 950 of HEAD, succeeded but the gate never approved it: its status is not even
    asked; 901 of M12, approved and succeeded, starts the range, and #13 is judged."""
    ports = await gated_world()
    ports.store.records.held.clear()
    ports.github.add_deployment(REPOSITORY, 7, "production", BASE, "success")
    await approved_m12(ports)
    ports.github.add_deployment(REPOSITORY, 901, "production", M12, "success")
    ports.github.add_deployment(REPOSITORY, 950, "production", HEAD, "success")
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=951))
    review = reviews(ports)[-1]
    assert review.decision.state is GateState.REJECTED
    assert [(v.number, v.blocker) for v in review.decision.tickets] == [(13, Blocker.NOT_ACCEPTED)]
    asked = [call.args[1] for call in ports.github.called("latest_status")]
    assert 950 not in asked and asked[-1] == 901


async def test_with_no_approved_success_left_the_deployment_is_judged_without_a_base() -> None:
    """Approvals are kept for production but no success of an approved commit is known (the
    approved deployment failed; only a forged success of HEAD): no base at all, so each merged
    ticket HEAD contains is judged, never an empty range."""
    ports = await gated_world()
    await approved_m12(ports)
    await ports.dispatch("deployment_status", deployment_status(901, M12, "failure"))
    ports.store.records.held.clear()
    await ports.dispatch("deployment_status", deployment_status(950, HEAD, "success"))
    ports.ancestry.pairs.update({(M12, HEAD), ("2" * 40, HEAD)})
    ports.github.add_commit(REPOSITORY, HEAD)
    findings = await judge_gate(ports, INSTALLATION, REPOSITORY, "production", HEAD, GATED, record=False)
    assert findings.base is None
    assert [(v.number, v.blocker) for v in findings.decision.tickets] == [
        (12, None),
        (13, Blocker.NOT_ACCEPTED),
    ]


async def test_railyard_gate_finds_the_approvals_by_the_repository_s_name_as_the_server_does() -> None:
    """`railyard gate` judges through `judge_gate` with no payload (no repository id given): the
    id is the one the records are kept under, and the forged success of HEAD is passed over."""
    findings = await forged_after_approving_m12(m12_state="success", forged=950)
    assert findings.base == M12
    assert findings.decision.state is GateState.REJECTED


async def test_approvals_are_kept_by_the_repository_s_id_not_its_name() -> None:
    """An approval kept under GitHub's id 1001 says nothing about another repository that had,
    or now has, the same name (id 2002): there the bootstrap still holds."""
    ports = await gated_world()
    await approved_m12(ports)
    await ports.dispatch("deployment_status", deployment_status(950, HEAD, "success"))
    assert (await trusted_of(ports, REPOSITORY_ID)) == set()
    assert (await trusted_of(ports, 2002)) is None


async def trusted_of(ports: FakePorts, repository_id: int) -> set[str] | None:
    async with ports.store.read() as reads:
        return await reads.gate_approved(repository_id, "PRODUCTION", [HEAD])


async def test_a_failed_first_approval_does_not_lock_the_environment_out_of_its_older_success() -> None:
    """Production last deployed M13 (deployment 7, before the gate answered anything there: #13,
    never accepted, is deployed already). The gate approves HEAD (901, range M13..HEAD brings
    nothing) and that deployment fails. Its re-run (902) still starts from M13, the success that
    predates every answer there, and is approved: without it there was no base, each merged
    ticket HEAD contains was judged, #13 blocked it, and every later request as well."""
    ports = await gated_world()
    ports.store.records.held.clear()
    await ports.dispatch("deployment_status", deployment_status(7, M13, "success"))
    ports.ancestry.pairs.update({(M12, HEAD), (M13, HEAD)})
    ports.github.add_commit(REPOSITORY, HEAD)
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=901))
    assert reviews(ports)[-1].decision.state is GateState.APPROVED
    await ports.dispatch("deployment_status", deployment_status(901, HEAD, "failure"))
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=902))
    assert reviews(ports)[-1].decision.state is GateState.APPROVED
    findings = await judge_gate(ports, INSTALLATION, REPOSITORY, "production", HEAD, GATED, record=False)
    assert findings.base == M13


async def test_a_success_forged_after_the_first_approval_on_a_new_deployment_still_starts_nothing() -> None:
    """The older success counts only for deployments created before the gate's first answer
    there: one created after it (960 > 901) for HEAD, never approved, is passed over."""
    findings = await forged_after_approving_m12(m12_state="failure", forged=960)
    assert findings.base == BASE
    assert findings.decision.state is GateState.REJECTED


async def forged_after_approving_m12(*, m12_state: str, forged: int) -> GateFindings:
    """The gate approved M12 (deployment 901, which then ended `m12_state`); a success of HEAD
    was posted for deployment `forged`, never approved: what `railyard gate` finds for HEAD."""
    ports = await gated_world()
    await approved_m12(ports)
    await ports.dispatch("deployment_status", deployment_status(901, M12, m12_state))
    await ports.dispatch("deployment_status", deployment_status(forged, HEAD, "success"))
    return await judge_gate(ports, INSTALLATION, REPOSITORY, "production", HEAD, GATED, record=False)


@pytest.mark.parametrize(
    ("deployment_id", "sha"),
    [
        pytest.param(960, HEAD, id="a deployment of the rejected commit created after the rejection"),
        pytest.param(850, HEAD, id="a deployment of the rejected commit created before the first request"),
        pytest.param(850, M13, id="an older deployment of a commit never asked, between BASE and HEAD"),
    ],
)
async def test_a_success_posted_after_the_first_answer_starts_nothing(deployment_id: int, sha: str) -> None:
    """The gate's first request in production (HEAD, deployment 901) is rejected: #13 is merged
    unaccepted (as M13). Someone with push access then posts `success` on a deployment through
    the API: one created after the rejection, or one created before the first request (a
    deployment's id says when it was created, not when its success was posted), of HEAD or of
    M13, between BASE and HEAD. None of those commits was approved there or started a range of
    the gate's, so the next request for HEAD (902) starts from BASE again, and #13 holds it
    back (before, each of these started HEAD's range past #13, found by review)."""
    ports = await gated_world()
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=901))
    assert reviews(ports)[-1].decision.state is GateState.REJECTED
    await ports.dispatch("deployment_status", deployment_status(deployment_id, sha, "success"))
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=902))
    review = reviews(ports)[-1]
    assert review.decision.state is GateState.REJECTED
    assert [(v.number, v.blocker) for v in review.decision.tickets] == [
        (12, None),
        (13, Blocker.NOT_ACCEPTED),
    ]
    findings = await judge_gate(ports, INSTALLATION, REPOSITORY, "production", HEAD, GATED, record=False)
    assert findings.base == BASE


async def test_a_rejected_first_request_does_not_lock_the_environment_out_of_its_older_success() -> None:
    """Production last deployed BASE (deployment 7, before the gate answered anything there). The
    first request, for HEAD (901), is rejected (#13 unaccepted). Once #13 is out of the way (here:
    M12 alone is deployed) the older success still counts: 7 predates the first answer."""
    ports = await gated_world()
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=901))
    assert reviews(ports)[-1].decision.state is GateState.REJECTED
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12, deployment_id=902))
    review = reviews(ports)[-1]
    assert review.decision.state is GateState.APPROVED
    assert [(v.number, v.blocker) for v in review.decision.tickets] == [(12, None)]
    findings = await judge_gate(ports, INSTALLATION, REPOSITORY, "production", M12, GATED, record=False)
    assert findings.base == BASE


async def test_a_rejected_request_naming_no_deployment_ends_the_bootstrap_for_every_success() -> None:
    """A first request that names no deployment (`deployment: null`) is rejected and kept, its
    range started at BASE (production's success before the gate): a later success forged for
    HEAD starts nothing, and HEAD is judged from BASE again."""
    ports = await gated_world()
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=None))
    assert reviews(ports)[-1].decision.state is GateState.REJECTED
    kept = ports.store.records.gate_approvals
    assert [(answer.deployment_id, answer.base) for answer in kept] == [(None, BASE.lower())]
    await ports.dispatch("deployment_status", deployment_status(960, HEAD, "success"))
    findings = await judge_gate(ports, INSTALLATION, REPOSITORY, "production", HEAD, GATED, record=False)
    assert findings.base == BASE
    assert findings.decision.state is GateState.REJECTED
    assert [(v.number, v.blocker) for v in findings.decision.tickets] == [
        (12, None),
        (13, Blocker.NOT_ACCEPTED),
    ]


async def test_a_deployment_created_after_a_first_request_naming_none_never_predates_the_gate() -> None:
    """The first request in production names no deployment (HEAD, rejected: #13): the bootstrap
    is over. Someone with push access then creates deployment 850 of M13 through the API and
    posts `success` on it. The next request, for M12, names deployment 901 (approved; that
    deployment then fails): 901 becomes "the lowest deployment id answered", and 850 < 901 is
    was taken for a deployment created before the gate began answering, and HEAD's next request
    started from M13, approved with #13 unaccepted. M13 is neither approved nor a range's start
    there: HEAD is rejected."""
    ports = await gated_world()
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=None))
    assert reviews(ports)[-1].decision.state is GateState.REJECTED
    await ports.dispatch("deployment_status", deployment_status(850, M13, "success"))
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12, deployment_id=901))
    assert reviews(ports)[-1].decision.state is GateState.APPROVED
    await ports.dispatch("deployment_status", deployment_status(901, M12, "failure"))
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=902))
    review = reviews(ports)[-1]
    assert review.decision.state is GateState.REJECTED
    assert (13, Blocker.NOT_ACCEPTED) in [(v.number, v.blocker) for v in review.decision.tickets]


async def test_a_first_request_rejected_unjudged_does_not_brick_the_environment() -> None:
    """Production's history ends at M13 (deployed before the gate, #13 never accepted). The first
    request (HEAD) comes while the file cannot be used: rejected unjudged, kept with M13 (where
    its range would have started) as its base. Once the file is fixed, the same deployment asked
    again starts at M13's success (HEAD brings nothing since) and is approved. Before (found by
    review), the answer was kept without a base and ended the bootstrap: no success counted any
    more, HEAD was judged without a base, and #13, merged long before the gate, held back every
    deployment."""
    ports = await gated_world()
    ports.ancestry.pairs.update({(M12, HEAD), (M13, HEAD)})
    await ports.dispatch("deployment_status", deployment_status(8, M13, "success"))
    fixed = ports.configs.default
    ports.configs.default = Rules(policy_version="v2", error="line 3: deployments: unknown key 'gates'")
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=950))
    assert reviews(ports)[-1].decision.state is GateState.REJECTED
    assert [answer.base for answer in ports.store.records.gate_approvals] == [M13.lower()]
    ports.configs.default = fixed
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=951))
    assert reviews(ports)[-1].decision.state is GateState.APPROVED


async def test_a_success_forged_after_an_unjudged_rejection_does_not_empty_the_range() -> None:
    """Production last deployed BASE successfully (a success railyard saw: a base it may trust).
    The first request (HEAD, 950) comes while the file cannot be used: rejected unjudged, kept
    with the success its range would have started from (BASE) as its base, which ends the
    bootstrap. The file fixed, someone with push access creates a deployment of HEAD (960) and
    posts `success` on it by hand, then HEAD is asked again (961): its range starts at BASE, never
    at the forged success, and #13, merged unaccepted after BASE, holds it back. (Found by review:
    kept without a base, the answer left the bootstrap open and the forged success counted.)"""
    ports = await gated_world()
    ports.ancestry.pairs.update({(M12, HEAD), (M13, HEAD)})
    fixed = ports.configs.default
    ports.configs.default = Rules(policy_version="v2", error="line 3: deployments: unknown key 'gates'")
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=950))
    assert reviews(ports)[-1].decision.state is GateState.REJECTED
    ports.configs.default = fixed
    await ports.dispatch("deployment_status", deployment_status(960, HEAD, "success"))  # forged
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=961))
    review = reviews(ports)[-1]
    assert review.decision.state is GateState.REJECTED
    assert (13, Blocker.NOT_ACCEPTED) in [(v.number, v.blocker) for v in review.decision.tickets]
