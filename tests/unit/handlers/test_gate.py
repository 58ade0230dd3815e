"""The deployment gate through the handlers and the in-memory fakes: which tickets a deployment
brings, the decision recorded on each, and the one answer sent to GitHub."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.views.gate_text import gate_comment
from handlers.answers import DeploymentReview
from handlers.errors import TransientError
from handlers.gate import MERGE_WAIT_TRIES
from handlers.ports import Rules
from policies.events import EventType
from policies.gate import Blocker, GateState
from policies.model import TicketKey
from policies.states import WorkState
from tests.fakes.github import issue_answer, pull_answer
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import (
    REPOSITORY,
    REPOSITORY_ID,
    deployment_protection_rule,
    deployment_status,
    pull_request,
)
from tests.unit.handlers.steps import CAROL, RACHEL, RITA, claimed, say, ticket, world
from tests.unit.handlers.test_repositories import renamed

GATED = Rules(policy_version="v1", gate=("production",))
BASE, M12, M13, M14, HEAD = ("b" * 40, "1" * 40, "2" * 40, "4" * 40, "e" * 40)
DELIVERED = "a" * 40
ACCEPTED_AT = datetime(2026, 11, 30, 10, tzinfo=UTC).timestamp()  # the comments' time


async def merge(ports: FakePorts, pull: int, body: str, merge_commit: str, head: str = DELIVERED) -> None:
    """PR `pull` with `body` merged as `merge_commit`."""
    answer = pull_answer(
        REPOSITORY, pull, body=body, state="closed", merged_at="2026-11-30T10:30:00Z",
        merge_commit=merge_commit, updated_at="2026-11-30T10:30:00Z", head_ref=f"fix-{pull}", head_sha=head,
    )  # fmt: skip
    await ports.dispatch("pull_request", pull_request("closed", answer), delivery_id=f"merge-{pull}")


async def accepted(rules: Rules) -> FakePorts:
    """#12 delivered by carol from agent/12 and accepted by rita an hour ago."""
    ports = world(rules)
    ports.clock.now = ACCEPTED_AT + 3600
    ports.github.add_branch(REPOSITORY, "agent/12", DELIVERED)
    ports.github.logins[RITA[1]] = "rita"
    await claimed(ports)
    await say(ports, "/deliver branch=agent/12 The fix.", by=CAROL)
    await say(ports, "/accept", by=RITA)
    return ports


async def accepted_and_merged(rules: Rules) -> FakePorts:
    """`accepted`, then merged as M12 (PR #40)."""
    ports = await accepted(rules)
    await merge(ports, 40, "Fixes #12", M12)
    return ports


async def gated_world(rules: Rules = GATED) -> FakePorts:
    """#12 delivered, accepted by rita and merged as M12; #13 published and merged as M13 unaccepted;
    production last deployed BASE successfully; the history runs BASE, M12, M13, HEAD."""
    ports = await accepted_and_merged(rules)
    ports.github.add_issue(REPOSITORY, issue_answer(13, assignees=(RACHEL,)))
    await say(ports, "/publish", number=13)
    await merge(ports, 41, "Fixes #13", M13, head="3" * 40)
    ports.github.add_history(REPOSITORY, BASE, M12, M13, HEAD)
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    return ports


def reviews(ports: FakePorts) -> list[DeploymentReview]:
    return [answer for answer in ports.store.answers if isinstance(answer, DeploymentReview)]


def gated(ports: FakePorts, number: int) -> list[dict[str, object]]:
    history = ports.store.history(TicketKey(REPOSITORY, number))
    return [dict(r.event.data) for r in history if r.event.type is EventType.DEPLOYMENT_GATED]


