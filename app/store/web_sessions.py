"""Browser sessions in the database (`web_sessions`), so signing out on one server process ends
the session on all of them at once (SPEC *Repository identity and sessions*).

The sealed cookie still carries the person and their token; it also carries a random session
id whose sha256 is the row's key. A page request is served only while that row exists, has not
ended and has not expired: one primary-key read, no call to GitHub.
"""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import delete, select, update

from app.store.database import Database
from app.store.tables import WebSessionRow, table

web_sessions = table(WebSessionRow)


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class WebSessions:
    """Start, check and end the browser sessions of every process on `database`."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def start(self, account_id: int, now: float, lifetime: float) -> str:
        """A new session of `account_id`, valid for `lifetime` seconds: its id (for the cookie only)."""
        session_id = secrets.token_urlsafe(32)
        with self.database.write() as connection:
            connection.execute(
                web_sessions.insert().values(
                    key=_key(session_id),
                    account_id=account_id,
                    created_at=now,
                    expires_at=now + lifetime,
                    ended_at=None,
                )
            )
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


def prune_web_sessions(database: Database, now: float) -> int:
    """Delete the sessions that expired (ended ones are refused either way until then)."""
    with database.write() as connection:
        expired = delete(web_sessions).where(web_sessions.c.expires_at <= now)
        return int(connection.execute(expired).rowcount or 0)
