"""The per-account reply ledger on SQLite and PostgreSQL: three replies per ten minutes, then a
reaction; the same comment always gets the same answer; old entries are pruned."""

from __future__ import annotations

from app.store.database import Database
from app.store.replies import REPLY_WINDOW, Reply, enqueue_reply, prune_replies

T0 = 1_780_000_000.0


def reply(comment_id: int, actor_id: int = 42, kind: str = "hint") -> Reply:
    """A reply to one comment by account `actor_id` on acme/web#12."""
    return Reply(7, "acme/web", 12, comment_id, actor_id, kind, f"answer to {comment_id}")


def answer(database: Database, item: Reply, now: float) -> str:
    """The kind of effect the reply became: a comment, or a reaction over the limit."""
    with database.write() as connection:
        return enqueue_reply(connection, item, now).kind


def test_an_account_gets_three_replies_then_reactions(database: Database) -> None:
    """The fourth reply within the window becomes a reaction; another account is unaffected."""
    kinds = [answer(database, reply(n), T0 + n) for n in range(1, 6)]
    assert kinds == ["comment", "comment", "comment", "reaction", "reaction"]
    assert answer(database, reply(9, actor_id=43), T0 + 9) == "comment"


def test_the_same_comment_answered_again_gets_the_same_answer(database: Database) -> None:
    """A redelivered comment repeats its decision, even after the window has passed."""
    for n in range(1, 5):
        answer(database, reply(n), T0 + n)
    later = T0 + REPLY_WINDOW.total_seconds() + 60
    assert answer(database, reply(4), later) == "reaction"
    assert answer(database, reply(1), later) == "comment"
    assert answer(database, reply(5), later) == "comment"  # the window has moved on


def test_replies_older_than_a_day_are_pruned(database: Database) -> None:
    """Housekeeping forgets old replies; recent ones still count."""
    answer(database, reply(1), T0)
    answer(database, reply(2), T0 + 86_400 + 10)
    assert prune_replies(database, T0 + 86_400 + 20) == 1
