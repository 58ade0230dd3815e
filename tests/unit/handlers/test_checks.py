"""`check_run` and `check_suite` events through the handlers and the in-memory fakes."""

from __future__ import annotations

import pytest

from handlers.answers import CheckRun
from handlers.errors import TransientError
from handlers.ports import Rules
from policies.model import TicketKey
from policies.rails import CheckFact, Rails
from policies.states import IntegrationState
from tests.fakes.github import REPOSITORY_ID, issue_answer, pull_answer
from tests.fakes.ports import APP_ID
from tests.fakes.webhooks import INSTALLATION, REPOSITORY, check_run, pull_request
from tests.unit.handlers.steps import RACHEL, answers_after, published, ticket, world
from tests.unit.handlers.test_repositories import of, publish

HEAD = "a" * 40
REQUIRED = Rules("blob-sha-1", required_checks=("tests",))


def named(rails: Rails, name: str) -> CheckFact:
    """The one check fact of `name` on HEAD (whichever app ran it)."""
    [found] = [check for check in rails.checks.values() if (check.head_sha, check.name) == (HEAD, name)]
    return found


async def test_a_failing_check_on_a_linked_head_blocks_the_ticket() -> None:
    """A required check failing on the head of a PR linking the ticket blocks its repository rail."""
    ports = world(REQUIRED)
    await published(ports)
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    await ports.dispatch("check_run", check_run(HEAD, conclusion="failure"))
    rails = ticket(ports).rails
    assert named(rails, "tests").conclusion == "failure"
    assert rails.integration is IntegrationState.BLOCKED


def _run_of(app_id: int, slug: str, check_id: int, conclusion: str, at: str) -> dict:
    """A `build` check run on HEAD created by the app `app_id`."""
    payload = check_run(HEAD, name="build", conclusion=conclusion, check_id=check_id, completed_at=at)
    payload["check_run"]["app"] = {"id": app_id, "slug": slug}
    return payload


async def test_another_apps_passing_check_of_the_same_name_does_not_hide_a_failure() -> None:
    """GitHub Actions' `build` failed on the head; later another app's (CircleCI's) `build` passed.
    GitHub shows the failing check on the PR: the rail stays blocked."""
    ports = world()
    await published(ports)
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    failed = _run_of(15368, "github-actions", 501, "failure", "2026-11-30T10:05:00Z")
    await ports.dispatch("check_run", failed, delivery_id="a")
    passed = _run_of(18001, "circleci-checks", 777, "success", "2026-11-30T10:06:00Z")
    await ports.dispatch("check_run", passed, delivery_id="b")
    rails = ticket(ports).rails
    assert rails.integration is IntegrationState.BLOCKED
    assert sorted((c.app_id, c.conclusion) for c in rails.checks.values()) == [
        (15368, "failure"),
        (18001, "success"),
    ]


def _actions_suite(suite_id: int, conclusion: str, runs: int, at: str) -> dict:
    """A `check_suite` `completed` of GitHub Actions on HEAD: one workflow run."""
    suite = {
        "id": suite_id, "head_sha": HEAD, "status": "completed", "conclusion": conclusion,
        "latest_check_runs_count": runs, "updated_at": at, "app": {"id": 15368, "slug": "github-actions"},
    }  # fmt: skip
    return {**check_run(HEAD), "check_suite": suite, "action": "completed"}


async def test_a_workflow_that_failed_to_start_is_not_hidden_by_another_workflows_suite() -> None:
    """Two workflows run on the head: `ci.yml` cannot start (its suite ends `startup_failure` with
    no runs), `lint.yml` passes a minute later. Both are suites of github-actions: the startup
    failure still stands on the head, so the rail stays blocked."""
    ports = world()
    await published(ports)
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    await ports.dispatch("check_suite", _actions_suite(9, "startup_failure", 0, "2026-11-30T10:05:00Z"))
    await ports.dispatch("check_suite", _actions_suite(10, "success", 1, "2026-11-30T10:06:00Z"))
    rails = ticket(ports).rails
    assert rails.integration is IntegrationState.BLOCKED
    assert sorted((c.check_id, c.conclusion) for c in rails.checks.values()) == [
        (9, "startup_failure"),
        (10, "success"),
    ]


