"""The attention codes of one ticket, decided from its snapshot and the record's facts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from policies.attention import CODES, OverdueRecord, RecordFacts, attention
from policies.model import Review, Ticket, TicketKey
from policies.rails import PullRequestFact, Rails
from policies.states import DeploymentState, IntegrationState, ReviewKind, WorkState

KEY = TicketKey("acme/web", 12)
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HEAD, OTHER, MERGE = "a" * 40, "b" * 40, "d" * 40


def pull(head: str = HEAD, merged: bool = True) -> PullRequestFact:
    """PR #34 linking the ticket, merged (with merge commit MERGE) or open."""
    return PullRequestFact(
        34, "https://github.com/acme/web/pull/34", True, not merged, head, "agent/12", T0,
        merged_while_linked=merged, merge_commit=MERGE if merged else None,
    )  # fmt: skip


def ticket(
    work: WorkState,
    *,
    merged_head: str | None = None,
    accepted_commit: str | None = HEAD,
    deployment: DeploymentState = DeploymentState.NOT_DEPLOYED,
    integration: IntegrationState | None = None,
    no_code: bool = False,
    attempt: int = 1,
) -> Ticket:
    """A ticket in `work`, with a merged PR at `merged_head` when given, accepted at `accepted_commit`."""
    pulls = {34: pull(merged_head)} if merged_head else {}
    state = integration or (IntegrationState.MERGED if merged_head else IntegrationState.UNREPORTED)
    rails = Rails(integration=state, deployments={"production": deployment}, pull_requests=pulls)
    review = None
    if work is WorkState.ACCEPTED:
        review = Review("rita", ReviewKind.INDEPENDENT, attempt, accepted_commit, None, T0, 2)
    return Ticket(KEY, 5, work, no_code=no_code, claimant="cody", attempt=attempt, review=review, rails=rails)


def overdue(attempt: int = 1, since: datetime = T0, limit: int = 60) -> RecordFacts:
    """The watchdog recorded attempt `attempt` silent since `since` past `limit` minutes."""
    return RecordFacts(OverdueRecord(attempt, since, limit, since + timedelta(minutes=limit + 1)))


NOW = T0 + timedelta(hours=3)


def test_a_merge_without_acceptance_is_flagged() -> None:
    """A linked PR merged while the work is delivered: merged_not_accepted and awaiting_review."""
    assert attention(ticket(WorkState.DELIVERED, merged_head=HEAD), RecordFacts(), NOW) == [
        "merged_not_accepted",
        "awaiting_review",
    ]


def test_accepted_at_the_merged_head_and_deployed_needs_nothing() -> None:
    """Accepted at the head that merged, deployed: no code at all."""
    done = ticket(WorkState.ACCEPTED, merged_head=HEAD, deployment=DeploymentState.DEPLOYED)
    assert attention(done, RecordFacts(), NOW) == []


def test_accepted_but_not_deployed() -> None:
    """Accepted at the merged head, deployment rail not_deployed, deploying or failed: flagged."""
    for state in (DeploymentState.NOT_DEPLOYED, DeploymentState.DEPLOYING, DeploymentState.FAILED):
        found = attention(ticket(WorkState.ACCEPTED, merged_head=HEAD, deployment=state), RecordFacts(), NOW)
        assert found == ["accepted_not_deployed"]


def test_a_no_code_ticket_is_never_undeployed() -> None:
    """A no-code ticket's deployment rail says nothing."""
    rails = Rails(applicable=False)
    assert attention(Ticket(KEY, 3, WorkState.ACCEPTED, no_code=True, rails=rails), RecordFacts(), NOW) == []


def test_an_accepted_commit_other_than_the_merged_head_is_flagged() -> None:
    """Accepted at OTHER, the PR merged at HEAD: the merge holds work nobody accepted."""
    found = attention(
        ticket(
            WorkState.ACCEPTED, merged_head=HEAD, accepted_commit=OTHER, deployment=DeploymentState.DEPLOYED
        ),
        RecordFacts(),
        NOW,
    )
    assert found == ["accepted_commit_not_merged"]


