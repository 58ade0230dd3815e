"""`railyard resync` treats a fork PR as its webhooks do: an outsider's stays a mention (no links
stored, no rail moved, its failing checks never block the ticket); one whose author's roles were
never stored (a row from before they were) keeps the links it was stored with."""

from __future__ import annotations

from dataclasses import replace

from handlers.resync import resync
from policies.states import IntegrationState
from tests.fakes.github import pull_answer
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import INSTALLATION, REPOSITORY, check_run, pull_request
from tests.unit.handlers.steps import KEY, published, ticket, world

HEAD = "a" * 40


async def fork_pr_opened(author: str) -> FakePorts:
    """#12 published; `author` opens PR #99 from their fork saying `Fixes #12`."""
    ports = world()
    ports.github.installations[REPOSITORY] = INSTALLATION
    await published(ports)
    pull = pull_answer(REPOSITORY, 99, body="Fixes #12", head_repository=f"{author}/app", author=author)
    ports.github.add_pull(REPOSITORY, pull)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    return ports


async def test_resync_leaves_an_outsiders_fork_pr_a_mention() -> None:
    ports = await fork_pr_opened("mallory")
    assert ticket(ports).rails.pull_requests[99].mention
    await resync(ports.services, KEY)
    await ports.dispatch("check_run", check_run(HEAD, conclusion="failure"))
    rails = ticket(ports).rails
    assert rails.pull_requests[99].mention and not rails.pull_requests[99].linked
    assert rails.integration is IntegrationState.UNREPORTED


async def test_resync_keeps_a_role_holders_fork_pr_linked_when_its_roles_were_never_stored() -> None:
    ports = await fork_pr_opened("rita")
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN
    pulls = ports.store.records.pulls
    for row_key, (stored, linked) in list(pulls.items()):  # a row stored before migration 0015
        pulls[row_key] = (replace(stored, author_has_role=None), linked)
    later = pull_answer(
        REPOSITORY, 99, body="Fixes #12", head_repository="rita/app", author="rita",
        updated_at="2026-11-30T12:00:00Z", head_sha="b" * 40,
    )  # fmt: skip
    ports.github.add_pull(REPOSITORY, later)  # pushed during the outage resync is for
    await resync(ports.services, KEY)
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN
