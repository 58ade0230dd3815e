"""Observations held until a ticket can be told about them.

A check can complete before any linked PR shows its head; a deployment can finish before a
ticket merges; a PR can merge before the issue it fixes is published. All are kept here,
and replayed when the PR appears, the ticket merges or the ticket is published, so the
recorded observations do not depend on the order events arrive in.
"""

from __future__ import annotations

from sqlalchemy import Connection, select

from app.store.database import insert_for
from app.store.tables import HeldObservationRow, table
from policies.rails import Observation, fingerprint, observation_from_data, observation_to_data

held = table(HeldObservationRow)


def hold(
    connection: Connection,
    repository: str,
    subject: str,
    observation: Observation,
    now: float,
    *,
    per_subject: bool = False,
) -> None:
    """Keep an observation under a subject (once), from `now` (epoch seconds) until it expires.

    `per_subject`: the same observation may be held under several subjects (one PR event
    about two tickets not published yet), once under each.
    """
    identity = f"{subject}:{fingerprint(observation)}" if per_subject else fingerprint(observation)
    insert = insert_for(connection)
    statement = insert(held).values(
        repository=repository.casefold(),
        subject=subject,
        fingerprint=identity,
        data=observation_to_data(observation),
        held_at=now,
    )
    connection.execute(statement.on_conflict_do_nothing(index_elements=["repository", "fingerprint"]))


def held_for(connection: Connection, repository: str, subject: str) -> list[Observation]:
    """Every observation kept under a subject, oldest first."""
    rows = connection.execute(
        select(held.c.data)
        .where(held.c.repository == repository.casefold(), held.c.subject == subject)
        .order_by(held.c.id)
    )
    return [observation_from_data(row.data) for row in rows]
