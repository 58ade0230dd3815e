"""`railyard resync` treats an outsider's fork PR as its webhooks do: stored with no links, and
only a mention on the ticket (no rail moves, and its failing checks never block the ticket)."""

from __future__ import annotations

from handlers.resync import resync
from policies.states import IntegrationState
from tests.fakes.github import pull_answer
from tests.fakes.webhooks import INSTALLATION, REPOSITORY, check_run, pull_request
from tests.unit.handlers.steps import KEY, published, ticket, world

HEAD = "a" * 40


async def test_resync_leaves_an_outsiders_fork_pr_a_mention() -> None:
    ports = world()
    ports.github.installations[REPOSITORY] = INSTALLATION
    await published(ports)
    pull = pull_answer(REPOSITORY, 99, body="Fixes #12", head_repository="mallory/app", author="mallory")
    ports.github.add_pull(REPOSITORY, pull)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    assert ticket(ports).rails.pull_requests[99].mention
    await resync(ports.services, KEY)
    await ports.dispatch("check_run", check_run(HEAD, conclusion="failure"))
    rails = ticket(ports).rails
    assert rails.pull_requests[99].mention and not rails.pull_requests[99].linked
    assert rails.integration is IntegrationState.UNREPORTED
