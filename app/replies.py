"""Replies to people, limited per account: a public repository cannot make railyard a spam cannon.

Every reply railyard writes to a person's comment (a refusal, a near-miss hint, `/help`,
`/status`, a pull request that links no ticket, a budget refusal) takes a slot in the
`replies` ledger, in the same transaction that enqueues it. An account gets at most
`REPLIES_PER_WINDOW` replies per repository in `REPLY_WINDOW`; past that its comments get a
reaction only, which still says "seen".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, func, insert, select

from app.outbox import Effect, comment, enqueue, reaction
from app.tables import ReplyRow, table

REPLY_WINDOW = timedelta(minutes=10)
REPLIES_PER_WINDOW = 3
OVER_LIMIT_REACTION = "confused"

replies = table(ReplyRow)


@dataclass(frozen=True)
class Reply:
    """A comment answering one person's comment, written only while the person has replies left."""

    installation_id: int
    repository: str
    number: int  # the issue or pull request to answer on
    comment_id: int  # the comment answered (reacted to when over the limit)
    actor_id: int
    kind: str
    body: str

    @property
    def key(self) -> str:
        """One reply per answered comment and kind."""
        return f"{self.kind}:{self.comment_id}"


def enqueue_reply(connection: Connection, reply: Reply, now: float) -> Effect:
    """Enqueue the reply, or a reaction when the account is over its limit; return which."""
    effect = _comment(reply) if _take_slot(connection, reply, now) else _reaction(reply)
    enqueue(connection, [effect], now)
    return effect


def _take_slot(connection: Connection, reply: Reply, now: float) -> bool:
    at = datetime.fromtimestamp(now, UTC)
    held = connection.execute(select(replies.c.id).where(replies.c.operation_id == reply.key)).first()
    if held is not None:
        return True  # the same comment answered again (a redelivery): the same answer
    recent = connection.execute(
        select(func.count())
        .select_from(replies)
        .where(
            replies.c.repository == reply.repository.casefold(),
            replies.c.actor_id == reply.actor_id,
            replies.c.at >= at - REPLY_WINDOW,
        )
    ).scalar_one()
    if recent >= REPLIES_PER_WINDOW:
        return False
    connection.execute(
        insert(replies).values(
            repository=reply.repository.casefold(),
            actor_id=reply.actor_id,
            kind=reply.kind,
            operation_id=reply.key,
            at=at,
        )
    )
    return True


def _comment(reply: Reply) -> Effect:
    return comment(reply.installation_id, reply.repository, reply.number, reply.body, reply.key)


def _reaction(reply: Reply) -> Effect:
    return reaction(reply.installation_id, reply.repository, reply.comment_id, OVER_LIMIT_REACTION)
