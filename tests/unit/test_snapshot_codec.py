"""The ticket snapshot stored beside the log reads back as the ticket it was written from."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from app.store.codec import ticket_from_data, ticket_to_data
from policies.commands import Reopen, SendBack
from policies.model import Ticket, TicketKey
from policies.rails import CheckObserved
from policies.states import IntegrationState, WorkState
from tests.fakes import START
from tests.unit.rail_builders import MERGED, deployment, fold
from tests.unit.test_acceptance import accepted
from tests.unit.test_render import HEAD, delivered_with_pr
from tests.unit.work_walk import RITA, context, run, ticket_in


def test_a_ticket_with_feedback_and_an_acceptance_reads_back_equal() -> None:
    """Feedback (whose `kind` is not a review kind), a bound acceptance and its CI round-trip."""
    sent_back = run(ticket_in(WorkState.DELIVERED), SendBack("Tests fail."), context(RITA, 10))
    reopened = run(sent_back, Reopen("Needs a rethink."), context(RITA, 11))
    for ticket in (sent_back, reopened, accepted()):
        data = ticket_to_data(ticket)
        assert ticket_from_data(ticket.key, ticket.revision, data) == ticket


def test_a_snapshot_written_before_check_apps_were_kept_reads_back() -> None:
    """A stored snapshot's check facts without `app_id` read as checks of no known app."""
    story = delivered_with_pr().observe(
        CheckObserved(HEAD, "ci", "failure", 99, START + timedelta(minutes=50))
    )
    data = ticket_to_data(story.ticket)
    for fact in data["rails"]["checks"]:
        del fact["app_id"]
    restored = ticket_from_data(story.ticket.key, story.ticket.revision, data)
    assert restored == story.ticket
    assert restored.rails.integration is IntegrationState.BLOCKED


def test_a_snapshot_written_before_deployments_named_their_merges_reads() -> None:
    """A stored snapshot whose deployment facts lack `merges` (written before answers named the
    merge they were asked for) reads back as the same rails, with no merge named."""
    rails = fold([MERGED, deployment(1, "success")]).rails
    ticket = replace(Ticket(TicketKey("acme/app", 12)), rails=rails)
    data = ticket_to_data(ticket)
    for fact in data["rails"]["deployment_facts"]:
        del fact["merges"]
    assert ticket_from_data(ticket.key, ticket.revision, data) == ticket
