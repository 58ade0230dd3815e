"""The per-account reply ledger on SQLite and PostgreSQL: three replies per ten minutes, then a
reaction; the same comment always gets the same answer; old entries are pruned."""

from __future__ import annotations

from app.contracts.effect_types import LimitedReply
from app.store.database import Database
from app.store.replies import REPLY_WINDOW, enqueue_reply, prune_replies

T0 = 1_780_000_000.0


def reply(comment_id: int, actor_id: int = 42, kind: str = "hint") -> LimitedReply:
    """A reply to one comment by account `actor_id` on acme/web#12."""
    return LimitedReply(7, "acme/web", 12, comment_id, actor_id, kind, f"answer to {comment_id}")


def answer(database: Database, item: LimitedReply, now: float) -> str | None:
    """The kind of effect the reply became: a comment, a reaction over the limit, or None."""
    with database.write() as connection:
        effect = enqueue_reply(connection, item, now)
    return effect.kind if effect is not None else None


def test_an_account_gets_three_replies_then_one_reaction_then_silence(database: Database) -> None:
    """The fourth reply in the window becomes a reaction, the rest nothing; other accounts are unaffected."""
    kinds = [answer(database, reply(n), T0 + n) for n in range(1, 31)]
    assert kinds == ["comment", "comment", "comment", "reaction"] + [None] * 26
    assert answer(database, reply(99, actor_id=43), T0 + 99) == "comment"


def test_thirty_comments_over_the_limit_cost_one_content_write(database: Database) -> None:
    """Over the limit, 30 comments enqueue one reaction in all; a redelivered one stays silent."""
    for n in range(1, 4):
        answer(database, reply(n), T0 + n)
    written = [answer(database, reply(n), T0 + n) for n in range(4, 34)]
    assert written.count("reaction") == 1 and written.count(None) == 29
    assert answer(database, reply(20), T0 + 3600) is None  # the same comment, the same answer
    later = T0 + 34 + REPLY_WINDOW.total_seconds()
    assert answer(database, reply(50), later) == "comment"  # the window has moved on


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
