"""The CI state of a commit, read from GitHub's check runs and suites and judged by `policies.ci`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from handlers.payloads import dig_int
from handlers.ports import GitHubReads, Json
from policies.checks import check_name
from policies.ci import CheckSeen, CiResult, ci_state


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _app_slug(item: Json) -> str | None:
    app = item.get("app")
    return _text(app.get("slug")) if isinstance(app, Mapping) else None


def _id(item: Json) -> int:
    found = item.get("id")
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def seen_run(run: Json, app_id: int | None = None) -> CheckSeen:
    """A check run as the CI judgement sees it: its name, status, conclusion, app and id. Another
    app's run named `railyard` is named with its app's id: it is CI, not railyard's own check."""
    return CheckSeen(
        name=check_name(str(run.get("name") or ""), dig_int(run, "app", "id"), app_id) or "",
        status=str(run.get("status") or ""),
        conclusion=_text(run.get("conclusion")),
        app_slug=_app_slug(run),
        id=_id(run),
    )


def seen_suite(suite: Json) -> CheckSeen | None:
    """A check suite without runs (how GitHub shows a workflow held for approval), or None."""
    if suite.get("latest_check_runs_count") != 0:
        return None  # a suite with runs is judged by its runs
    slug = _app_slug(suite)
    return CheckSeen(
        name=slug or "check suite",
        status=str(suite.get("status") or ""),
        conclusion=_text(suite.get("conclusion")),
        app_slug=slug,
        id=_id(suite),
        suite=True,
    )


async def ci_of(
    github: GitHubReads,
    installation_id: int,
    repository: str,
    sha: str,
    required: tuple[str, ...],
    app_id: int | None = None,
) -> CiResult:
    """The CI state of commit `sha` (over `required` when it names any, else every check but
    railyard's own: this app's, `app_id`)."""
    runs = [seen_run(r, app_id) for r in await github.check_runs(installation_id, repository, sha)]
    suites = [seen_suite(s) for s in await github.check_suites(installation_id, repository, sha)]
    return ci_state([*runs, *(s for s in suites if s is not None)], required)