async def test_a_range_with_an_unaccepted_ticket_is_rejected_naming_it() -> None:
    """#12 accepted, #13 merged unaccepted: rejected, #13 not accepted; recorded on both tickets."""
    ports = await gated_world()
    assert ticket(ports).work is WorkState.ACCEPTED
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD))
    [review] = reviews(ports)
    assert (review.run_id, review.environment) == (4242, "production")
    assert review.decision.state is GateState.REJECTED
    assert [(v.number, v.blocker) for v in review.decision.tickets] == [
        (12, None),
        (13, Blocker.NOT_ACCEPTED),
    ]
    assert [(e["state"], e["blocker"], e["sha"]) for e in gated(ports, 13)] == [
        ("rejected", "not_accepted", HEAD)
    ]
    assert [(e["state"], e["blocker"], e["environment"]) for e in gated(ports, 12)] == [
        ("rejected", None, "production")
    ]
    assert ports.github.called("compare_commits") != []
    assert [call.args for call in ports.github.called("compare_commits")] == [(REPOSITORY, BASE, HEAD)]


async def test_a_redelivered_request_is_answered_and_recorded_once() -> None:
    """The same protection-rule request delivered again: the same one answer, no second event."""
    ports = await gated_world()
    payload = deployment_protection_rule(HEAD)
    await ports.dispatch("deployment_protection_rule", payload, delivery_id="gate-1")
    await ports.dispatch("deployment_protection_rule", payload, delivery_id="gate-2")
    assert len({review.key for review in reviews(ports)}) == 1
    assert len(gated(ports, 13)) == 1


async def test_a_range_of_accepted_tickets_only_is_approved() -> None:
    """Deploying M12 alone (before #13's merge): only #12 in range, accepted, approved."""
    ports = await gated_world()
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12, deployment_id=901))
    [review] = reviews(ports)
    assert review.decision.state is GateState.APPROVED
    assert [v.number for v in review.decision.tickets] == [12]


async def test_an_ungated_environment_gets_no_answer_and_nothing_is_recorded() -> None:
    """`staging` is not in `deployments.gate`: no answer, no event, no GitHub read."""
    ports = await gated_world()
    reads = len(ports.github.calls)
    await ports.dispatch(
        "deployment_protection_rule", deployment_protection_rule(HEAD, environment="staging")
    )
    assert reviews(ports) == [] and gated(ports, 12) == [] and gated(ports, 13) == []
    assert len(ports.github.calls) == reads


async def test_a_callback_naming_another_repository_is_not_answered() -> None:
    """A payload whose callback URL names some other repository's run: railyard answers nothing."""
    ports = await gated_world()
    payload = deployment_protection_rule(HEAD, callback_repository="evil/other")
    await ports.dispatch("deployment_protection_rule", payload)
    assert reviews(ports) == [] and gated(ports, 13) == []


async def test_unticketed_merges_are_rejected_when_the_file_says_reject() -> None:
    """PR #42 merged as M14 links no ticket: with `unticketed: reject` the deployment is rejected."""
    ports = await gated_world(Rules(policy_version="v1", gate=("production",), unticketed="reject"))
    await merge(ports, 42, "Tidy the README", M14, head="5" * 40)
    ports.github.add_history(REPOSITORY, BASE, M12, M14)
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M14, deployment_id=902))
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED
    assert review.decision.unticketed == (42,) and review.decision.blocking == ()


async def test_an_expired_acceptance_is_judged_now_and_recorded_lapsed() -> None:
    """Forty days on (expiry 30): the gate re-judges #12, records `acceptance_invalidated`, rejects."""
    ports = await gated_world()
    ports.clock.now = ACCEPTED_AT + 40 * 86400
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12, deployment_id=903))
    [review] = reviews(ports)
    assert [(v.number, v.blocker) for v in review.decision.tickets] == [(12, Blocker.EXPIRED)]
    history = ports.store.history(TicketKey(REPOSITORY, 12))
    assert [r.event.data["reason"] for r in history if r.event.type is EventType.ACCEPTANCE_INVALIDATED] == [
        "expired"
    ]


