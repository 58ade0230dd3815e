"""The ticket snapshot stored beside the log reads back as the ticket it was written from."""

from __future__ import annotations

from app.store.codec import ticket_from_data, ticket_to_data
from policies.commands import Reopen, SendBack
from policies.states import WorkState
from tests.unit.test_acceptance import accepted
from tests.unit.work_walk import RITA, context, run, ticket_in


def test_a_ticket_with_feedback_and_an_acceptance_reads_back_equal() -> None:
    """Feedback (whose `kind` is not a review kind), a bound acceptance and its CI round-trip."""
    sent_back = run(ticket_in(WorkState.DELIVERED), SendBack("Tests fail."), context(RITA, 10))
    reopened = run(sent_back, Reopen("Needs a rethink."), context(RITA, 11))
    for ticket in (sent_back, reopened, accepted()):
        data = ticket_to_data(ticket)
        assert ticket_from_data(ticket.key, ticket.revision, data) == ticket
