"""Replies to people, limited per account: a public repository cannot make railyard a spam cannon.

Every reply railyard writes to a person's comment (a refusal, a near-miss hint, `/help`,
`/status`, a pull request that links no ticket, a budget refusal) takes a slot in the
`replies` ledger, in the same transaction that enqueues it. An account gets at most
`REPLIES_PER_WINDOW` replies per repository in `REPLY_WINDOW`; past that its next comment gets
one reaction, which still says "seen", and the rest of the window's comments get nothing: a
reaction is a content write too (GitHub allows 500 an hour per installation), so an account
over its limit costs the installation at most one more write per window.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

from sqlalchemy import Connection, delete, func, insert, select

from app.contracts.effect_types import Effect, EffectKind, LimitedReply, comment, reaction
from app.store.advisory import one_at_a_time
from app.store.database import Database
from app.store.effects import enqueue
from app.store.queue_heads import note_queue_head
from app.store.tables import ReplyRow, table

REPLY_WINDOW = timedelta(minutes=10)
REPLIES_PER_WINDOW = 3
REACTIONS_PER_WINDOW = 1  # over the limit: one reaction, then silence until the window moves on
OVER_LIMIT_REACTION = "confused"
KEPT_FOR = timedelta(days=1)

replies = table(ReplyRow)
Answer = Literal["reply", "reaction", "silence"]


def enqueue_reply(connection: Connection, reply: LimitedReply, now: float) -> Effect | None:
    """Enqueue the reply, a reaction when the account is over its limit, or nothing when it was
    already given its reaction in this window; return what was enqueued.

    The decision is recorded with the reply's key, so the same comment redelivered gets the
    same answer whatever happened since.
    """
    answer = _decide(connection, reply, now)
    effect = _comment(reply) if answer == "reply" else _reaction(reply) if answer == "reaction" else None
    if effect is not None:
        enqueue(connection, [effect], now)
    return effect


def prune_replies(database: Database, now: float) -> int:
    """Forget replies older than a day: only the last `REPLY_WINDOW` counts (kept longer for audit)."""
    cutoff = datetime.fromtimestamp(now, UTC) - KEPT_FOR
    with database.write() as connection:
        return int(connection.execute(delete(replies).where(replies.c.at < cutoff)).rowcount or 0)


def _decide(connection: Connection, reply: LimitedReply, now: float) -> Answer:
    """How the comment is answered ("reply", "reaction" or "silence"), decided once per key."""
    _lock_account(connection, reply)
    held = connection.execute(
        select(replies.c.reacted, replies.c.silent).where(replies.c.operation_id == reply.key)
    ).first()
    if held is not None:
        return "silence" if held.silent else "reaction" if held.reacted else "reply"
    at = datetime.fromtimestamp(now, UTC)
    answered = connection.execute(
        select(replies.c.reacted, func.count())
        .where(
            replies.c.repository == reply.repository.casefold(),
            replies.c.actor_id == reply.actor_id,
            replies.c.at >= at - REPLY_WINDOW,
            replies.c.silent.is_(False),
        )
        .group_by(replies.c.reacted)
    ).all()
    counts = {bool(row[0]): int(row[1]) for row in answered}
    answer: Answer = (
        "reply"
        if counts.get(False, 0) < REPLIES_PER_WINDOW
        else "reaction"
        if counts.get(True, 0) < REACTIONS_PER_WINDOW
        else "silence"
    )
    connection.execute(
        insert(replies).values(
            repository=reply.repository.casefold(),
            actor_id=reply.actor_id,
            kind=reply.kind,
            reacted=answer != "reply",
            silent=answer == "silence",
            operation_id=reply.key,
            at=at,
        )
    )
    return answer


def _lock_account(connection: Connection, reply: LimitedReply) -> None:
    """On PostgreSQL, one transaction at a time counts an account's replies (SQLite has one writer)."""
    one_at_a_time(connection, f"replies:{reply.repository.casefold()}:{reply.actor_id}")


def _comment(reply: LimitedReply) -> Effect:
    return comment(reply.installation_id, reply.repository, reply.number, reply.body, reply.key)


def _reaction(reply: LimitedReply) -> Effect:
    return reaction(reply.installation_id, reply.repository, reply.comment_id, OVER_LIMIT_REACTION)


def enqueue_rendered(connection: Connection, rendered: list[Effect | LimitedReply], now: float) -> None:
    """A unit of work's rendered answers: limited replies within their limit, effects as they are."""
    for item in rendered:
        if isinstance(item, LimitedReply):
            enqueue_reply(connection, item, now)
            continue
        enqueue(connection, [item], now)
        if item.kind is EffectKind.CHECK_RUN and item.payload.get("merge_group"):
            pull, head_sha = int(item.payload["pull_request"]), str(item.payload["head_sha"])
            note_queue_head(connection, item.repository, pull, head_sha)
