"""The CI state of one commit, from the checks GitHub shows on it (SPEC: "Acceptance that stays true").

An acceptance records the delivered commit's CI state, and `acceptance.ci: require` refuses
`/accept` until it is `passed`. The checks considered are `checks.required` when it names any
(a required name with no run yet is still to come), else every check but railyard's own.

What is read from GitHub, and why (docs/operating.md, "What railyard relies on from GitHub"):

- the newest run of each name decides it: the run with the highest id (GitHub's ids grow), the
  first given among equal ids; counted per app, since any app (or workflow) with `checks: write`
  can create a run of any name: a name passes only when every app's newest run of it passes, so
  a run named like another app's check can never hide that check's failure or its pending run;
- a completed run passes on `success`, `neutral` or `skipped`; every other conclusion fails
  (`FAILING_CONCLUSIONS`, and `cancelled`, `stale` or one GitHub may add: none of them is a pass);
- a run `waiting` is a GitHub Actions job held until a reviewer approves its environment, and a
  GitHub Actions run that ended `action_required` waits for a maintainer to let it run
  (`awaits_approval`): both are `awaiting_approval`, never a failure;
- a workflow GitHub holds until a maintainer approves it to run (a fork's or a first-time
  contributor's pull request) has no check run at all: its check suite is `completed` with the
  conclusion `action_required` and no runs. Such a suite is given here as a `CheckSeen` with
  `suite=True`; any other suite given is ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from policies.rails import FAILING_CONCLUSIONS, OWN_CHECK_NAME

PASSING_CONCLUSIONS = frozenset({"success", "neutral", "skipped"})
HELD_SUITE_CONCLUSION = "action_required"
WAITING_STATUS = "waiting"

__all__ = ["FAILING_CONCLUSIONS", "CheckSeen", "CiResult", "CiState", "awaits_approval", "ci_state"]


def awaits_approval(conclusion: str | None, *, suite_without_runs: bool = False) -> bool:
    """Whether a completed check suite ended `action_required` because GitHub waits for someone
    to approve its run: a workflow held for a maintainer's approval (a fork's or a first-time
    contributor's PR) completes `action_required` with no jobs, so its suite has no runs. A check
    run that ends `action_required` asks for something else, whichever app wrote it (a workflow's
    step writing a check with its `GITHUB_TOKEN` writes it as GitHub Actions), and stays a
    failing check; so does a suite whose runs ran."""
    return conclusion == HELD_SUITE_CONCLUSION and suite_without_runs


class CiState(StrEnum):
    """What the considered checks of a commit say, taken together."""

    PASSED = "passed"
    FAILED = "failed"
    PENDING = "pending"
    AWAITING_APPROVAL = "awaiting_approval"
    NONE = "none"


@dataclass(frozen=True)
class CheckSeen:
    """One check run on the commit as GitHub shows it (or, with `suite`, a check suite without
    runs: `name` is then its app's slug). `id` orders runs of one name: the highest is the newest."""

    name: str
    status: str
    conclusion: str | None
    app_slug: str | None = None
    id: int = 0
    suite: bool = False


@dataclass(frozen=True)
class CiResult:
    """The state and the check names that decided it: the failing ones for failed, the ones not
    yet completed for pending, the held ones for awaiting_approval, every considered one for passed."""

    state: CiState
    checks: tuple[str, ...]


def _newest_by_app_and_name(runs: Sequence[CheckSeen]) -> dict[str, list[CheckSeen]]:
    """Each name's newest run of every app that ran it (a name's runs by one app supersede each
    other; another app's run of the same name never supersedes them)."""
    newest: dict[tuple[str, str | None], CheckSeen] = {}
    for run in runs:
        kept = newest.get((run.name, run.app_slug))
        if kept is None or run.id > kept.id:
            newest[(run.name, run.app_slug)] = run
    by_name: dict[str, list[CheckSeen]] = {}
    for (name, _), run in newest.items():
        by_name.setdefault(name, []).append(run)
    return by_name


def _run_verdict(run: CheckSeen) -> CiState:
    if run.status == "completed":
        if awaits_approval(run.conclusion, suite_without_runs=run.suite):
            return CiState.AWAITING_APPROVAL
        return CiState.PASSED if run.conclusion in PASSING_CONCLUSIONS else CiState.FAILED
    return CiState.AWAITING_APPROVAL if run.status == WAITING_STATUS else CiState.PENDING


_WORST_FIRST = (CiState.FAILED, CiState.AWAITING_APPROVAL, CiState.PENDING, CiState.PASSED)


def _verdict(runs: Sequence[CheckSeen]) -> CiState:
    """A name's state over every app's newest run of it: the worst of them."""
    states = {_run_verdict(run) for run in runs}
    return next(state for state in _WORST_FIRST if state in states)


def ci_state(runs: Sequence[CheckSeen], required: tuple[str, ...]) -> CiResult:
    """The commit's CI state from its check runs (and held suites), over `required` when it names any.

    A failure decides it first (it stands whatever else runs); then anything held for someone's
    approval (it will not move by itself); then anything still to run; then a pass.
    """
    newest = _newest_by_app_and_name([r for r in runs if not r.suite])
    held = sorted({s.name for s in runs if s.suite and s.conclusion == HELD_SUITE_CONCLUSION})
    names = list(dict.fromkeys(required)) if required else sorted(n for n in newest if n != OWN_CHECK_NAME)
    verdicts = {name: _verdict(newest[name]) for name in names if name in newest}
    missing = [name for name in names if name not in newest]

    def having(state: CiState) -> tuple[str, ...]:
        return tuple(name for name in names if verdicts.get(name) is state)

    if failed := having(CiState.FAILED):
        return CiResult(CiState.FAILED, failed)
    # Without required names, a held workflow is a check still to come that nobody named; with
    # them, it holds back exactly the required names that have no run yet.
    awaiting = having(CiState.AWAITING_APPROVAL) + tuple((missing if held else []) if required else held)
    if awaiting:
        return CiResult(CiState.AWAITING_APPROVAL, tuple(dict.fromkeys(awaiting)))
    if pending := tuple(name for name in names if verdicts.get(name) is CiState.PENDING or name in missing):
        return CiResult(CiState.PENDING, pending)
    if names:
        return CiResult(CiState.PASSED, tuple(names))
    return CiResult(CiState.NONE, ())