async def test_without_an_earlier_success_the_merged_tickets_the_sha_contains_are_judged() -> None:
    """No successful deployment known anywhere: each merged ticket is asked whether HEAD contains it."""
    ports = world(GATED)
    ports.clock.now = ACCEPTED_AT + 3600
    ports.github.add_issue(REPOSITORY, issue_answer(13, assignees=(RACHEL,)))
    await say(ports, "/publish", number=13)
    await merge(ports, 41, "Fixes #13", M13, head="3" * 40)
    ports.ancestry.pairs.add((M13, HEAD))
    ports.github.add_commit(REPOSITORY, HEAD)
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD))
    [review] = reviews(ports)
    assert [(v.number, v.blocker) for v in review.decision.tickets] == [(13, Blocker.NOT_ACCEPTED)]
    assert ports.github.called("compare_commits") == []


async def test_a_ticket_merged_with_other_content_than_accepted_holds_the_deployment_back() -> None:
    """#12 accepted at its delivered commit, but the PR merged from a later head with another
    tree: invalid, and the deployment is rejected."""
    ports = world(GATED)
    ports.clock.now = ACCEPTED_AT + 3600
    ports.github.add_branch(REPOSITORY, "agent/12", DELIVERED)
    await claimed(ports)
    await say(ports, "/deliver branch=agent/12 The fix.", by=CAROL)
    await say(ports, "/accept", by=RITA)
    ports.github.add_commit(REPOSITORY, "9" * 40)
    await merge(ports, 40, "Fixes #12", M12, head="9" * 40)
    ports.github.add_history(REPOSITORY, BASE, M12)
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12))
    [review] = reviews(ports)
    assert [(v.number, v.blocker) for v in review.decision.tickets] == [(12, Blocker.INVALID)]
    assert review.decision.state is GateState.REJECTED


async def test_a_job_that_creates_no_deployment_is_judged_by_the_payloads_sha() -> None:
    """`deployment: null`: the payload's sha is judged, and the request is named by run, sha and
    webhook delivery."""
    ports = await gated_world()
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=None))
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED
    assert review.key.endswith(f":4242:production:run-4242@{HEAD}#delivery-1")
    assert [(e["sha"], e["deployment_id"], e["run_id"]) for e in gated(ports, 13)] == [(HEAD, None, 4242)]


async def test_a_reviewer_whose_role_cannot_be_verified_now_holds_the_deployment_back() -> None:
    """GitHub will not say whether rita still holds a role (the app lost the members permission):
    the gate never approves on a role it cannot verify; it rejects naming why, records no lapse."""
    ports = await gated_world()
    ports.roles.unverifiable.add("rita")
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12, deployment_id=904))
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED
    assert [(v.number, v.blocker) for v in review.decision.tickets] == [(12, Blocker.UNVERIFIED)]
    history = ports.store.history(TicketKey(REPOSITORY, 12))
    assert [r for r in history if r.event.type is EventType.ACCEPTANCE_INVALIDATED] == []


async def test_a_later_pull_request_linking_an_accepted_ticket_is_judged_by_what_it_merged() -> None:
    """#12 accepted, merged as M12 and deployed; then PR #45 'Fixes #12' merges other content as
    M15. Deploying M15 brings #12's new code: it was not accepted, so the gate rejects (before,
    #45 counted neither as a ticket's merge nor as unticketed, and the deployment was approved)."""
    ports = await accepted_and_merged(GATED)
    await ports.dispatch("deployment_status", deployment_status(7, M12, "success"))
    other = "6" * 40
    ports.github.add_commit(REPOSITORY, other)
    await merge(ports, 45, "Fixes #12", M14, head=other)
    ports.github.add_history(REPOSITORY, BASE, M12, M14)
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M14, deployment_id=905))
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED
    assert [(v.number, v.blocker) for v in review.decision.tickets] == [(12, Blocker.INVALID)]


async def test_a_deployment_of_a_commit_github_does_not_know_is_rejected() -> None:
    """The payload's sha is no commit GitHub knows (the comparison and every containment answer
    404): nothing can be shown about what it brings, so it is rejected, not approved as bringing
    no ticket."""
    ports = await gated_world()
    unknown = "f" * 40
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(unknown, deployment_id=906))
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED


