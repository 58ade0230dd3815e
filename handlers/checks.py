"""`check_run` and `check_suite` events: a check on a commit can block (or unblock) the PRs whose
head that commit is."""

from __future__ import annotations

from handlers.answers import CheckRun
from handlers.observe import record
from handlers.payloads import dig, dig_int, dig_str, time_or
from handlers.ports import Services
from handlers.pull_requests import source_of
from handlers.repositories import still_named
from handlers.routing import Router, WebhookEvent
from policies.checks import CHECK_NAME, check_name
from policies.ci import awaits_approval
from policies.rails import CheckObserved

router = Router()


def check_from(event: WebhookEvent, fallback: float, app_id: int | None = None) -> CheckObserved | None:
    """The check a `check_run` or `check_suite` payload reports (None without its head, id or name).

    A suite is named by its app's slug; this app's own suite (`app_id`, whatever slug the app
    was registered under: `railyard-acme`) is named as its check is, `railyard`, so it never
    counts as another app's check (it completes `action_required` until acceptance). Another
    app's check or suite named `railyard` is named with its app's id, so it is never taken for
    railyard's own (a failing Actions job named `railyard` blocks like any other).

    The app's id goes with it, and a suite is marked as one: a ticket keeps a run per name and
    app, and a suite by its id (`policies.check_facts`), since another app's `build`, or another
    workflow's suite (every Actions suite is `github-actions`), hides nothing of this one."""
    kind = event.event
    item = dig(event.payload, kind)
    head_sha, check_id = dig_str(item, "head_sha"), dig_int(item, "id")
    if kind == "check_run":
        name = dig_str(item, "name")
    else:
        name = dig_str(item, "app", "slug") or dig_str(item, "app", "name")
    app = dig_int(item, "app", "id")
    name = check_name(name, app, app_id)
    if head_sha is None or check_id is None or name is None:
        return None
    completed = dig_str(item, "status") == "completed"
    at = dig_str(item, "completed_at") or dig_str(item, "updated_at") or dig_str(item, "started_at")
    conclusion = dig_str(item, "conclusion") if completed else None
    held = awaits_approval(
        conclusion, suite_without_runs=kind == "check_suite" and dig(item, "latest_check_runs_count") == 0
    )
    at_time = time_or(at, fallback)
    return CheckObserved(head_sha, name, conclusion, check_id, at_time, held, app, kind == "check_suite")


@router.register("check_run")
@router.register("check_suite")
async def on_check(event: WebhookEvent, services: Services) -> None:
    """Hold the check for PRs that show its head later, then record it on the tickets of the PRs
    whose head it is now.

    The PRs are read after the hold committed, so a PR event at the same time either finds the
    hold or is found here; whatever it links by then is recorded in a unit of its own.
    """
    repository = dig_str(event.payload, "repository", "full_name")
    if repository is None or event.installation_id is None:
        return
    rules = await services.configs.load(event.installation_id, repository)
    observation = check_from(event, services.clock(), services.app_id)
    if observation is None:
        return
    async with services.store.unit() as uow:
        # Held first, and committed: a PR event at the same time either finds it or is found here.
        await uow.hold(repository, f"check:{observation.head_sha}", observation, services.clock())
        await uow.commit()
    async with services.store.read() as reads:
        tickets: set[int] = set()
        for _, linked in await reads.pulls_where(repository, head_sha=observation.head_sha):
            tickets |= linked
    if not tickets:
        return  # most checks are of commits no linked PR shows: nothing more to write
    if not await still_named(event, services):  # `rules` judge it: the name must still be its repository's
        return
    async with services.store.unit() as uow:
        await record(
            uow, services, repository, rules, [(n, observation) for n in sorted(tickets)], source_of(event)
        )
        await uow.commit()


def _own(event: WebhookEvent, app_id: int) -> bool:
    """Whether a rerequested check run or suite is this app's `railyard` check (its app's id compared)."""
    item = dig(event.payload, event.event)
    owner = dig_int(item, "app", "id")
    if event.event == "check_run" and dig_str(item, "name") != CHECK_NAME:
        return False
    # GitHub sends `rerequested` only to the app that owns the check; the id, when given, must be ours.
    return owner is None or owner == app_id


def _rerequested_pulls(event: WebhookEvent) -> set[int]:
    """The PR numbers a rerequested check run or suite names (empty for PRs from forks)."""
    pulls = dig(event.payload, event.event, "pull_requests")
    found = {dig_int(pull, "number") for pull in pulls} if isinstance(pulls, list) else set()
    return {number for number in found if number is not None}


@router.register("check_run", "rerequested")
@router.register("check_suite", "rerequested")
async def on_rerequested(event: WebhookEvent, services: Services) -> None:
    """Re-run: write the `railyard` check again on that commit for each open PR whose head it is."""
    repository = dig_str(event.payload, "repository", "full_name")
    head_sha = dig_str(event.payload, event.event, "head_sha")
    if repository is None or head_sha is None or event.installation_id is None:
        return
    if not _own(event, services.app_id):
        return
    async with services.store.unit() as uow:
        # The payload lists PRs of this repository only; the stored PRs with that head add forks'.
        stored = await uow.pulls_where(repository, head_sha=head_sha)
        pulls = _rerequested_pulls(event) | {pull.number for pull, _ in stored if pull.open}
        for number in sorted(pulls):
            await uow.send(CheckRun(event.installation_id, repository, number, head_sha, rerun=True))
        await uow.commit()
