"""An `/accept` binds the description its reviewer saw (SPEC *Acceptance that stays true*): an
edit made after the accepting comment was written is a change after acceptance, whether its
`issues.edited` is processed before the accept runs (which then reads the edited text) or after
it. The pure core only."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from policies.acceptance import description_digest, recorded_validity
from policies.commands import Accept, Context
from policies.engine import apply_all
from policies.events import Event, EventType
from policies.model import Actor, Ticket
from policies.notices import DescriptionEdited, NoticeContext, decide_notice
from policies.refusals import Refusal
from policies.states import WorkState
from tests.unit.work_walk import RITA, at, context, events_of, ticket_in

OLD = description_digest("Uploader", "Stop the retries.")
NEW = description_digest("Uploader", "Stop the retries, and log them.")
COMMENT = 10  # the minute the `/accept` comment was written


def accepting(run_at: int, read: str, actor: Actor = RITA) -> Context:
    """The `/accept` written at minute 10, run at `run_at`, reading the description `read`."""
    written = context(actor, COMMENT)
    return replace(written, at=at(run_at), tree="7" * 40, ci_state="passed", description_digest=read)


def edited(minute: int | None) -> DescriptionEdited:
    """The body edited on GitHub at `minute` (its `issue.updated_at`; None: not said)."""
    return DescriptionEdited(OLD, NEW, body_changed=True, edited_at=None if minute is None else at(minute))


def record_edit(ticket: Ticket, edit: DescriptionEdited, minute: int = 45) -> Ticket:
    """The ticket after the edit's `issues.edited` is processed at `minute`."""
    decided = decide_notice(ticket, edit, NoticeContext("mona", f"issue-edited:{minute}", at(minute)))
    assert not isinstance(decided, Refusal)
    return apply_all(ticket, decided)


def delivered() -> Ticket:
    """A delivered ticket whose description railyard last recorded as OLD."""
    return replace(ticket_in(WorkState.DELIVERED), description_digest=OLD)


def test_an_accept_run_after_an_edit_made_since_its_comment_is_recorded_and_flagged() -> None:
    """Edited at minute 12, after the `/accept` written at 10 and before it runs at 15: the
    acceptance is recorded, binding the text it read, and flagged at once "the description
    changed after acceptance", as an edit arriving after it would be."""
    ticket = record_edit(delivered(), edited(12), minute=13)
    assert ticket.description_changed == "claim"
    events = events_of(ticket, Accept(), accepting(15, NEW))
    (event,) = events
    assert event.type is EventType.ACCEPTED
    assert event.data["description_digest"] == NEW
    assert event.data["description_edited_at"] == at(12).isoformat()
    after = apply_all(ticket, events)
    assert after.work is WorkState.ACCEPTED and after.description_changed == "acceptance"


def test_an_edit_made_before_the_comment_leaves_the_accept_unflagged() -> None:
    """Edited at minute 8, before the `/accept` written at 10: the reviewer could read it."""
    ticket = record_edit(delivered(), edited(8), minute=9)
    events = events_of(ticket, Accept(), accepting(15, NEW))
    assert "description_edited_at" not in events[0].data
    assert apply_all(ticket, events).description_changed is None


def test_an_edit_made_after_the_comment_and_read_by_the_accept_is_flagged_when_it_arrives_later() -> None:
    """The accept ran after the edit on GitHub (it read the edited text) but before the edit's
    webhook was processed: the edit is not one the acceptance read, since it came after the
    comment, so it is recorded as a change after acceptance."""
    ticket = apply_all(delivered(), events_of(delivered(), Accept(), accepting(15, NEW)))
    assert ticket.description_changed is None
    after = record_edit(ticket, edited(12))
    [changed] = [e for e in after_events(ticket, edited(12)) if e.type is EventType.DESCRIPTION_CHANGED]
    assert "read_by_acceptance" not in changed.data and changed.data["edited_at"] == at(12).isoformat()
    assert after.description_changed == "acceptance"


def test_an_edit_without_a_time_read_by_the_accept_still_flags_nothing() -> None:
    """A payload that does not say when it was edited: as before, an edit whose text the
    acceptance bound is taken as read by it."""
    ticket = apply_all(delivered(), events_of(delivered(), Accept(), accepting(15, NEW)))
    assert record_edit(ticket, edited(None)).description_changed is None


def after_events(ticket: Ticket, edit: DescriptionEdited) -> tuple[Event, ...]:
    """The events the edit records on `ticket`."""
    decided = decide_notice(ticket, edit, NoticeContext("mona", "issue-edited", at(45)))
    assert not isinstance(decided, Refusal)
    return decided


def _end(ticket: Ticket) -> tuple[object, ...]:
    """What the ticket says of its acceptance and description."""
    assert ticket.review is not None
    validity = recorded_validity(ticket, at(50))
    assert validity is not None
    return (
        ticket.work,
        ticket.description_changed,
        ticket.description_digest,
        ticket.description_edited_at,
        ticket.review.description_digest,
        validity.valid,
        validity.reason,
    )


@given(edit=st.integers(0, 40), ran=st.integers(COMMENT, 40))
def test_an_acceptance_ends_the_same_whichever_of_its_edit_and_accept_is_processed_first(
    edit: int, ran: int
) -> None:
    """GitHub's story: the body edited at minute `edit`; `/accept` written at minute 10 and run
    at `ran`, reading the text as it is then. Whatever order railyard processes the edit and the
    accept in (the edit first only if it was made before the run), the ticket ends the same, and
    flags "the description changed after acceptance" exactly when the edit came after the comment."""
    read = NEW if edit <= ran else OLD
    ends = set()
    for edit_first in (True, False):
        if edit_first and edit > ran:
            continue  # the edit's webhook cannot be processed before the edit was made
        ticket = delivered()
        if edit_first:
            ticket = record_edit(ticket, edited(edit), minute=ran)
        ticket = apply_all(ticket, events_of(ticket, Accept(), accepting(ran, read)))
        if not edit_first:
            ticket = record_edit(ticket, edited(edit))
        ends.add(_end(ticket))
    assert len(ends) == 1
    [(work, changed, digest, edited_at, *_)] = ends
    assert work is WorkState.ACCEPTED and (digest, edited_at) == (NEW, at(edit))
    assert changed == ("acceptance" if edit > COMMENT else None)
