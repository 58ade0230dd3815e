"""What the GitHub stand-in keeps of checks: runs, the suites tests set, and the suites GitHub
derives from an app's runs on a commit."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from github_standin.common import fake_sha

__all__ = ["SUITE_CONCLUSION_ORDER", "CheckRun", "CheckSuite", "suite_id", "suites_on"]


@dataclass
class CheckRun:
    id: int
    repo: str
    name: str
    head_sha: str
    status: str = "queued"
    conclusion: str | None = None
    output: dict[str, str | None] = field(default_factory=lambda: dict.fromkeys(("title", "summary", "text")))
    details_url: str | None = None
    external_id: str | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None
    app_id: int | None = None  # the app that created it; None: railyard's own


@dataclass
class CheckSuite:
    """A check suite set by a test, as GitHub creates one per app and commit: a workflow GitHub
    holds for a maintainer's approval is a suite `completed` with `action_required` and no runs.
    Suites of apps with runs on a commit and none set here are derived from their runs."""

    id: int
    repo: str
    head_sha: str
    app_id: int | None = None  # None: railyard's own
    status: str = "queued"
    conclusion: str | None = None


# A suite's conclusion, derived from its runs' when they are all completed: the first of these
# any of them has (GitHub's own order is not documented; this one lets no failure hide).
SUITE_CONCLUSION_ORDER = (
    "action_required", "startup_failure", "cancelled", "timed_out", "failure", "stale", "neutral",
    "skipped", "success",
)  # fmt: skip


def suite_id(suites: Iterable[CheckSuite], repo: str, head_sha: str, app_id: int | None) -> int:
    """The id of an app's suite on a commit (None: railyard's): the one set, else a derived one."""
    for suite in suites:
        if (suite.repo, suite.head_sha, suite.app_id) == (repo, head_sha, app_id):
            return suite.id
    salt = () if app_id is None else (f"app-{app_id}",)
    return int(fake_sha(repo, head_sha, *salt)[:7], 16)


def suites_on(
    runs: Iterable[CheckRun], suites: Iterable[CheckSuite], own_app: int, repo: str, head_sha: str
) -> list[tuple[CheckSuite, list[CheckRun]]]:
    """Every suite on a commit with its runs: those set, and one per other app with runs."""
    by_app: dict[int | None, list[CheckRun]] = {}
    for run in sorted((r for r in runs if (r.repo, r.head_sha) == (repo, head_sha)), key=lambda r: r.id):
        by_app.setdefault(None if run.app_id == own_app else run.app_id, []).append(run)
    found = [s for s in suites if (s.repo, s.head_sha) == (repo, head_sha)]
    listed = [(s, by_app.pop(s.app_id, [])) for s in found]
    for app_id, its_runs in by_app.items():
        listed.append((_derived_suite(suite_id(found, repo, head_sha, app_id), its_runs), its_runs))
    return sorted(listed, key=lambda pair: pair[0].id)


def _derived_suite(suite_id: int, runs: list[CheckRun]) -> CheckSuite:
    """The suite GitHub keeps for an app's runs on a commit, its state following theirs."""
    first = runs[0]
    suite = CheckSuite(suite_id, first.repo, first.head_sha, first.app_id)
    latest = list({r.name: r for r in runs}.values())
    if all(r.status == "completed" for r in latest):
        found = {r.conclusion for r in latest}
        suite.status = "completed"
        suite.conclusion = next((c for c in SUITE_CONCLUSION_ORDER if c in found), None)
    else:
        suite.status = "in_progress" if any(r.status != "queued" for r in latest) else "queued"
    return suite
