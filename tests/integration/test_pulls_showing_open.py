"""The tickets a pull request's close must tell beyond its stored links, read from the snapshots."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.store import pulls
from app.store.database import Database
from app.store.tickets import TicketService
from policies.commands import Publish
from policies.model import TicketKey
from policies.rails import ObservationContext, PullRequestObserved, RailPolicy
from tests.fakes import REQUESTER, Comments

REPO = "acme/web"
OPENED = datetime(2026, 11, 30, 10, tzinfo=UTC)


def test_tickets_still_showing_a_pull_request_open_are_found_by_their_snapshots(database: Database) -> None:
    """#12 holds PR #40 linked and open since 10:00; #13 holds it unlinked. Asked as of a later
    time, only #12 shows it open; as of 10:00 itself, or for another PR, none does."""
    service, comments = TicketService(database), Comments()
    for number, linked in ((12, True), (13, False)):
        key = TicketKey(REPO, number)
        service.execute(key, Publish("Resumable uploads"), comments.context(REQUESTER))
        pull = PullRequestObserved(
            40, f"https://github.com/{REPO}/pull/40", linked, True, False, "a" * 40, "feature/x", None, OPENED
        )
        service.execute(key, pull, ObservationContext("github", f"obs-{number}", OPENED, "v1", RailPolicy()))
    with database.read() as connection:
        later = pulls.tickets_showing_pull(connection, REPO, 40, OPENED + timedelta(minutes=30))
        same_second = pulls.tickets_showing_pull(connection, REPO, 40, OPENED)
        other = pulls.tickets_showing_pull(connection, REPO, 41, OPENED + timedelta(minutes=30))
    assert (later, same_second, other) == ({12}, set(), set())
