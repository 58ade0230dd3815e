"""The `railyard` check-run's conclusion for every WorkState and linked-PR situation in SPEC.

The table below is the specification: one row per situation, the conclusion and title
GitHub must show. `neutral` and `skipped` never appear: GitHub counts them as passing.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.acceptance import InvalidReason, Validity
from policies.checks import UNVERIFIED_WORDS, Conclusion, Linked, blocking_reason, verdict
from policies.commands import SendBack
from policies.model import Ticket
from policies.states import WorkState
from tests.fakes import REVIEWER, Story

HEAD = "a1b2c3d4e5f6"
OTHER = "0badc0ffee11"
OK, ACT = Conclusion.SUCCESS, Conclusion.ACTION_REQUIRED
ALL_TWO = "all 2 linked tickets are accepted at this commit"
DIFFERS = "accepted commit differs from head"


def ticket(state: str, accepted_at: str = HEAD) -> Ticket | None:
    """A ticket in `state` ("none": the issue is not a ticket; "sent_back": claimed again)."""
    if state == "none":
        return None
    if state == "sent_back":
        story = Story().walk_to(WorkState.DELIVERED, commit=accepted_at)
        return story.command(SendBack(feedback="Not yet."), REVIEWER).ticket
    return Story().walk_to(WorkState(state), commit=accepted_at).ticket


# (tickets the PR links as (state, accepted commit), PR author only a runner, unlinked setting)
#   -> conclusion, title
TABLE = [
    # one linked ticket, each WorkState
    ([("draft", HEAD)], False, "success", ACT, "#12: awaiting publication"),
    ([("open", HEAD)], False, "success", ACT, "#12: awaiting claim"),
    ([("claimed", HEAD)], False, "success", ACT, "#12: awaiting delivery"),
    ([("sent_back", HEAD)], False, "success", ACT, "#12: sent back"),
    ([("delivered", HEAD)], False, "success", ACT, "#12: awaiting review"),
    ([("accepted", HEAD)], False, "success", OK, "the linked ticket is accepted at this commit"),
    ([("accepted", OTHER)], False, "success", ACT, "#12: accepted commit differs from head"),
    ([("none", HEAD)], False, "success", ACT, "#12: not a ticket"),
    # several linked tickets: success only when every one is accepted at the head
    ([("accepted", HEAD), ("accepted", HEAD)], False, "success", OK, ALL_TWO),
    ([("accepted", HEAD), ("delivered", HEAD)], False, "success", ACT, "#13: awaiting review"),
    ([("open", HEAD), ("delivered", HEAD)], False, "success", ACT, "#12: awaiting claim (and 1 more)"),
    ([("accepted", OTHER), ("accepted", HEAD)], False, "success", ACT, "#12: " + DIFFERS),
    # no linked ticket: checks.unlinked, except a PR opened by a runner-only account
    ([], False, "success", OK, "no linked ticket"),
    ([], False, "action_required", ACT, "link the ticket"),
    ([], True, "success", ACT, "link the ticket"),
    ([], True, "action_required", ACT, "link the ticket"),
    # a runner-only author who links the ticket is judged by the ticket
    ([("accepted", HEAD)], True, "success", OK, "the linked ticket is accepted at this commit"),
]  # fmt: skip


@pytest.mark.parametrize(("linked", "runner_only", "unlinked", "conclusion", "title"), TABLE)
def test_check_conclusion_follows_the_table(
    linked: list[tuple[str, str]], runner_only: bool, unlinked: str, conclusion: Conclusion, title: str
) -> None:
    """Each situation gets SPEC's conclusion, with the reason as the title."""
    tickets = [Linked(12 + index, ticket(state, at)) for index, (state, at) in enumerate(linked)]
    result = verdict(HEAD, tickets, unlinked_passes=unlinked == "success", author_only_runner=runner_only)
    assert (result.conclusion, result.title) == (conclusion, title)


STATES = st.sampled_from(["none", "draft", "open", "claimed", "sent_back", "delivered", "accepted"])


@given(
    linked=st.lists(st.tuples(STATES, st.sampled_from([HEAD, OTHER])), max_size=4),
    runner_only=st.booleans(),
    unlinked=st.booleans(),
)
def test_success_only_when_every_linked_ticket_is_accepted_at_the_head(
    linked: list[tuple[str, str]], runner_only: bool, unlinked: bool
) -> None:
    """Whatever the mix, the check passes exactly in SPEC's allowed case, and says why not otherwise."""
    tickets = [Linked(12 + index, ticket(state, at)) for index, (state, at) in enumerate(linked)]
    result = verdict(HEAD, tickets, unlinked_passes=unlinked, author_only_runner=runner_only)
    allowed = (
        all(state == "accepted" and at == HEAD for state, at in linked)
        if linked
        else unlinked and not runner_only
    )
    assert (result.conclusion is Conclusion.SUCCESS) == allowed
    assert result.title


def test_an_accepted_ticket_does_not_pass_a_head_it_was_not_accepted_at() -> None:
    """A push after acceptance needs a new delivery and acceptance before the check passes again."""
    accepted = ticket("accepted", HEAD)
    assert blocking_reason(accepted, HEAD) is None
    assert blocking_reason(accepted, OTHER) == "accepted commit differs from head"
    assert blocking_reason(accepted, None) == "accepted commit differs from head"


def test_an_acceptance_whose_reviewer_github_will_not_confirm_does_not_pass() -> None:
    """Valid by all that could be judged, but the reviewer's role unconfirmed (a 403, an outage):
    the check waits, as the deployment gate does, and passes once the role is confirmed."""
    accepted = ticket("accepted", HEAD)
    unverified = Validity(True, unverified=True)
    assert blocking_reason(accepted, HEAD, unverified) == UNVERIFIED_WORDS
    result = verdict(HEAD, [Linked(12, accepted, unverified)])
    assert (result.conclusion, result.title) == (ACT, f"#12: {UNVERIFIED_WORDS}")
    assert blocking_reason(accepted, HEAD, Validity(True)) is None
    expired = Validity(False, InvalidReason.EXPIRED, unverified=False)
    assert blocking_reason(accepted, HEAD, expired) == "acceptance expired"  # a lapse says why