async def test_a_check_that_completes_before_the_pull_request_is_held_for_it() -> None:
    """A check on a commit no PR shows yet is recorded on the ticket once a linked PR shows that head."""
    ports = world(REQUIRED)
    await published(ports)
    await ports.dispatch("check_run", check_run(HEAD, conclusion="failure"))
    assert ticket(ports).rails.checks == {}
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    rails = ticket(ports).rails
    assert named(rails, "tests").conclusion == "failure"
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
    assert named(ticket(ports).rails, "ci").conclusion == "success"


def rerequested(
    kind: str, *, app_id: int = APP_ID, name: str = "railyard", pulls: tuple[int, ...] = (40,)
) -> dict:
    """A `check_run` or `check_suite` `rerequested` payload (someone pressed Re-run)."""
    item = {
        "id": 77, "head_sha": HEAD, "status": "completed", "conclusion": "success",
        "app": {"id": app_id, "slug": "railyard"},
        "pull_requests": [{"number": n, "head": {"sha": HEAD}} for n in pulls],
    }  # fmt: skip
    if kind == "check_run":
        item["name"] = name
    return {**check_run(HEAD), kind: item, "action": "rerequested"}


async def test_re_run_of_the_railyard_check_writes_it_again() -> None:
    """`check_run` `rerequested` on this app's `railyard` check enqueues the check for that PR head."""
    ports = world()
    await published(ports)
    await ports.dispatch("pull_request", pull_request("opened", pull_answer(REPOSITORY, 40, head_sha=HEAD)))
    before = len(ports.store.answers)
    await ports.dispatch("check_run", rerequested("check_run"))
    assert CheckRun(INSTALLATION, REPOSITORY, 40, HEAD, rerun=True) in answers_after(ports, before)


async def test_re_run_of_the_suite_writes_the_check_for_payload_and_stored_pulls() -> None:
    """`check_suite` `rerequested`: the PRs the payload names and a stored PR with that head (a fork's)."""
    ports = world()
    await ports.dispatch("pull_request", pull_request("opened", pull_answer(REPOSITORY, 41, head_sha=HEAD)))
    before = len(ports.store.answers)
    await ports.dispatch("check_suite", rerequested("check_suite", pulls=(40,)))
    checks = [a for a in answers_after(ports, before) if isinstance(a, CheckRun)]
    assert checks == [
        CheckRun(INSTALLATION, REPOSITORY, 40, HEAD, rerun=True),
        CheckRun(INSTALLATION, REPOSITORY, 41, HEAD, rerun=True),
    ]


async def test_re_run_of_another_app_or_another_check_does_nothing() -> None:
    """Another app's check (its id compared), or another check of ours, is not this app's to re-render."""
    ports = world()
    for kind, payload in [
        ("check_run", rerequested("check_run", app_id=APP_ID + 1)),
        ("check_run", rerequested("check_run", name="tests")),
        ("check_suite", rerequested("check_suite", app_id=APP_ID + 1)),
    ]:
        before = len(ports.store.answers)
        await ports.dispatch(kind, payload)
        assert not [a for a in answers_after(ports, before) if isinstance(a, CheckRun)]


async def test_an_action_required_check_run_is_a_failing_check_whichever_app_wrote_it() -> None:
    """A check run that ends `action_required` asks for something else than approval to run (a
    held workflow has no runs): GitHub Actions' (a step wrote it) and another app's alike are
    failing checks, never "awaiting approval"."""
    ports = world()
    await published(ports)
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    written = check_run(HEAD, name="build", conclusion="action_required", check_id=601)
    written["check_run"]["app"] = {"slug": "github-actions"}
    other = check_run(HEAD, name="license", conclusion="action_required", check_id=602)
    other["check_run"]["app"] = {"slug": "license-bot"}
    await ports.dispatch("check_run", written, delivery_id="held")
    await ports.dispatch("check_run", other, delivery_id="other")
    rails = ticket(ports).rails
    assert not named(rails, "build").awaiting_approval
    assert not named(rails, "license").awaiting_approval
    assert rails.integration is IntegrationState.BLOCKED


