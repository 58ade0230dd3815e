"""Acceptance that stays true (SPEC): what an acceptance binds, when it stops holding, how it is
renewed, and the check-run's verdict at each step. The pure core only."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.acceptance import InvalidReason, Standing, description_digest, judge, recorded_validity
from policies.checks import Conclusion, Linked, verdict
from policies.commands import Accept, AcceptMode, Context
from policies.engine import apply_all, decide, observe
from policies.events import Event, EventType
from policies.fold import apply
from policies.model import Actor
from policies.notices import AcceptanceLapsed, DescriptionEdited, NoticeContext, decide_notice
from policies.rails import CheckObserved, ObservationContext, PullRequestObserved
from policies.refusals import Refusal, RefusalCode
from policies.states import ReviewKind, Role, SelfVerification, WorkState
from tests.unit.work_walk import (
    ACTORS,
    FIRST_COMMIT,
    MONA,
    RITA,
    at,
    context,
    events_of,
    refusal_code,
    run,
    ticket_in,
)

CODY_REVIEWING = ACTORS["claimant+reviewer"]
TREE = "7ree000000000000000000000000000000000000"
AMENDED = "a3e0ded111111111111111111111111111111111"


def accepting(actor: Actor = RITA, minute: int = 10, **more: object) -> Context:
    """An `/accept` written at `minute`, with the facts the edge read (overridable)."""
    base = replace(context(actor, minute), tree=TREE, ci_state="passed", ci_checks=("build",))
    return replace(base, **more)  # type: ignore[arg-type]


def accepted(actor: Actor = RITA, mode: AcceptMode = AcceptMode.REVIEW, **more: object):  # type: ignore[no-untyped-def]
    """A ticket accepted at minute 10 (30 days' expiry) by `actor`."""
    reason = "Hotfix verified." if mode is AcceptMode.OVERRIDE else ""
    return run(ticket_in(WorkState.DELIVERED), Accept(mode=mode, reason=reason), accepting(actor, **more))


# -- what an acceptance binds -------------------------------------------------------------


def test_the_accepted_event_binds_commit_tree_reviewer_role_policy_description_and_ci() -> None:
    """Everything the decision rested on is in the accepted event, and on the ticket's review."""
    digest = description_digest("Uploader", "Stop the retries.")
    events = events_of(ticket_in(WorkState.DELIVERED), Accept(), accepting(description_digest=digest))
    (event,) = events
    assert event.type is EventType.ACCEPTED and event.role == "reviewer"
    assert event.policy_version == "blob-1"
    assert event.data["commit"] == FIRST_COMMIT and event.data["tree"] == TREE
    assert event.data["description_digest"] == digest
    assert event.data["ci"] == {"state": "passed", "checks": ["build"]}
    assert event.data["decided_at"] == at(10).isoformat()
    assert event.data["expires_at"] == (at(10) + timedelta(days=30)).isoformat()
    review = apply_all(ticket_in(WorkState.DELIVERED), events).review
    assert review is not None and (review.tree, review.ci, review.ci_checks) == (TREE, "passed", ("build",))


def test_an_acceptance_recorded_before_binding_folds_with_ci_none_and_expiry_from_its_time() -> None:
    """An `accepted` event of an older railyard (no tree, CI or expiry) is judged from its own time."""
    ticket = ticket_in(WorkState.DELIVERED)
    old = Event(
        EventType.ACCEPTED,
        "rita",
        "reviewer",
        at(10),
        "op-old",
        "blob-0",
        {"attempt": 1, "commit": FIRST_COMMIT, "review": "independent", "reason": None},
    )
    review = apply(ticket, old).review
    assert review is not None and review.ci == "none" and review.tree is None
    assert judge(review, Standing(at=at(10) + timedelta(days=29))).valid
    late = judge(review, Standing(at=at(10) + timedelta(days=30)))
    assert (late.valid, late.reason) == (False, InvalidReason.EXPIRED)


# -- who can accept ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(AcceptMode))
def test_an_agent_never_accepts_in_any_form(mode: AcceptMode) -> None:
    """A Bot account or one `agents:` lists is refused `agents_cannot_accept`, whatever its roles."""
    actor = Actor("coder-bot[bot]", frozenset(Role), id=99)
    reason = "Verified." if mode is AcceptMode.OVERRIDE else ""
    ctx = accepting(actor, actor_is_agent=True)
    assert (
        refusal_code(ticket_in(WorkState.DELIVERED), Accept(mode, reason), ctx)
        is RefusalCode.AGENTS_CANNOT_ACCEPT
    )


@pytest.mark.parametrize("roles", [frozenset(), frozenset({Role.RUNNER})])
@pytest.mark.parametrize("state", [WorkState.DELIVERED, WorkState.CLAIMED, WorkState.ACCEPTED])
def test_an_agent_is_refused_as_an_agent_whatever_its_roles_and_the_state(
    roles: frozenset[Role], state: WorkState
) -> None:
    """An agent holding only runner (or no role) that sends `/accept` is told it is an agent
    (`agents_cannot_accept`), not `not_allowed` or `wrong_state`: it can never accept."""
    ctx = accepting(Actor("coder-bot[bot]", roles, id=99), actor_is_agent=True)
    assert refusal_code(ticket_in(state), Accept(), ctx) is RefusalCode.AGENTS_CANNOT_ACCEPT


def test_acceptance_by_anyone_lets_a_listed_agent_accept() -> None:
    """`acceptance.by: anyone` turns the agent rule off; the other rules still hold."""
    ctx = accepting(replace(RITA, login="review-bot"), actor_is_agent=True, agents_may_accept=True)
    assert run(ticket_in(WorkState.DELIVERED), Accept(), ctx).work is WorkState.ACCEPTED


@pytest.mark.parametrize("state", ["failed", "pending", "awaiting_approval", "none"])
def test_ci_require_refuses_while_the_delivered_commit_has_not_passed(state: str) -> None:
    """`acceptance.ci: require` refuses `ci_not_passed`, naming the checks that decided it."""
    ctx = accepting(acceptance_ci_required=True, ci_state=state, ci_checks=("lint",))
    decision = decide(ticket_in(WorkState.DELIVERED), Accept(), ctx)
    assert isinstance(decision, Refusal) and decision.code is RefusalCode.CI_NOT_PASSED
    assert "lint" in decision.reason and state in decision.reason


def test_ci_record_accepts_a_failing_commit_and_records_it() -> None:
    """`acceptance.ci: record` (the default) accepts, and the record says CI failed."""
    ticket = run(ticket_in(WorkState.DELIVERED), Accept(), accepting(ci_state="failed", ci_checks=("test",)))
    assert ticket.review is not None and (ticket.review.ci, ticket.review.ci_checks) == ("failed", ("test",))


# -- when it stops holding -------------------------------------------------------------------


def test_an_acceptance_expires_at_exactly_its_configured_days() -> None:
    """Valid a second before `expires_after_days` from the accepting comment, expired at it."""
    review = accepted(acceptance_expires_after_days=7).review
    assert review is not None
    expiry = at(10) + timedelta(days=7)
    assert judge(review, Standing(at=expiry - timedelta(seconds=1))).valid
    assert judge(review, Standing(at=expiry)).reason is InvalidReason.EXPIRED


def test_an_acceptance_without_expiry_never_expires() -> None:
    """`expires_after_days: null`: no expiry, even centuries later."""
    review = accepted(acceptance_expires_after_days=None).review
    assert review is not None and review.expires_at is None
    assert judge(review, Standing(at=at(10) + timedelta(days=365 * 300))).valid


def test_a_late_redelivered_accept_is_recorded_and_at_once_expired() -> None:
    """An `/accept` whose comment is already past the expiry when processed: recorded, then lapsed."""
    ctx = replace(accepting(acceptance_expires_after_days=1), at=at(10) + timedelta(days=2))
    events = events_of(ticket_in(WorkState.DELIVERED), Accept(), ctx)
    assert [e.type for e in events] == [EventType.ACCEPTED, EventType.ACCEPTANCE_INVALIDATED]
    ticket = apply_all(ticket_in(WorkState.DELIVERED), events)
    assert ticket.work is WorkState.ACCEPTED
    assert ticket.review is not None and ticket.review.invalidated == "expired"


@pytest.mark.parametrize(
    ("kind_actor", "mode", "roles", "reason"),
    [
        (RITA, AcceptMode.REVIEW, frozenset(), InvalidReason.REVIEWER_LOST_ROLE),
        (RITA, AcceptMode.REVIEW, frozenset({Role.REVIEWER}), None),
        (MONA, AcceptMode.OVERRIDE, frozenset({Role.RELEASE_OWNER}), None),
        (MONA, AcceptMode.OVERRIDE, frozenset({Role.REVIEWER}), InvalidReason.REVIEWER_LOST_ROLE),
        (CODY_REVIEWING, AcceptMode.SELF, frozenset({Role.RUNNER}), InvalidReason.REVIEWER_LOST_ROLE),
    ],
)
def test_an_acceptance_holds_only_while_its_account_holds_a_role_that_could_make_it(
    kind_actor: Actor, mode: AcceptMode, roles: frozenset[Role], reason: InvalidReason | None
) -> None:
    """A review needs reviewer now; an override repository_maintainer or release_owner."""
    review = accepted(kind_actor, mode).review
    assert review is not None
    assert judge(review, Standing(at=at(20), reviewer_roles=roles)).reason is reason


def test_a_high_risk_label_or_self_verification_never_invalidates_only_a_self_verification() -> None:
    """Now high-risk or `self_verification: never` ends a self-verification, never a review."""
    self_verified = accepted(CODY_REVIEWING, AcceptMode.SELF).review
    reviewed = accepted().review
    assert self_verified is not None and reviewed is not None
    risky = Standing(at=at(20), high_risk=True)
    never = Standing(at=at(20), self_verification=SelfVerification.NEVER)
    assert judge(self_verified, risky).reason is InvalidReason.NOW_HIGH_RISK
    assert judge(self_verified, never).reason is InvalidReason.SELF_VERIFICATION_DISALLOWED
    assert judge(reviewed, risky).valid and judge(reviewed, never).valid


def test_a_recorded_lapse_stands_even_when_the_role_comes_back() -> None:
    """Once `acceptance_invalidated` is recorded only a renewal makes the acceptance hold again."""
    ticket = accepted()
    assert ticket.review is not None
    lapse = decide_notice(ticket, AcceptanceLapsed(ticket.review.revision, "reviewer_lost_role"), notice())
    assert not isinstance(lapse, Refusal) and len(lapse) == 1
    ticket = apply_all(ticket, lapse)
    assert ticket.review is not None
    back = judge(ticket.review, Standing(at=at(30), reviewer_roles=frozenset({Role.REVIEWER})))
    assert (back.valid, back.reason, back.recorded) == (False, InvalidReason.REVIEWER_LOST_ROLE, True)
    again = decide_notice(ticket, AcceptanceLapsed(ticket.review.revision, "expired"), notice())
    assert again == ()  # recorded once


def notice() -> NoticeContext:
    return NoticeContext(actor="railyard", operation_id="invalidated:acme/rockets#7", at=at(40))


# -- renewal ---------------------------------------------------------------------------------


def test_accept_on_a_valid_acceptance_is_refused_as_wrong_state() -> None:
    """`/accept` on an accepted ticket whose acceptance holds changes nothing."""
    ticket = accepted()
    ctx = accepting(replace(RITA, login="rhea"), 20, reviewer_roles=frozenset({Role.REVIEWER}))
    assert refusal_code(ticket, Accept(), ctx) is RefusalCode.WRONG_STATE


def test_accept_renews_an_expired_acceptance_and_records_the_lapse_first() -> None:
    """The renewal records `acceptance_invalidated` (if not yet recorded), then `accepted` with `renews`."""
    ticket = accepted(acceptance_expires_after_days=1)
    assert ticket.review is not None
    first = ticket.review.revision
    ctx = replace(accepting(minute=20, acceptance_expires_after_days=1), at=at(10) + timedelta(days=3))
    ctx = replace(ctx, comment_at=ctx.at)
    events = events_of(ticket, Accept(), ctx)
    assert [e.type for e in events] == [EventType.ACCEPTANCE_INVALIDATED, EventType.ACCEPTED]
    assert events[0].data["reason"] == "expired" and events[1].data["renews"] == first
    renewed = apply_all(ticket, events)
    assert renewed.review is not None and renewed.review.renews == first
    assert judge(renewed.review, Standing(at=ctx.at)).valid


@given(
    minutes=st.integers(0, 60 * 24 * 60),
    days=st.one_of(st.none(), st.integers(1, 40)),
    roles=st.sets(st.sampled_from(list(Role))),
    high_risk=st.booleans(),
    never=st.booleans(),
    mode=st.sampled_from([AcceptMode.REVIEW, AcceptMode.OVERRIDE]),
)
def test_a_renewal_is_possible_exactly_when_the_acceptance_no_longer_holds(
    minutes: int, days: int | None, roles: set[Role], high_risk: bool, never: bool, mode: AcceptMode
) -> None:
    """An entitled reviewer's `/accept` on an accepted ticket applies iff `judge` says it lapsed."""
    actor = MONA if mode is AcceptMode.OVERRIDE else RITA
    ticket = accepted(actor, mode, acceptance_expires_after_days=days)
    assert ticket.review is not None
    now = at(10) + timedelta(minutes=minutes)
    policy = SelfVerification.NEVER if never else SelfVerification.EXPLICIT
    held = frozenset(roles)
    standing = Standing(now, days, policy, high_risk, held)
    renewer = replace(actor, login="renewer", roles=frozenset({Role.REVIEWER, Role.REPOSITORY_MAINTAINER}))
    ctx = replace(
        accepting(renewer, acceptance_expires_after_days=days),
        at=now,
        comment_at=now,
        comment_id=10**9,
        high_risk=high_risk,
        self_verification=policy,
        reviewer_roles=held,
    )
    reason = "Renewed." if mode is AcceptMode.OVERRIDE else ""
    decision = decide(ticket, Accept(mode, reason), ctx)
    assert isinstance(decision, Refusal) == judge(ticket.review, standing).valid


# -- the check-run at each step ----------------------------------------------------------------


def test_a_new_head_with_the_accepted_tree_keeps_the_check_green_and_another_tree_does_not() -> None:
    """An amended message (same tree) passes "same content"; a changed file is "differs from head"."""
    ticket = accepted()
    same = verdict(AMENDED, [Linked(7, ticket, head_tree=TREE)])
    changed = verdict(AMENDED, [Linked(7, ticket, head_tree="0ther" + TREE[5:])])
    unknown = verdict(AMENDED, [Linked(7, ticket)])
    assert same.conclusion is Conclusion.SUCCESS and "same content" in same.lines[0]
    assert changed.conclusion is Conclusion.ACTION_REQUIRED and "differs from head" in changed.title
    assert unknown.conclusion is Conclusion.ACTION_REQUIRED


def test_the_check_names_why_an_acceptance_no_longer_holds() -> None:
    """Valid: success at the accepted commit; expired (judged now, or recorded): action_required."""
    ticket = accepted(acceptance_expires_after_days=1)
    assert ticket.review is not None
    assert verdict(FIRST_COMMIT, [Linked(7, ticket)]).conclusion is Conclusion.SUCCESS
    judged = judge(ticket.review, Standing(at=at(10) + timedelta(days=2)))
    result = verdict(FIRST_COMMIT, [Linked(7, ticket, judged)])
    assert result.conclusion is Conclusion.ACTION_REQUIRED and "expired" in result.title
    lapse = decide_notice(ticket, AcceptanceLapsed(ticket.review.revision, "expired"), notice())
    assert not isinstance(lapse, Refusal)
    recorded = verdict(FIRST_COMMIT, [Linked(7, apply_all(ticket, lapse))])
    assert recorded.conclusion is Conclusion.ACTION_REQUIRED and "expired" in recorded.title


# -- order of arrival ------------------------------------------------------------------------------

OBS = ObservationContext(actor="github", at=at(50), operation_id="obs", policy_version="blob-1")


def _observations() -> list[object]:
    pr = PullRequestObserved(34, "https://github.com/acme/rockets/pull/34", True, True, False, FIRST_COMMIT,
                             "agent/7", None, at(3))  # fmt: skip
    later = replace(pr, head_sha=AMENDED, updated_at=at(12))
    return [pr, later, CheckObserved(FIRST_COMMIT, "build", "success", 1, at(5)),
            CheckObserved(AMENDED, "build", "failure", 2, at(13))]  # fmt: skip


@given(order=st.permutations(range(4)), edit_first=st.booleans(), minutes=st.integers(0, 90_000))
def test_validity_never_depends_on_the_order_repository_events_and_edits_arrive_in(
    order: list[int], edit_first: bool, minutes: int
) -> None:
    """However PR, check and description events interleave with each other, the acceptance's
    validity (and its check verdict) at any moment is the same."""
    observations = _observations()
    results = set()
    for arrangement in (order, sorted(order)):
        ticket = accepted(acceptance_expires_after_days=30)
        edited = DescriptionEdited(None, description_digest("t", "b"), body_changed=True)
        steps: list[object] = [observations[i] for i in arrangement]
        steps.insert(0 if edit_first else len(steps), edited)
        for step in steps:
            if isinstance(step, DescriptionEdited):
                decided = decide_notice(ticket, step, notice())
            else:
                decided = observe(ticket, step, OBS)  # type: ignore[arg-type]
            assert not isinstance(decided, Refusal)
            ticket = apply_all(ticket, decided)
        now = at(10) + timedelta(minutes=minutes)
        validity = recorded_validity(ticket, now)
        assert validity is not None
        check = verdict(FIRST_COMMIT, [Linked(7, ticket, validity)])
        results.add((validity.valid, validity.reason, check.conclusion, ticket.description_changed))
    assert len(results) == 1


# -- the description and the claimant ---------------------------------------------------------------


def test_an_edited_description_is_recorded_and_flagged_after_the_claim_and_after_acceptance() -> None:
    """`description_changed` never writes WorkState; it says whether it came after the claim or acceptance."""
    for state, since in [(WorkState.CLAIMED, "claim"), (WorkState.ACCEPTED, "acceptance")]:
        ticket = ticket_in(state) if state is not WorkState.ACCEPTED else accepted()
        decided = decide_notice(ticket, DescriptionEdited("old", description_digest("new", "")), notice())
        assert not isinstance(decided, Refusal)
        (event,) = decided
        assert event.type is EventType.DESCRIPTION_CHANGED
        after = apply_all(ticket, decided)
        assert after.work is ticket.work and after.description_changed == since
    same = ticket_in(WorkState.CLAIMED)
    same = apply_all(same, decide_notice(same, DescriptionEdited(None, "d1"), notice()))  # type: ignore[arg-type]
    assert decide_notice(same, DescriptionEdited("d0", "d1"), notice()) == ()  # nothing new


def test_an_edit_the_acceptance_already_read_flags_nothing_whichever_arrives_first() -> None:
    """The body edited before `/accept`, which read and bound the new text: whether the
    `issues.edited` webhook arrives before the accept or after it (GitHub does not promise the
    order), the ticket ends the same, never "the description changed after acceptance"."""
    old = description_digest("Uploader", "Stop the retries.")
    new = description_digest("Uploader", "Stop the retries, and log them.")
    edited = DescriptionEdited(old, new, body_changed=True)
    ends = set()
    for edit_first in (True, False):
        ticket = ticket_in(WorkState.DELIVERED)
        if edit_first:
            ticket = apply_all(ticket, decide_notice(ticket, edited, notice()))  # type: ignore[arg-type]
        ticket = run(ticket, Accept(), accepting(description_digest=new))
        if not edit_first:
            ticket = apply_all(ticket, decide_notice(ticket, edited, notice()))  # type: ignore[arg-type]
        assert ticket.review is not None and ticket.review.description_digest == new
        ends.add((ticket.description_changed, ticket.description_digest))
    assert ends == {(None, new)}


def test_the_claimant_giving_the_work_up_is_recorded_as_the_claimant_even_holding_reviewer() -> None:
    """`/reopen` by the claimant who also reviews records the claimant relation and the release."""
    from policies.commands import Reopen

    events = events_of(ticket_in(WorkState.CLAIMED), Reopen("Blocked on infra."), context(CODY_REVIEWING, 9))
    assert events[0].role == "claimant" and events[0].data["released_by_claimant"] is True


def test_the_latest_feedback_is_kept_for_the_next_attempt() -> None:
    """A send-back's feedback, then a reopen's reason, are the ticket's feedback in turn."""
    from policies.commands import Claim, Reopen, SendBack

    ticket = run(ticket_in(WorkState.DELIVERED), SendBack("Tests fail on Windows."), context(RITA, 10))
    assert ticket.feedback is not None
    assert (ticket.feedback.kind, ticket.feedback.text, ticket.feedback.attempt) == (
        "sent_back",
        "Tests fail on Windows.",
        1,
    )
    ticket = run(ticket, Reopen("Needs a rethink."), context(RITA, 11))
    assert ticket.feedback is not None and (ticket.feedback.kind, ticket.feedback.by) == ("reopened", "rita")
    ticket = run(ticket, Claim(), context(replace(RITA, login="ruth", roles=frozenset({Role.RUNNER})), 12))
    assert ticket.feedback is not None and ticket.feedback.text == "Needs a rethink."  # still there to read


def test_every_review_kind_has_roles_that_could_make_it() -> None:
    """The judge knows the roles of every kind of acceptance (the `/accept` rows)."""
    from policies.acceptance import ROLES_FOR

    assert set(ROLES_FOR) == set(ReviewKind)
    assert all(ROLES_FOR.values())
