"""The GitHub stand-in's check-run endpoints: create, update and list, with GitHub's rules."""

from __future__ import annotations

from datetime import datetime

from aiohttp import web

from github_standin.common import CHECK_CONCLUSIONS, CHECK_STATUSES, Json, parse_time
from github_standin.lookups import (
    BODY,
    STATE,
    GitHubError,
    invalid,
    not_found,
    paginate,
    renderer,
    repository_of,
    respond,
)
from github_standin.state import CheckRun, Repository, StandinState


def _update_check_run(run: CheckRun, body: Json, now: datetime) -> None:
    """Apply a create or update body with GitHub's rules: a conclusion completes the run."""
    run.name, run.details_url = body.get("name", run.name), body.get("details_url", run.details_url)
    run.external_id = body.get("external_id", run.external_id)
    if "output" in body:
        if not {"title", "summary"} <= body["output"].keys():
            raise invalid("CheckRun", "output")
        run.output = {key: body["output"].get(key) for key in ("title", "summary", "text")}
    if body.get("status", run.status) not in CHECK_STATUSES:
        raise invalid("CheckRun", "status", "invalid")
    run.status = body.get("status", run.status)
    if "conclusion" in body:
        if body["conclusion"] not in CHECK_CONCLUSIONS:
            raise invalid("CheckRun", "conclusion", "invalid")
        run.conclusion, run.status = body["conclusion"], "completed"
    if run.status == "completed" and run.conclusion is None:
        raise invalid("CheckRun", "conclusion")
    run.started_at = parse_time(body["started_at"]) if "started_at" in body else run.started_at
    if run.status == "completed":
        run.completed_at = parse_time(body.get("completed_at") or run.completed_at or now)


async def create_check_run(request: web.Request) -> web.Response:
    state, repository, body = request.app[STATE], repository_of(request), request[BODY] or {}
    for required in ("name", "head_sha"):
        if not isinstance(body.get(required), str):
            raise invalid("CheckRun", required)
    now = state.stamp()
    run = CheckRun(state.next_id(), repository.full_name, body["name"], body["head_sha"], started_at=now)
    _update_check_run(run, body, now)
    state.check_runs[run.id] = run
    return respond(renderer(request).check_run(run), 201)


async def update_check_run(request: web.Request) -> web.Response:
    repository, state = repository_of(request), request.app[STATE]
    run = state.check_runs.get(int(request.match_info["check_run_id"]))
    if run is None or run.repo != repository.full_name:
        raise not_found()
    body = request[BODY] or {}
    _update_check_run(run, body, state.stamp())
    return respond(renderer(request).check_run(run))


def _commit_of(request: web.Request) -> tuple[Repository, str]:
    """The path's repository and the commit its ref names (a sha, a branch, `heads/BRANCH`)."""
    repository = repository_of(request)
    if (sha := repository.resolve(request.match_info["ref"])) is None:
        raise GitHubError(422, f"No commit found for SHA: {request.match_info['ref']}")
    return repository, sha


def _app_filter(request: web.Request) -> int | None:
    """The `app_id` query parameter, if given (an integer, as GitHub's description has it)."""
    if "app_id" not in request.query:
        return None
    try:
        return int(request.query["app_id"])
    except ValueError:
        raise invalid("CheckRun", "app_id", "invalid") from None


def _own_app(state: StandinState, app_id: int | None) -> int:
    return state.app_id if app_id is None else app_id


async def list_check_runs(request: web.Request) -> web.Response:
    """The runs on a commit (a sha or a branch), newest first; by default only the newest of each
    name of each app (`filter=latest`); `check_name`, `status` and `app_id` narrow them."""
    (repository, sha), query, state = _commit_of(request), request.query, request.app[STATE]
    wanted_app = _app_filter(request)
    runs = sorted(state.check_runs.values(), key=lambda r: r.id)
    runs = [r for r in runs if (r.repo, r.head_sha) == (repository.full_name, sha)]
    if query.get("filter", "latest") == "latest":
        runs = list({(_own_app(state, r.app_id), r.name): r for r in runs}.values())
    runs = [
        r for r in reversed(sorted(runs, key=lambda r: r.id)) if query.get("check_name", r.name) == r.name
    ]
    runs = [r for r in runs if query.get("status", r.status) == r.status]
    runs = [r for r in runs if wanted_app in (None, _own_app(state, r.app_id))]
    page, headers = paginate(request, runs)
    body = {"total_count": len(runs), "check_runs": [renderer(request).check_run(r) for r in page]}
    return respond(body, headers=headers)


async def list_check_suites(request: web.Request) -> web.Response:
    """The check suites on a commit (one per app that has one); `app_id` and `check_name` narrow them."""
    (repository, sha), state = _commit_of(request), request.app[STATE]
    wanted_app, name = _app_filter(request), request.query.get("check_name")
    suites = [
        (suite, runs)
        for suite, runs in state.suites_on(repository.full_name, sha)
        if wanted_app in (None, _own_app(state, suite.app_id))
        and (name is None or any(run.name == name for run in runs))
    ]
    page, headers = paginate(request, suites)
    render = renderer(request)
    body = {
        "total_count": len(suites),
        "check_suites": [render.check_suite(repository, s, r) for s, r in page],
    }
    return respond(body, headers=headers)
