"""Resync keeps a linked fork PR linked when its author's roles were never stored (a row from
before they were): the links it was stored with counted, and still do."""

from __future__ import annotations

from dataclasses import replace

from handlers.resync import resync
from policies.states import IntegrationState
from tests.fakes.github import pull_answer
from tests.fakes.webhooks import INSTALLATION, REPOSITORY, pull_request
from tests.unit.handlers.steps import KEY, published, ticket, world


async def test_resync_keeps_a_role_holders_fork_pr_linked_when_its_roles_were_never_stored() -> None:
    ports = world()
    ports.github.installations[REPOSITORY] = INSTALLATION
    await published(ports)
    pull = pull_answer(REPOSITORY, 99, body="Fixes #12", head_repository="rita/app", author="rita")
    ports.github.add_pull(REPOSITORY, pull)
    await ports.dispatch("pull_request", pull_request("opened", pull))
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
