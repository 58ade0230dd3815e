"""Checks on the repository rail: what each check on a commit last said, and which of them hold a
pull request back.

A check's name is not its identity. Any app with `checks: write` can create a run of any name, so a
run is kept per commit, name and app (`check_key`): another app's passing `build` never replaces
GitHub Actions' failing `build` (`policies.ci` counts names per app the same way; GitHub shows
both). A check suite is kept per suite id: every GitHub Actions workflow run is a suite named
`github-actions`, and one that failed to start (`startup_failure`, no runs) must not be replaced by
another workflow's suite on the same commit.

A fact recorded before the app and the suite were kept (`app_id` None and not `suite`, from an
older event or snapshot) was the newest of its name then: it stands until a newer fact of that name
on that commit comes from a known app. The join stays commutative: such a fact is kept only when it
ranks above every other fact of its name, whatever arrived first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

FAILING_CONCLUSIONS = frozenset({"failure", "timed_out", "action_required", "startup_failure"})

CheckKey = tuple[str, str, int | None, int | None]
"""(head sha, name, app id, suite id): one check run name of one app, or one suite, on one commit."""


@dataclass(frozen=True)
class CheckFact:
    """The newest result of one check (a name of one app, or one check suite) on one commit."""

    head_sha: str
    name: str
    conclusion: str | None
    check_id: int
    completed_at: datetime
    awaiting_approval: bool = False
    app_id: int | None = None  # None: recorded before the app was kept
    suite: bool = False  # a check suite, named by its app and kept by its id (`check_id`)


def check_key(fact: CheckFact) -> CheckKey:
    """Where a check fact is kept among a ticket's checks."""
    return (fact.head_sha, fact.name, fact.app_id, fact.check_id if fact.suite else None)


def _rank(fact: CheckFact) -> tuple[Any, ...]:
    return (fact.completed_at, fact.check_id, fact.conclusion or "", fact.awaiting_approval)


def _same_check(a: CheckFact, b: CheckFact) -> bool:
    return (a.head_sha, a.name) == (b.head_sha, b.name)


def _recorded_before_apps(fact: CheckFact) -> bool:
    return fact.app_id is None and not fact.suite


def join_check(checks: Mapping[CheckKey, CheckFact], new: CheckFact) -> dict[CheckKey, CheckFact]:
    """The checks with `new` joined: per key the higher rank wins (ranks are total, so the order
    facts arrive in never matters), and a fact without an app gives way to a newer one with."""
    known = [c for c in checks.values() if _same_check(c, new) and not _recorded_before_apps(c)]
    if _recorded_before_apps(new) and any(_rank(c) > _rank(new) for c in known):
        return dict(checks)  # an older event without the app, outranked already
    key = check_key(new)
    old = checks.get(key)
    joined = {**checks, key: new if old is None or _rank(new) > _rank(old) else old}
    legacy = (new.head_sha, new.name, None, None)
    if not _recorded_before_apps(new) and legacy in joined and _rank(new) > _rank(joined[legacy]):
        del joined[legacy]
    return joined


def holding_back(
    checks: Iterable[CheckFact], head_sha: str | None, required: tuple[str, ...], own_name: str
) -> tuple[set[str], set[str]]:
    """(the names that failed, the names whose CI waits for approval to run) among the checks on
    `head_sha` that count: `required` when it names any, else every check but railyard's own.

    A workflow GitHub holds until someone approves it to run (a fork's PR) is a suite with no runs,
    named by its app: with `required` set it holds back every required name that has no run yet,
    as `policies.ci` judges it for acceptance (SPEC: the rail is `blocked`, "CI awaiting approval
    to run")."""
    on_head = [c for c in checks if c.head_sha == head_sha and c.name != own_name]
    failing: set[str] = set()
    held: set[str] = set()
    for check in on_head:
        if required and check.name not in required:
            continue
        if check.conclusion in FAILING_CONCLUSIONS:
            (held if check.awaiting_approval else failing).add(check.name)
    if required and any(_held_workflow(c) for c in on_head):
        ran = {c.name for c in on_head if not c.suite}
        held |= {name for name in required if name not in ran}
    return failing, held


def _held_workflow(fact: CheckFact) -> bool:
    """A suite waiting for approval to run; a fact recorded before suites were marked may be one."""
    return fact.awaiting_approval and (fact.suite or _recorded_before_apps(fact))
