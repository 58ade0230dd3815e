"""The deployment gate's decision: approved exactly when every ticket the deployment brings has
a valid acceptance whose CI did not fail, and no unticketed merge is refused."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from app.cli import main
from app.settings import Settings
from app.views.gate_text import gate_comment
from policies.acceptance import InvalidReason, Validity
from policies.gate import Blocker, GateState, TicketInRange, Unticketed, decide_gate, verdict_of

VALID = Validity(True)
CI_STATES = ("passed", "failed", "pending", "awaiting_approval", "none")

validities = st.one_of(
    st.none(),
    st.just(VALID),
    st.sampled_from(list(InvalidReason)).map(lambda reason: Validity(False, reason)),
)
tickets = st.builds(
    TicketInRange, st.integers(1, 500), validities, st.sampled_from(CI_STATES), st.booleans(), st.booleans()
)


def lets_go(ticket: TicketInRange) -> bool:
    valid = ticket.validity is not None and ticket.validity.valid
    return valid and ticket.merged_as_accepted and ticket.ci != "failed" and ticket.roles_verified


@given(st.lists(tickets, max_size=8), st.lists(st.integers(1, 500), max_size=4), st.sampled_from(Unticketed))
def test_a_deployment_is_approved_iff_every_ticket_is_valid_and_no_unticketed_merge_is_refused(
    brought: list[TicketInRange], unticketed: list[int], policy: Unticketed
) -> None:
    """approve <=> every ticket valid (merged as accepted, CI not failed) and (no unticketed
    merge, or `allow`)."""
    decision = decide_gate(brought, unticketed, policy)
    last = {ticket.number: ticket for ticket in brought}  # one ticket is judged once
    expected = all(lets_go(t) for t in last.values()) and (not unticketed or policy is Unticketed.ALLOW)
    assert decision.approved is expected
    assert [v.number for v in decision.tickets] == sorted(last)
    blocking = {v.number for v in decision.blocking}
    assert blocking == {n for n, t in last.items() if not lets_go(t)}


@given(st.lists(tickets, min_size=1, max_size=8))
def test_a_rejection_names_every_ticket_that_holds_it_back_and_no_other(brought: list[TicketInRange]) -> None:
    """The comment names each blocking ticket; a ticket that lets the deployment go is not named."""
    decision = decide_gate(brought, [], Unticketed.ALLOW)
    comment = gate_comment(decision)
    assert comment.startswith(f"railyard {decision.state.value}: ")
    if decision.approved:
        return
    named = {v.number for v in decision.blocking}
    for verdict in decision.tickets:
        assert (f"#{verdict.number} " in comment or f"#{verdict.number}:" in comment) is (
            verdict.number in named
        )


def test_each_reason_a_ticket_holds_a_deployment_back() -> None:
    """Not accepted, expired, invalid (with its reason, or none when what merged is not what was
    accepted), accepted while CI failed, the reviewer's role unverifiable now."""
    assert verdict_of(TicketInRange(1, None)).blocker is Blocker.NOT_ACCEPTED
    assert verdict_of(TicketInRange(2, Validity(False, InvalidReason.EXPIRED))).blocker is Blocker.EXPIRED
    lost = verdict_of(TicketInRange(3, Validity(False, InvalidReason.REVIEWER_LOST_ROLE)))
    assert (lost.blocker, lost.invalid_reason) == (Blocker.INVALID, InvalidReason.REVIEWER_LOST_ROLE)
    assert verdict_of(TicketInRange(4, VALID, "failed")).blocker is Blocker.CI_FAILED
    changed = verdict_of(TicketInRange(6, VALID, "passed", merged_as_accepted=False))
    assert (changed.blocker, changed.invalid_reason) == (Blocker.INVALID, None)
    assert verdict_of(TicketInRange(5, VALID, "pending")).blocker is None
    unverified = verdict_of(TicketInRange(7, None, roles_verified=False))
    assert unverified.blocker is Blocker.UNVERIFIED
    decision = decide_gate([TicketInRange(7, None, roles_verified=False)], [], Unticketed.ALLOW)
    assert gate_comment(decision) == (
        "railyard rejected: #7: railyard cannot verify now that its reviewer still holds the role."
    )


def test_the_comment_says_why_for_each_ticket() -> None:
    """An accepted ticket and a merged-but-unaccepted one: rejected, naming only the second."""
    decision = decide_gate(
        [
            TicketInRange(12, VALID, "passed"),
            TicketInRange(13, None),
            TicketInRange(14, Validity(False, InvalidReason.EXPIRED)),
            TicketInRange(15, VALID, "failed"),
        ],
        [],
        Unticketed.ALLOW,
    )
    assert decision.state is GateState.REJECTED
    assert gate_comment(decision) == (
        "railyard rejected: #13 is not accepted; #14: acceptance expired; "
        "#15 was accepted while its CI failed."
    )


def test_unticketed_merges_pass_by_default_and_are_refused_with_reject() -> None:
    """`deployments.unticketed: allow` approves them (and says so); `reject` rejects, naming them."""
    allowed = decide_gate([TicketInRange(12, VALID)], [40], Unticketed.ALLOW)
    assert allowed.approved
    assert "pull requests #40" in gate_comment(allowed) and "(allowed by" in gate_comment(allowed)
    refused = decide_gate([TicketInRange(12, VALID)], [40, 41], Unticketed.REJECT)
    assert not refused.approved
    assert gate_comment(refused) == (
        "railyard rejected: merged without a ticket (not allowed by deployments.unticketed): "
        "pull requests #40; #41."
    )


def test_a_deployment_that_brings_nothing_is_approved() -> None:
    """No ticket, no merge: nothing to hold it back."""
    decision = decide_gate([], [], Unticketed.REJECT)
    assert decision.approved
    assert gate_comment(decision) == "railyard approved: this deployment brings no ticket."


def test_railyard_gate_refuses_what_is_not_a_full_sha(tmp_path: Path) -> None:
    """`--sha` must be a full commit sha: exit 2 with the reason, before anything is read."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["gate", "acme/web", "--environment", "production", "--sha", "abc123"]
    settings = Settings(DATABASE_URL=f"sqlite:///{tmp_path}/railyard.db")
    assert main(argv, settings=settings, out=out, err=err) == 2
    assert "full 40-character commit sha" in err.getvalue()


def test_a_commit_github_does_not_know_is_rejected_whatever_the_tickets() -> None:
    """Nothing can be judged about a commit GitHub does not know: rejected, saying so."""
    decision = decide_gate([TicketInRange(12, VALID, "passed")], [], Unticketed.ALLOW, commit_known=False)
    assert decision.state is GateState.REJECTED
    assert gate_comment(decision) == (
        "railyard rejected: GitHub does not know the commit this deployment names."
    )