async def test_the_gate_judges_under_the_file_read_now_as_a_command_does() -> None:
    """The roles, the expiry and the gate itself come from `.github/railyard.yml` read fresh when
    the deployment asks (a cached copy may be a minute old), before anything is judged."""
    ports = await gated_world()
    before = len(ports.configs.loads)
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12, deployment_id=907))
    assert [load.fresh for load in ports.configs.loads[before:]][:2] == [False, True]
    assert len(reviews(ports)) == 1


async def test_a_merge_that_names_only_an_issue_that_is_no_ticket_is_unticketed() -> None:
    """PR #46 says "Fixes #5", and #5 is a plain issue, no ticket: the merge belongs to no ticket.
    With `unticketed: reject` it holds the deployment back (naming an issue is no way around the
    policy); with `allow` it lets it go, and #5 is not judged as a ticket."""
    for policy, state in (("reject", GateState.REJECTED), ("allow", GateState.APPROVED)):
        ports = await gated_world(Rules(policy_version="v1", gate=("production",), unticketed=policy))
        ports.github.add_issue(REPOSITORY, issue_answer(5, assignees=(RACHEL,)))
        await merge(ports, 46, "Fixes #5", M14, head="5" * 40)
        ports.github.add_history(REPOSITORY, BASE, M12, M14)
        await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M14, deployment_id=908))
        [review] = reviews(ports)
        assert (review.decision.state, review.decision.unticketed) == (state, (46,)), policy
        assert [v.number for v in review.decision.tickets] == [12]


async def test_a_gate_request_waits_while_a_merge_of_the_repository_is_not_processed() -> None:
    """#13 (unaccepted) merged as M13 by PR #41, whose `pull_request.closed` is stored but not yet
    processed when the protection-rule request for HEAD (BASE..HEAD holds M13) runs: the request
    is retried later, nothing recorded or answered, rather than approved without #13. Once the
    merge is processed, the request is judged and rejected, naming #13."""
    ports = await accepted_and_merged(GATED)
    ports.github.add_issue(REPOSITORY, issue_answer(13, assignees=(RACHEL,)))
    await say(ports, "/publish", number=13)
    ports.github.add_history(REPOSITORY, BASE, M12, M13, HEAD)
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    ports.store.close_waits("merge-41", REPOSITORY.upper())
    with pytest.raises(TransientError):
        await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD))
    assert reviews(ports) == [] and gated(ports, 12) == []
    await merge(ports, 41, "Fixes #13", M13, head="3" * 40)
    ports.store.processed("merge-41")
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD))
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED
    assert [(v.number, v.blocker) for v in review.decision.tickets] == [
        (12, None),
        (13, Blocker.NOT_ACCEPTED),
    ]


async def test_a_gate_request_stops_waiting_for_a_merge_that_keeps_failing() -> None:
    """The same pending merge: until its delivery has failed `MERGE_WAIT_TRIES` runs (not run yet,
    running, or failed fewer), the request waits, however long ago it was received (after an
    outage, the merge's delivery gets its runs). Once its ninth run has started, the request is
    rejected unjudged rather than wait until the worker's retries run out and GitHub gets no
    answer: the comment says a merge is not recorded yet; no ticket records it."""
    ports = await accepted_and_merged(GATED)
    ports.github.add_history(REPOSITORY, BASE, M12, M13, HEAD)
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    request = deployment_protection_rule(HEAD)
    for runs in (0, 1, MERGE_WAIT_TRIES):
        ports.store.close_waits("merge-41", REPOSITORY, runs=runs)
        with pytest.raises(TransientError):
            await ports.dispatch("deployment_protection_rule", request, received_at=ports.clock.now - 86_400)
    assert reviews(ports) == []
    ports.store.close_waits("merge-41", REPOSITORY, runs=MERGE_WAIT_TRIES + 1)
    await ports.dispatch("deployment_protection_rule", request)
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED
    assert review.decision.tickets == () and review.decision.merges_unrecorded
    assert "has not recorded it yet" in gate_comment(review.decision)
    assert gated(ports, 12) == []


async def test_a_request_answered_already_is_not_judged_again() -> None:
    """Rejected unjudged, then run again once the merge is processed (a crash after its commit,
    a redelivery by hand): GitHub keeps its one answer, and no ticket records a decision GitHub
    was never told (the run would have approved #12); nothing is asked of GitHub for it."""
    ports = await accepted_and_merged(GATED)
    ports.github.add_history(REPOSITORY, BASE, M12, HEAD)
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    ports.store.close_waits("merge-41", REPOSITORY, runs=MERGE_WAIT_TRIES + 1)
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD))
    ports.store.processed("merge-41")
    loads = len(ports.configs.loads)
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD))
    [review] = reviews(ports)
    assert review.decision.merges_unrecorded
    assert gated(ports, 12) == []
    assert not any(load.fresh for load in ports.configs.loads[loads:]), "no fresh read of the file"


async def test_a_deploymentless_job_run_again_gets_its_own_answer() -> None:
    """A job that creates no deployment, rejected, then run again in the same workflow run (the
    same run id and sha, a new webhook delivery): judged again and answered again; GitHub's
    redelivery of the first delivery is not. (The first answer, naming no deployment, leaves no
    success to start the re-run's range: each merged ticket HEAD contains is judged.)"""
    ports = await gated_world()
    ports.ancestry.pairs.update({(M12, HEAD), (M13, HEAD)})
    ports.github.add_commit(REPOSITORY, HEAD)
    request = deployment_protection_rule(HEAD, deployment_id=None)
    await ports.dispatch("deployment_protection_rule", request, delivery_id="first")
    await ports.dispatch("deployment_protection_rule", request, delivery_id="first")
    assert len(reviews(ports)) == 1
    await ports.dispatch("deployment_protection_rule", request, delivery_id="re-run")
    first, again = reviews(ports)
    assert first.key != again.key
    assert first.decision.state is again.decision.state is GateState.REJECTED


async def test_a_pending_merge_kept_under_the_repositorys_old_name_holds_the_gate_by_its_id() -> None:
    """A close stored while the repository had another name (kept with GitHub's id): the gate waits
    for it, found by the id; one of another repository now under this name (another id) does not."""
    ports = await gated_world()
    ports.store.close_waits("merge-41", "acme/old-name", repository_id=REPOSITORY_ID)
    with pytest.raises(TransientError):
        await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD))
    ports.store.processed("merge-41")
    ports.store.close_waits("merge-reused", REPOSITORY, repository_id=REPOSITORY_ID + 1)
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD))
    assert [review.decision.state for review in reviews(ports)] == [GateState.REJECTED]


async def test_a_pending_merge_of_another_repository_does_not_hold_the_gate() -> None:
    """A `pull_request.closed` waiting in another repository says nothing about this deployment."""
    ports = await gated_world()
    ports.store.close_waits("merge-elsewhere", "acme/other")
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD))
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED


async def test_unticketed_reject_holds_a_deployment_without_an_earlier_success() -> None:
    """`deployments.unticketed: reject` and no successful deployment known (the environment's
    first): PR #42 merged as M14 links no ticket and the deployed sha contains it, so the
    deployment is rejected, naming #42; with `allow` it goes."""
    for policy, state in (("reject", GateState.REJECTED), ("allow", GateState.APPROVED)):
        ports = world(Rules(policy_version="v1", gate=("production",), unticketed=policy))
        ports.clock.now = ACCEPTED_AT + 3600
        await merge(ports, 42, "Tidy the README", M14, head="5" * 40)
        await merge(ports, 43, "Tidy the docs", M13, head="6" * 40)  # not in the deployed sha
        ports.ancestry.pairs.add((M14, HEAD))
        ports.github.add_commit(REPOSITORY, HEAD)
        await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD))
        [review] = reviews(ports)
        assert review.decision.state is state, policy
        assert review.decision.unticketed == ((42,) if policy == "reject" else ()), policy


