"""`check_run` and `check_suite` events through the handlers and the in-memory fakes."""

from __future__ import annotations

from handlers.ports import Rules
from policies.states import IntegrationState
from tests.fakes.github import pull_answer
from tests.fakes.webhooks import REPOSITORY, check_run, pull_request
from tests.unit.handlers.steps import published, ticket, world

HEAD = "a" * 40
REQUIRED = Rules("blob-sha-1", required_checks=("tests",))


async def test_a_failing_check_on_a_linked_head_blocks_the_ticket() -> None:
    """A required check failing on the head of a PR linking the ticket blocks its repository rail."""
    ports = world(REQUIRED)
    await published(ports)
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    await ports.dispatch("check_run", check_run(HEAD, conclusion="failure"))
    rails = ticket(ports).rails
    assert rails.checks[(HEAD, "tests")].conclusion == "failure"
    assert rails.integration is IntegrationState.BLOCKED


async def test_a_check_that_completes_before_the_pull_request_is_held_for_it() -> None:
    """A check on a commit no PR shows yet is recorded on the ticket once a linked PR shows that head."""
    ports = world(REQUIRED)
    await published(ports)
    await ports.dispatch("check_run", check_run(HEAD, conclusion="failure"))
    assert ticket(ports).rails.checks == {}
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    rails = ticket(ports).rails
    assert rails.checks[(HEAD, "tests")].conclusion == "failure"
    assert rails.integration is IntegrationState.BLOCKED


async def test_a_check_suite_is_named_by_its_app() -> None:
    """A check suite is recorded under its app's slug on the tickets of the PRs whose head it checked."""
    ports = world()
    await published(ports)
    await ports.dispatch(
        "pull_request", pull_request("opened", pull_answer(REPOSITORY, 40, body="Fixes #12"))
    )
    suite = {
        "id": 9, "head_sha": HEAD, "status": "completed", "conclusion": "success",
        "updated_at": "2026-11-30T10:05:00Z", "app": {"slug": "ci", "name": "CI"},
    }  # fmt: skip
    payload = {**check_run(HEAD), "check_suite": suite, "action": "completed"}
    await ports.dispatch("check_suite", payload)
    assert ticket(ports).rails.checks[(HEAD, "ci")].conclusion == "success"