async def test_a_check_suite_held_without_runs_awaits_approval() -> None:
    """A suite that ended `action_required` before any run started waits for approval to run."""
    ports = world()
    await published(ports)
    await ports.dispatch(
        "pull_request", pull_request("opened", pull_answer(REPOSITORY, 40, body="Fixes #12"))
    )
    suite = {
        "id": 9, "head_sha": HEAD, "status": "completed", "conclusion": "action_required",
        "latest_check_runs_count": 0, "updated_at": "2026-11-30T10:05:00Z", "app": {"slug": "ci"},
    }  # fmt: skip
    await ports.dispatch("check_suite", {**check_run(HEAD), "check_suite": suite, "action": "completed"})
    assert named(ticket(ports).rails, "ci").awaiting_approval
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED


async def test_a_fork_workflow_held_for_approval_blocks_a_required_check_until_it_runs() -> None:
    """`checks.required: [tests]`: the PR's workflow is held for approval (its suite completes
    `action_required` with no runs), so `tests` cannot run: blocked, CI awaiting approval to run.
    Once approved, the same suite runs and `tests` passes: the PR is open again."""
    from policies.blocking import BlockReason, blocks

    ports = world(REQUIRED)
    await published(ports)
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    await ports.dispatch("check_suite", _actions_suite(9, "action_required", 0, "2026-11-30T10:05:00Z"))
    rails = ticket(ports).rails
    assert rails.integration is IntegrationState.BLOCKED
    assert [b.reason for b in blocks(rails, REQUIRED.rail_policy)] == [BlockReason.CI_AWAITING_APPROVAL]
    await ports.dispatch("check_run", check_run(HEAD, check_id=601, completed_at="2026-11-30T10:09:00Z"))
    await ports.dispatch("check_suite", _actions_suite(9, "success", 1, "2026-11-30T10:10:00Z"))
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN


async def test_a_check_of_a_repository_renamed_unseen_is_recorded_under_its_name_now() -> None:
    """acme/app was renamed acme/tools and no webhook said so when a failing check of its linked
    PR's head arrives: the check is judged by the rules of the repository that holds the name
    now only after asking GitHub. The records follow the id, the delivery is tried again under
    the new name, and the moved ticket is blocked (never judged under another repository's file)."""
    ports = world(REQUIRED)
    await publish(ports, REPOSITORY_ID, 12)
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD)
    await ports.dispatch("pull_request", of(REPOSITORY_ID, pull_request("opened", pull)))
    ports.github.names[REPOSITORY_ID] = "acme/tools"
    ports.github.add_issue("acme/tools", issue_answer(12, assignees=(RACHEL,)))
    with pytest.raises(TransientError):
        await ports.dispatch("check_run", of(REPOSITORY_ID, check_run(HEAD, conclusion="failure")))
    moved = ports.store.ticket(TicketKey("acme/tools", 12))
    assert moved is not None and moved.rails.integration is IntegrationState.PULL_REQUEST_OPEN
    await ports.dispatch(
        "check_run", of(REPOSITORY_ID, check_run(HEAD, conclusion="failure")), delivery_id="again"
    )
    moved = ports.store.ticket(TicketKey("acme/tools", 12))
    assert moved is not None and moved.rails.integration is IntegrationState.BLOCKED


async def test_a_check_a_workflow_wrote_action_required_is_a_failing_check_not_a_held_run() -> None:
    """A workflow ran (its suite has runs) and one of its steps wrote a `lint` check with the
    workflow's GITHUB_TOKEN, concluding `action_required` ("fix these findings"): GitHub gives such
    a run the GitHub Actions app. Nothing waits for approval to run, yet it reads "CI awaiting
    approval to run" (SPEC: only a run GitHub holds for someone's approval reads so)."""
    from policies.blocking import BlockReason, blocks

    ports = world()
    await published(ports)
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    written = check_run(HEAD, name="lint", conclusion="action_required", check_id=611)
    written["check_run"]["app"] = {"id": 15368, "slug": "github-actions"}
    await ports.dispatch("check_run", written, delivery_id="lint")
    await ports.dispatch("check_suite", _actions_suite(9, "action_required", 2, "2026-11-30T10:10:00Z"))
    rails = ticket(ports).rails
    assert rails.integration is IntegrationState.BLOCKED
    assert [b.reason for b in blocks(rails, Rules("blob-sha-1").rail_policy)] == [BlockReason.CHECK_FAILED]