@pytest.mark.parametrize("api", ["https://api.github.com", "https://ghe.example.com/api/v3"])
async def test_a_request_sent_before_a_rename_is_answered_under_the_name_now(api: str) -> None:
    """A protection-rule request written while the repository was acme/app and processed after
    the `renamed` event moved its records to acme/tools (its callback still names
    acme/app/actions/runs/4242): the delivery
    runs under the name now, and its run is answered there, never dropped unanswered (GitHub
    would otherwise wait for the rule until its time runs out)."""
    ports = world(GATED)
    ports.clock.now = ACCEPTED_AT + 3600
    ports.github.names[1001] = REPOSITORY
    await ports.dispatch("deployment_status", _of_id(1001, deployment_status(7, BASE, "success")))
    ports.github.names[1001] = "acme/tools"
    ports.github.add_commit("acme/tools", HEAD)
    await ports.dispatch("repository", renamed(1001, REPOSITORY, "acme/tools"))
    payload = _of_id(1001, deployment_protection_rule(HEAD, api=api))
    await ports.dispatch("deployment_protection_rule", payload, delivery_id="gate-renamed")
    [review] = reviews(ports)
    assert (review.repository, review.run_id) == ("acme/tools", 4242)


def _of_id(repository_id: int, payload: dict[str, object]) -> dict[str, object]:
    """The payload of the repository GitHub knows by `repository_id`."""
    payload["repository"] = {**payload["repository"], "id": repository_id}  # type: ignore[dict-item]
    return payload


async def test_a_request_under_a_configuration_that_cannot_be_used_is_rejected_saying_so() -> None:
    """The file in force is broken (defaults in force: nothing gated): the request for production
    is rejected unjudged, its comment saying the configuration cannot be used, nothing recorded
    on a ticket; never left unanswered, never judged under the defaults."""
    ports = await gated_world()
    ports.configs.default = Rules(policy_version="v2", error="line 3: deployments: unknown key 'gates'")
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD))
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED and review.decision.tickets == ()
    assert "configuration cannot be used" in gate_comment(review.decision)
    assert gated(ports, 12) == [] and gated(ports, 13) == []


async def test_a_success_posted_for_a_deployment_the_gate_never_approved_does_not_move_the_range() -> None:
    """#13 merged unaccepted as M13; the gate approved deploying M12 (deployment 901), which
    succeeded. Someone with push access then creates deployment 950 of HEAD in production through
    the REST API (protection rules guard workflow jobs, not that API) and posts its `success`
    status; the next protection-rule request for HEAD still judges #13 (its range starts at M12,
    the newest success the gate approved), rather than find an empty range from HEAD and approve."""
    ports = await gated_world()
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(M12, deployment_id=901))
    await ports.dispatch("deployment_status", deployment_status(901, M12, "success"))
    await ports.dispatch("deployment_status", deployment_status(950, HEAD, "success"))
    await ports.dispatch("deployment_protection_rule", deployment_protection_rule(HEAD, deployment_id=951))
    approved, review = reviews(ports)
    assert approved.decision.state is GateState.APPROVED
    assert review.decision.state is GateState.REJECTED
    assert [(v.number, v.blocker) for v in review.decision.tickets] == [(13, Blocker.NOT_ACCEPTED)]
    assert [call.args for call in ports.github.called("compare_commits")][-1] == (REPOSITORY, M12, HEAD)


async def test_unticketed_reject_holds_back_a_commit_no_pull_request_merged() -> None:
    """`unticketed: reject`; the deployed sha X sits on top of M12 (#12, accepted) and was merged
    by no pull request (pushed straight to a branch): the range holds X, which belongs to no
    ticket and no recorded merge, so the deployment must not be approved."""
    ports = await accepted_and_merged(Rules(policy_version="v1", gate=("production",), unticketed="reject"))
    unmerged = "7" * 40
    ports.github.add_history(REPOSITORY, BASE, M12, unmerged)
    await ports.dispatch("deployment_status", deployment_status(7, BASE, "success"))
    await ports.dispatch(
        "deployment_protection_rule", deployment_protection_rule(unmerged, deployment_id=905)
    )
    [review] = reviews(ports)
    assert review.decision.state is GateState.REJECTED
