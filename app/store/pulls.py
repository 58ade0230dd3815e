"""Pull requests as railyard last saw them, and which tickets they link.

A PR links a ticket through its body (closing keywords, `Refs`) or because its head branch
is a branch a delivery (or a claim) reported, and only when that head branch is in this
repository: a fork's branch name links nothing. Linking and unlinking are both observations
on the ticket's repository rail; each is recorded in the ticket's append-only event log with
the PR's time and the delivery that brought it, which is the link history.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, func, select, union

from app.store.attempt_rows import attempts, delivery_records
from app.store.codec import rails_from_data
from app.store.database import insert_for
from app.store.tables import PullRequestRow, table
from app.store.tickets import tickets
from handlers.ports import PullRequest
from policies.clocks import end_of_second
from policies.links import SHOWING_OPEN_PULLS, shows_pull_open

pull_requests = table(PullRequestRow)


def remember(connection: Connection, pull: PullRequest, linked: set[int]) -> set[int]:
    """Store the PR (unless a newer state is stored) and return the tickets it linked before.

    A PR already stored merged keeps the links it had then: what a merge brought is fixed when
    it merges (SPEC: edits after the merge never make a ticket merged), so a body edited or a
    branch reported afterwards changes nothing the deployment gate reads."""
    repository = pull.repository.casefold()
    row = connection.execute(
        select(pull_requests.c.linked, pull_requests.c.updated_at, pull_requests.c.merged).where(
            pull_requests.c.repository == repository, pull_requests.c.number == pull.number
        )
    ).first()
    before = set(row.linked) if row else set()
    if row is not None and row.updated_at > pull.updated_at.timestamp():
        return before  # an older event arrived late: keep the newer state
    if row is not None and row.merged and pull.merged:
        linked = before
    values = {
        "repository": repository,
        "number": pull.number,
        "head_ref": pull.head_ref,
        "head_sha": pull.head_sha,
        "url": pull.url,
        "open": pull.open,
        "merged": pull.merged,
        "merge_commit": pull.merge_commit,
        "linked": sorted(linked),
        "updated_at": pull.updated_at.timestamp(),
        "author": pull.author,
        "head_repository": pull.head_repository,
        "merged_at": pull.merged_at.timestamp() if pull.merged_at else None,
        "author_has_role": pull.author_has_role,
        "base_ref": pull.base_ref,
        "repository_id": pull.repository_id,
        "head_repository_id": pull.head_repository_id,
    }
    statement = insert_for(connection)(pull_requests).values(**values)
    updated = {k: v for k, v in values.items() if k not in ("repository", "number")}
    if not pull.open:  # out of any merge queue (a push is kept: the queue may keep an amend's commit)
        updated["queue_heads"] = None
    connection.execute(statement.on_conflict_do_update(index_elements=["repository", "number"], set_=updated))
    return before


def _pull(row: Any) -> PullRequest:
    return PullRequest(
        repository=row.repository,
        number=row.number,
        url=row.url,
        open=row.open,
        merged=row.merged,
        head_ref=row.head_ref,
        head_sha=row.head_sha,
        merge_commit=row.merge_commit,
        updated_at=datetime.fromtimestamp(row.updated_at, UTC),
        author=row.author,
        head_repository=row.head_repository,
        merged_at=datetime.fromtimestamp(row.merged_at, UTC) if row.merged_at is not None else None,
        author_has_role=row.author_has_role,
        base_ref=row.base_ref,
        repository_id=row.repository_id,
        head_repository_id=row.head_repository_id,
    )


def pulls_where(
    connection: Connection, repository: str, *, head_sha: str | None = None, head_ref: str | None = None
) -> list[tuple[PullRequest, set[int]]]:
    """Stored PRs of a repository with a given head commit or head branch, with their links.

    `head_ref` names a branch of this repository, so forks' PRs never match it, whatever their
    head's name (`PullRequest.head_in_repository`: by GitHub's repository ids).
    """
    statement = select(pull_requests).where(pull_requests.c.repository == repository.casefold())
    if head_sha is not None:
        statement = statement.where(pull_requests.c.head_sha == head_sha)
    if head_ref is not None:
        statement = statement.where(pull_requests.c.head_ref == head_ref)
    found = [(_pull(row), set(row.linked)) for row in connection.execute(statement)]
    return [(pull, linked) for pull, linked in found if head_ref is None or pull.head_in_repository]


def open_linked_into(
    connection: Connection, repository: str, branch: str
) -> list[tuple[PullRequest, set[int]]]:
    """Stored open PRs of a repository that link tickets and target `branch` (or whose target is
    not known: stored before bases were), newest first."""
    statement = (
        select(pull_requests)
        .where(
            pull_requests.c.repository == repository.casefold(),
            pull_requests.c.open.is_(True),
            (pull_requests.c.base_ref == branch) | pull_requests.c.base_ref.is_(None),
        )
        .order_by(pull_requests.c.number.desc())
    )
    found = [(_pull(row), set(row.linked)) for row in connection.execute(statement)]
    return [(pull, linked) for pull, linked in found if linked]


def pulls_merged_as(
    connection: Connection, repository: str, merge_commits: Collection[str] | None
) -> list[tuple[PullRequest, set[int]]]:
    """Stored merged PRs whose merge commit is one of `merge_commits`, with their links (asked
    500 shas at a time: a long deployment range stays inside every driver's parameter limit);
    None: every merged PR of the repository (the gate without a range)."""
    if merge_commits is None:
        statement = select(pull_requests).where(
            pull_requests.c.repository == repository.casefold(), pull_requests.c.merged.is_(True)
        )
        return [(_pull(row), set(row.linked)) for row in connection.execute(statement)]
    wanted, found = sorted(set(merge_commits)), []
    for start in range(0, len(wanted), 500):
        statement = select(pull_requests).where(
            pull_requests.c.repository == repository.casefold(),
            pull_requests.c.merged.is_(True),
            pull_requests.c.merge_commit.in_(wanted[start : start + 500]),
        )
        found += [(_pull(row), set(row.linked)) for row in connection.execute(statement)]
    return found


def stored_pull(connection: Connection, repository: str, number: int) -> tuple[PullRequest, set[int]] | None:
    """One stored PR with the tickets it links, or None when railyard has not seen it."""
    statement = select(pull_requests).where(
        pull_requests.c.repository == repository.casefold(), pull_requests.c.number == number
    )
    row = connection.execute(statement).first()
    return (_pull(row), set(row.linked)) if row else None


def tickets_on_branch(
    connection: Connection,
    repository: str,
    branch: str,
    *,
    head_in_repository: bool,
    reported_by: datetime | None = None,
) -> set[int]:
    """Tickets whose claim or delivery reported `branch`, for a PR whose head is `branch`.

    Unless the head is in `repository` (`head_in_repository`: `PullRequest.head_in_repository`,
    decided by GitHub's repository ids), it links nothing: a fork's branch is not the delivered
    branch, whatever its name. With `reported_by`, only branches reported by then count (the
    links a PR had when it merged).
    """
    if not head_in_repository:
        return set()
    delivered = (
        select(tickets.c.number)
        .join(delivery_records, delivery_records.c.ticket_id == tickets.c.id)
        .where(tickets.c.repository == repository.casefold(), delivery_records.c.branch == branch)
    )
    claimed = (
        select(tickets.c.number)
        .join(attempts, attempts.c.ticket_id == tickets.c.id)
        .where(tickets.c.repository == repository.casefold(), attempts.c.branch == branch)
    )
    if reported_by is not None:
        # GitHub's time of the `/deliver` comment, not when railyard got to it: a delivery written
        # before the merge and processed after it (a retry, an outage) still linked the PR.
        # `reported_by` is GitHub's whole second; railyard's own times (an API delivery, an
        # attempt's opening) in that same second count as by it (policies.clocks).
        written = func.coalesce(delivery_records.c.comment_at, delivery_records.c.created_at)
        delivered = delivered.where(written < end_of_second(reported_by))
        claimed = claimed.where(attempts.c.opened_at < end_of_second(reported_by))
    return {int(row[0]) for row in connection.execute(union(delivered, claimed))}


def attempt_opened_by(connection: Connection, repository: str, number: int, when: datetime) -> bool:
    """Whether the ticket had an attempt (a claim) opened by `when`."""
    statement = (
        select(attempts.c.id)
        .join(tickets, attempts.c.ticket_id == tickets.c.id)
        .where(
            tickets.c.repository == repository.casefold(),
            tickets.c.number == number,
            attempts.c.opened_at < end_of_second(when),  # GitHub's second: see tickets_on_branch
        )
        .limit(1)
    )
    return connection.execute(statement).first() is not None


def tickets_showing_pull(connection: Connection, repository: str, number: int, before: datetime) -> set[int]:
    """Tickets whose rails show PR `number` linked and open as of a time before `before`
    (`policies.links.shows_pull_open`); only tickets whose rail shows an open PR are read."""
    rows = connection.execute(
        select(tickets.c.number, tickets.c.snapshot).where(
            tickets.c.repository == repository.casefold(),
            tickets.c.integration.in_([state.value for state in SHOWING_OPEN_PULLS]),
        )
    )
    return {
        int(row.number)
        for row in rows
        if shows_pull_open(rails_from_data(row.snapshot["rails"]), number, before)
    }


SCANS: tuple[Callable[..., Any], ...] = (pulls_merged_as, tickets_showing_pull)
"""The reads here whose rows grow with the repository (`app.store.unit` runs them off the loop)."""
