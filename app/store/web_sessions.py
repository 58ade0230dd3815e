"""Browser sessions in the database (`web_sessions`), so signing out on one server process ends
the session on all of them at once (SPEC *Repository identity and sessions*).

The sealed cookie still carries the person and their token; it also carries a random session
id whose sha256 is the row's key. A page request is served only while that row exists, has not
ended and has not expired: one primary-key read, no call to GitHub.

An account keeps at most `SESSIONS_PER_ACCOUNT` sessions: starting one deletes the account's
rows but the newest live ones (the oldest session ends; signed-out and expired rows go too), so
no account, even one that can read nothing, grows the table by signing in again and again. On
PostgreSQL an account's sign-ins start one at a time (an advisory lock per account), so two at
once cannot each keep the other's row and leave one session too many.
"""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import Connection, Delete, delete, select, update

from app.store.advisory import one_at_a_time
from app.store.database import Database
from app.store.tables import WebSessionRow, table

web_sessions = table(WebSessionRow)
SESSIONS_PER_ACCOUNT = 10  # browsers (or tabs signed in apart) one person keeps signed in at once


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class WebSessions:
    """Start, check and end the browser sessions of every process on `database`."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def start(self, account_id: int, now: float, lifetime: float) -> str:
        """A new session of `account_id`, valid for `lifetime` seconds: its id (for the cookie
        only). The account's oldest live session ends when it would be one too many."""
        session_id = secrets.token_urlsafe(32)
        key = _key(session_id)
        with self.database.write() as connection:
            begin_session(connection, account_id, key, now, lifetime)
        return session_id

    def live(self, session_id: str, account_id: int, now: float) -> bool:
        """Whether the session is the account's, not signed out and not expired."""
        with self.database.read() as connection:
            row = connection.execute(
                select(web_sessions.c.account_id, web_sessions.c.expires_at, web_sessions.c.ended_at).where(
                    web_sessions.c.key == _key(session_id)
                )
            ).first()
        if row is None or row.ended_at is not None:
            return False
        return bool(row.account_id == account_id and row.expires_at > now)

    def end(self, session_id: str, now: float) -> None:
        """Sign the session out, for every process."""
        with self.database.write() as connection:
            connection.execute(
                update(web_sessions)
                .where(web_sessions.c.key == _key(session_id), web_sessions.c.ended_at.is_(None))
                .values(ended_at=now)
            )


def begin_session(connection: Connection, account_id: int, key: str, now: float, lifetime: float) -> None:
    """In the caller's transaction: the session row `key`, and the account's rows beyond the
    newest it keeps deleted, one sign-in of the account at a time (see the module)."""
    one_at_a_time(connection, f"railyard:sessions:{account_id}")
    connection.execute(
        web_sessions.insert().values(
            key=key, account_id=account_id, created_at=now, expires_at=now + lifetime, ended_at=None
        )
    )
    connection.execute(_older_than_kept(account_id, key, now))


def _older_than_kept(account_id: int, key: str, now: float) -> Delete:
    """Delete the account's sessions but `key` and the newest live ones it leaves room for (by
    `ix_web_sessions_account_created`)."""
    columns = web_sessions.c
    of_account = columns.account_id == account_id
    kept = (
        select(columns.key)
        .where(of_account, columns.key != key, columns.ended_at.is_(None), columns.expires_at > now)
        .order_by(columns.created_at.desc())
        .limit(SESSIONS_PER_ACCOUNT - 1)
    )
    return delete(web_sessions).where(of_account, columns.key != key, columns.key.not_in(kept))


def prune_web_sessions(database: Database, now: float) -> int:
    """Delete the sessions that expired (ended ones are refused either way until then)."""
    with database.write() as connection:
        expired = delete(web_sessions).where(web_sessions.c.expires_at <= now)
        return int(connection.execute(expired).rowcount or 0)
