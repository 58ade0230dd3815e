"""Another app's check named `railyard` (a CI job, or an app whose slug is `railyard`) is not
railyard's own: failing, it blocks the PR like any other failing check."""

from __future__ import annotations

import pytest

from policies.states import IntegrationState
from tests.fakes.github import pull_answer
from tests.fakes.ports import APP_ID
from tests.fakes.webhooks import REPOSITORY, check_run, pull_request
from tests.unit.handlers.steps import claimed, ticket, world

CI_APP = 15368  # GitHub Actions
HEAD = "a" * 40


async def _linked_pr():
    ports = world()
    await claimed(ports)
    pull = ports.github.add_pull(REPOSITORY, pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD))
    await ports.dispatch("pull_request", pull_request("opened", pull))
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN
    return ports


@pytest.mark.parametrize("name", ["railyard", "tests"])
async def test_a_failing_ci_job_blocks_the_pr_whatever_its_name(name: str) -> None:
    """A failing GitHub Actions job named `railyard` blocks like one named `tests`."""
    ports = await _linked_pr()
    payload = check_run(HEAD, name=name, conclusion="failure")
    payload["check_run"]["app"] = {"id": CI_APP, "slug": "github-actions", "name": "GitHub Actions"}
    await ports.dispatch("check_run", payload)
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED


async def test_another_apps_suite_with_the_slug_railyard_that_fails_blocks_the_pr() -> None:
    ports = await _linked_pr()
    assert APP_ID != 777
    suite = {
        "id": 9, "head_sha": HEAD, "status": "completed", "conclusion": "failure",
        "updated_at": "2026-11-30T10:05:00Z", "latest_check_runs_count": 0,
        "app": {"id": 777, "slug": "railyard", "name": "railyard"},
    }  # fmt: skip
    await ports.dispatch("check_suite", {**check_run(HEAD), "check_suite": suite, "action": "completed"})
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED
