"""Browser sessions in the database: every process sees a sign-out at once (SQLite and PostgreSQL)."""

from __future__ import annotations

from app.store.database import Database
from app.store.web_sessions import WebSessions, prune_web_sessions


def test_a_session_is_live_until_it_is_signed_out_and_then_for_nobody(database: Database) -> None:
    """A started session is live for its account only; ended, it is live for no process."""
    one, other = WebSessions(database), WebSessions(database)  # two processes, one database
    session_id = one.start(42, now=1000.0, lifetime=60.0)
    assert other.live(session_id, 42, now=1001.0)
    assert not other.live(session_id, 43, now=1001.0)  # another account's cookie with this id
    one.end(session_id, now=1002.0)
    assert not other.live(session_id, 42, now=1003.0)
    assert not one.live(session_id, 42, now=1003.0)


def test_a_session_expires_and_housekeeping_forgets_it(database: Database) -> None:
    """Past its lifetime a session is not live, and pruning deletes it; a made-up id is never live."""
    sessions = WebSessions(database)
    old = sessions.start(42, now=1000.0, lifetime=60.0)
    kept = sessions.start(42, now=1050.0, lifetime=60.0)
    assert not sessions.live(old, 42, now=1061.0)
    assert prune_web_sessions(database, now=1061.0) == 1
    assert sessions.live(kept, 42, now=1061.0)
    assert not sessions.live("made-up", 42, now=1061.0)
