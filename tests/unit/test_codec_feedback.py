"""A ticket's snapshot, with the context for the next attempt, read back as it was stored."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.store.codec import ticket_from_data, ticket_to_data
from policies.model import Feedback, Review, Ticket, TicketKey
from policies.states import ReviewKind, WorkState

KEY = TicketKey("acme/app", 12)
AT = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize("kind", ["sent_back", "reopened"])
def test_a_ticket_with_feedback_reads_back_as_it_was_stored(kind: str) -> None:
    """A sent-back or reopened ticket's feedback survives the database (its kind is no review kind)."""
    feedback = Feedback(kind, "The tests still fail on Windows.", "rita", 7, AT, 1)
    review = Review("rita", ReviewKind.OVERRIDE, 1, "a" * 40, "urgent", AT, 7)
    ticket = Ticket(KEY, 5, WorkState.CLAIMED, feedback=feedback, review=review)

    back = ticket_from_data(KEY, 5, ticket_to_data(ticket))

    assert back.feedback == feedback
    assert back.review is not None and back.review.kind is ReviewKind.OVERRIDE
