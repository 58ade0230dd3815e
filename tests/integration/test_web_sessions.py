"""Browser sessions in the database: every process sees a sign-out at once (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading

from sqlalchemy import func, select

from app.store.database import Database
from app.store.web_sessions import WebSessions, begin_session, prune_web_sessions, web_sessions


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


def rows_of(database: Database, account_id: int) -> int:
    """How many `web_sessions` rows the account has."""
    with database.read() as connection:
        query = select(func.count()).where(web_sessions.c.account_id == account_id)
        return int(connection.execute(query).scalar_one())


def test_an_account_keeps_its_ten_newest_sessions_and_signing_out_of_one_keeps_the_others(
    database: Database,
) -> None:
    """An eleventh session of one account ends its oldest (its row goes: an account cannot grow
    the table); another account's sessions are untouched; ending one ends that one only, and a
    session signed out or expired leaves its place to the next."""
    sessions = WebSessions(database)
    stranger = sessions.start(7, now=999.0, lifetime=3600.0)
    started = [sessions.start(42, now=1000.0 + n, lifetime=3600.0) for n in range(11)]
    assert [sessions.live(s, 42, now=1100.0) for s in started] == [False] + [True] * 10
    assert rows_of(database, 42) == 10 and sessions.live(stranger, 7, now=1100.0)
    sessions.end(started[5], now=1101.0)
    live = [sessions.live(s, 42, now=1102.0) for s in started]
    assert live == [False] + [True] * 4 + [False] + [True] * 5
    newest = sessions.start(42, now=1103.0, lifetime=3600.0)  # the signed-out one's place
    assert [sessions.live(s, 42, now=1104.0) for s in [*started[1:5], *started[6:], newest]] == [True] * 10
    assert rows_of(database, 42) == 10


def test_two_sign_ins_of_one_account_at_once_leave_ten_sessions(database: Database) -> None:
    """Two sign-ins of an account with ten live sessions, committing at once (two processes):
    each trims after the other's row is committed, so ten are left, not eleven. On PostgreSQL
    the second waits for the first (an advisory lock per account); SQLite has one writer."""
    sessions = WebSessions(database)
    for n in range(10):
        sessions.start(42, now=1000.0 + n, lifetime=3600.0)
    first_written, second_done = threading.Event(), threading.Event()

    def first() -> None:
        with database.write() as connection:
            begin_session(connection, 42, "first", 1100.0, 3600.0)
            first_written.set()
            second_done.wait(timeout=1.5)  # the second runs meanwhile, or waits for this commit

    def second() -> None:
        first_written.wait(timeout=10)
        with database.write() as connection:
            begin_session(connection, 42, "second", 1101.0, 3600.0)
        second_done.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert rows_of(database, 42) == 10