def test_the_accepted_commit_may_be_the_merge_commit_or_have_no_commit() -> None:
    """Accepted at the merge commit itself, or with artifacts only (no commit): not flagged."""
    deployed = DeploymentState.DEPLOYED
    at_merge = ticket(WorkState.ACCEPTED, merged_head=HEAD, accepted_commit=MERGE, deployment=deployed)
    no_commit = ticket(WorkState.ACCEPTED, merged_head=HEAD, accepted_commit=None, deployment=deployed)
    unmerged = ticket(WorkState.ACCEPTED, accepted_commit=OTHER, deployment=deployed)
    for case in (at_merge, no_commit, unmerged):
        assert "accepted_commit_not_merged" not in attention(case, RecordFacts(), NOW)


def test_a_recorded_overdue_claim_is_flagged_until_a_sign_of_life() -> None:
    """The watchdog's record flags the claim; a sign of life after the recorded silence began ends it."""
    claimed = ticket(WorkState.CLAIMED)
    assert attention(claimed, overdue(), NOW) == ["claim_overdue"]
    record = overdue().overdue
    later = RecordFacts(record, last_sign_of_life=T0 + timedelta(minutes=90))
    assert attention(claimed, later, NOW) == []
    earlier = RecordFacts(record, last_sign_of_life=T0 - timedelta(minutes=5))
    assert attention(claimed, earlier, NOW) == ["claim_overdue"]


def test_an_overdue_record_of_another_attempt_or_state_says_nothing() -> None:
    """A record of attempt 1 says nothing of attempt 2, nor of a delivered ticket, nor before it was made."""
    assert attention(ticket(WorkState.CLAIMED, attempt=2), overdue(attempt=1), NOW) == []
    assert "claim_overdue" not in attention(ticket(WorkState.DELIVERED), overdue(), NOW)
    assert attention(ticket(WorkState.CLAIMED), overdue(), T0 + timedelta(minutes=30)) == []


def test_blocked_and_config_error() -> None:
    """The repository rail blocked, and the repository's latest command refused for its config."""
    blocked = ticket(WorkState.CLAIMED, integration=IntegrationState.BLOCKED)
    assert attention(blocked, RecordFacts(config_refused=True), NOW) == ["blocked", "config_error"]


@given(
    work=st.sampled_from(list(WorkState)),
    merged=st.booleans(),
    accepted_commit=st.sampled_from([HEAD, OTHER, MERGE, None]),
    deployment=st.sampled_from(list(DeploymentState)),
    record=st.booleans(),
    sign_minutes=st.one_of(st.none(), st.integers(-100, 300)),
    config=st.booleans(),
    now_minutes=st.integers(0, 600),
)
def test_codes_are_known_ordered_and_consistent_with_the_work_rail(
    work: WorkState,
    merged: bool,
    accepted_commit: str | None,
    deployment: DeploymentState,
    record: bool,
    sign_minutes: int | None,
    config: bool,
    now_minutes: int,
) -> None:
    """Whatever the ticket, codes come in CODES order, once each, and agree with the work rail."""
    subject = ticket(
        work, merged_head=HEAD if merged else None, accepted_commit=accepted_commit, deployment=deployment
    )
    sign = T0 + timedelta(minutes=sign_minutes) if sign_minutes is not None else None
    facts = RecordFacts(overdue().overdue if record else None, sign, config)
    found = attention(subject, facts, T0 + timedelta(minutes=now_minutes))
    assert found == [code for code in CODES if code in found]
    accepted = work is WorkState.ACCEPTED
    assert ("merged_not_accepted" in found) == (merged and not accepted)
    assert ("awaiting_review" in found) == (work is WorkState.DELIVERED)
    assert ("config_error" in found) == config
    if not accepted:
        assert not {"accepted_not_deployed", "accepted_commit_not_merged"} & set(found)
    if "claim_overdue" in found:
        assert work is WorkState.CLAIMED and (sign is None or sign <= T0)
