"""Retention: what is forgotten when (SPEC: payloads 7 days, delivery ids 30 days), which held
observations expire, and how long the API's answers are kept for replay (a day). The event log
and delivery records are never touched."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, select, update

from app.contracts.effect_types import EffectKind
from app.store.api_answers import api_answers
from app.store.database import Database
from app.store.delivery_status import FINAL_STATUSES
from app.store.effects import effects_table
from app.store.held import held
from app.store.pulls import pull_requests
from app.store.queue import deliveries, runs

DAY = 86_400.0


@dataclass(frozen=True)
class Retention:
    """How long things are kept: payloads 7 days, delivery ids 30 days (SPEC's defaults), held
    observations 14 days."""

    payload_days: float = 7.0
    delivery_id_days: float = 30.0
    held_observation_days: float = 14.0
    # An API answer is replayed for the same Idempotency-Key this long: far past any sensible
    # retry. After it the key is still the operation's id, so the one door still applies the
    # command at most once; a retry that late gets the outcome worded again, not the first bytes.
    api_answer_hours: float = 24.0


KEPT_EFFECTS = (EffectKind.STATUS_COMMENT, EffectKind.PROJECT_FIELDS)
"""Effects written again in place for as long as their ticket lives: never pruned. A check-run's
row is kept while its head is an open PR's current head (`_stale_checks`)."""


def apply_retention(database: Database, now: float, retention: Retention = Retention()) -> tuple[int, int]:
    """Forget expired delivery ids, then drop expired payloads; return (payloads dropped, ids forgotten).

    Pending deliveries are never touched; the event log and delivery records are kept, and so are
    the outbox rows of what railyard updates in place (`KEPT_EFFECTS`: a status comment's, a
    project item's; a check-run's while its head is an open PR's): their results hold the GitHub
    ids the next write edits, so a ticket quiet for longer than the retention still gets its one
    status comment edited, never a second one posted.
    """
    payload_cutoff = now - retention.payload_days * DAY
    id_cutoff = now - retention.delivery_id_days * DAY
    finished = deliveries.c.status.in_(FINAL_STATUSES)
    with database.write() as connection:
        expired = select(deliveries.c.seq).where(finished, deliveries.c.received_at < id_cutoff)
        connection.execute(delete(runs).where(runs.c.delivery_seq.in_(expired)))
        forgotten = connection.execute(
            delete(deliveries).where(finished, deliveries.c.received_at < id_cutoff)
        ).rowcount
        dropped = connection.execute(
            update(deliveries)
            .where(finished, deliveries.c.received_at < payload_cutoff, deliveries.c.payload.is_not(None))
            .values(payload=None)
        ).rowcount
        connection.execute(
            delete(effects_table).where(
                effects_table.c.status == "done",
                effects_table.c.updated_at < id_cutoff,
                effects_table.c.kind.not_in([kind.value for kind in (*KEPT_EFFECTS, EffectKind.CHECK_RUN)]),
            )
        )
        stale = _stale_checks(connection, id_cutoff)
        for start in range(0, len(stale), 500):
            connection.execute(
                delete(effects_table).where(effects_table.c.id.in_(stale[start : start + 500]))
            )
    return int(dropped), int(forgotten)


def prune_held_observations(database: Database, now: float, days: float) -> int:
    """Expire observations held longer than `days`; return how many went.

    A held check waits for a PR to show its head, a held deployment for a ticket to merge.
    Past the retention a check is history; of each environment's deployments, the statuses
    of the latest one and of the latest successful one are kept whatever their age, since a
    ticket that merges later is checked against them (SPEC: the deployment rail).
    """
    cutoff = now - days * DAY
    with database.write() as connection:
        gone = connection.execute(
            delete(held).where(held.c.subject.like("check:%"), held.c.held_at < cutoff)
        ).rowcount
        rows = connection.execute(
            select(held.c.id, held.c.repository, held.c.subject, held.c.held_at, held.c.data).where(
                held.c.subject.like("deployment:%")
            )
        ).all()
        keep = _deployments_kept(rows)
        expired = [row.id for row in rows if row.held_at < cutoff and row.id not in keep]
        for start in range(0, len(expired), 500):
            gone += connection.execute(
                delete(held).where(held.c.id.in_(expired[start : start + 500]))
            ).rowcount
    return int(gone)


def _deployments_kept(rows: Sequence[Any]) -> set[int]:
    """Ids of the held rows of each environment's latest and latest successful deployment."""
    latest: dict[tuple[str, str], int] = {}
    succeeded: dict[tuple[str, str], int] = {}
    for row in rows:
        place, deployment = (row.repository, row.subject), int(row.data["deployment_id"])
        latest[place] = max(latest.get(place, deployment), deployment)
        if row.data.get("status") == "success":
            succeeded[place] = max(succeeded.get(place, deployment), deployment)
    wanted = {(place, d) for place, d in (*latest.items(), *succeeded.items())}
    return {
        row.id for row in rows if ((row.repository, row.subject), int(row.data["deployment_id"])) in wanted
    }


def prune_api_answers(database: Database, now: float, hours: float) -> int:
    """Forget API answers kept longer than `hours`; return how many went."""
    cutoff = datetime.fromtimestamp(now - hours * 3600, UTC)
    with database.write() as connection:
        gone = connection.execute(delete(api_answers).where(api_answers.c.at < cutoff)).rowcount
    return int(gone or 0)


def stored_delivery_ids(database: Database, guids: list[str]) -> set[str]:
    """Which of these delivery ids are stored."""
    with database.read() as connection:
        rows = connection.execute(select(deliveries.c.delivery_id).where(deliveries.c.delivery_id.in_(guids)))
        return {row[0] for row in rows}


def _stale_checks(connection: Any, cutoff: float) -> list[int]:
    """Performed check-run rows not written since `cutoff` whose head is no open PR's current
    head (pushed over, or the PR closed): no later write edits them (`_OpenHeads`)."""
    heads = _OpenHeads.read(connection)
    old = connection.execute(
        select(
            effects_table.c.id,
            effects_table.c.repository,
            effects_table.c.repository_id,
            effects_table.c.payload,
        ).where(
            effects_table.c.status == "done",
            effects_table.c.kind == EffectKind.CHECK_RUN.value,
            effects_table.c.updated_at < cutoff,
        )
    )
    return [int(row.id) for row in old if not heads.shows(row)]


@dataclass(frozen=True)
class _OpenHeads:
    """The open PRs' current heads (repository, PR number, head sha), to match check rows against.

    A check's row and its PR's are matched by GitHub's id of the repository where both have one
    (effects since 0021, PRs since 0025): the names can differ while the repository is the same
    (a PR first seen while its repository was being renamed stays under the old name; its
    check, kept with the id, was moved to the new name before it was written). A row without an
    id is matched by name (casefolded), as before ids were kept."""

    by_id: frozenset[tuple[int, int, str | None]]
    by_name: frozenset[tuple[str, int, str | None]]
    without_id: frozenset[tuple[str, int, str | None]]  # the PRs without an id, by name

    @classmethod
    def read(cls, connection: Any) -> _OpenHeads:
        by_id, by_name, without_id = set(), set(), set()
        columns = (pull_requests.c.repository, pull_requests.c.repository_id, pull_requests.c.number)
        for row in connection.execute(select(*columns, pull_requests.c.head_sha).where(pull_requests.c.open)):
            named = (str(row.repository).casefold(), int(row.number), row.head_sha)
            by_name.add(named)
            if row.repository_id is None:
                without_id.add(named)
            else:
                by_id.add((int(row.repository_id), int(row.number), row.head_sha))
        return cls(frozenset(by_id), frozenset(by_name), frozenset(without_id))

    def shows(self, check: Any) -> bool:
        """Whether the check row's head is an open PR's current head."""
        number, sha = int(check.payload.get("pull_request", 0)), check.payload.get("head_sha")
        named = (str(check.repository).casefold(), number, sha)
        if check.repository_id is None:
            return named in self.by_name
        return (int(check.repository_id), number, sha) in self.by_id or named in self.without_id
