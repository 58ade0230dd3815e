"""The HTTP API's answers, kept under each account's Idempotency-Key (`api_answers`).

An answer is written in the unit of work that made the change it answers, so the two exist
together or not at all. Two requests racing with one key both reach the one door (which
applies the operation once); the second finds the first's answer here and returns it.
"""

from __future__ import annotations

from sqlalchemy import Connection, select

from app.store.database import insert_for
from app.store.tables import ApiAnswerRow, table
from handlers.ports import KeptAnswer

api_answers = table(ApiAnswerRow)


def kept_answer(connection: Connection, account_id: int, key: str) -> KeptAnswer | None:
    """The answer kept under the account's key, if any."""
    row = connection.execute(
        select(api_answers).where(
            api_answers.c.account_id == account_id, api_answers.c.idempotency_key == key
        )
    ).first()
    if row is None:
        return None
    return KeptAnswer(row.account_id, row.idempotency_key, row.digest, row.status, dict(row.body), row.at)


def keep_answer(connection: Connection, answer: KeptAnswer) -> KeptAnswer:
    """Keep the answer unless one is kept under its key already; return the one kept."""
    statement = insert_for(connection)(api_answers).values(
        account_id=answer.account_id,
        idempotency_key=answer.key,
        digest=answer.digest,
        status=answer.status,
        body=dict(answer.body),
        at=answer.at,
    )
    connection.execute(statement.on_conflict_do_nothing())
    kept = kept_answer(connection, answer.account_id, answer.key)
    assert kept is not None  # just written, or written by the request that raced this one
    return kept
