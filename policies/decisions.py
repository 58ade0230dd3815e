"""When a decision was made relative to the work it decides on, and how commands are named in
refusals. Pure: shared by the engine's guards."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from policies.clocks import whole_second
from policies.commands import Accept, AcceptMode, Command, Context
from policies.events import Event, EventType
from policies.model import Delivery, Ticket
from policies.refusals import Refusal, RefusalCode
from policies.states import Qualification


def command_label(command: Command) -> str:
    if isinstance(command, Accept) and command.mode is not AcceptMode.REVIEW:
        return f"/accept --{command.mode.value}"
    return f"/{command.name.value}"


def decided_before_delivery(ctx: Context, delivery: Delivery) -> bool:
    """Whether the decision in `ctx` was written before `delivery` was, as far as can be known.

    The two times come from two clocks: a comment's `created_at` is GitHub's, in whole
    seconds, and comment ids rise in the order comments are written; an API request's time is
    railyard's, to the microsecond, and it has no comment id. So:

    - An API decision runs when it arrives, and the delivery it decides on was recorded before
      that: never stale.
    - A comment decision on a comment delivery: (created_at, id) against (created_at, id),
      exact, since ids order comments written in the same second.
    - A comment decision on an API delivery: a comment received before the delivery was
      recorded (both on railyard's clock) was written before it; otherwise its second against
      the delivery's second. In the delivery's own second, a comment received after the
      delivery cannot be placed (GitHub says nothing finer than the second, and the delivery
      has no id to order it by): it is taken as written after, so a review written after a
      delivery is never refused as stale.
    """
    if ctx.comment_id is None or ctx.comment_at is None or delivery.comment_at is None:
        return False
    if delivery.comment_id is not None:
        return (ctx.comment_at, ctx.comment_id) < (delivery.comment_at, delivery.comment_id)
    if ctx.received_at is not None and ctx.received_at < delivery.comment_at:
        return True
    return whole_second(ctx.comment_at) < whole_second(delivery.comment_at)


def stale_decision(ticket: Ticket, command: Command, ctx: Context) -> Refusal | None:
    """A decision written before the current delivery's `/deliver` looked at older work."""
    delivery = ticket.current_delivery
    if delivery is None or not decided_before_delivery(ctx, delivery):
        return None
    return Refusal(
        RefusalCode.STALE_DECISION,
        f"{command_label(command)} was written before attempt {delivery.attempt}'s delivery; "
        "it refers to older work.",
        "Look at the current delivery, then comment again.",
    )


def event_for(
    kind: EventType,
    ctx: Context,
    used: Qualification | None,
    data: Mapping[str, Any],
    role: str | None = None,
) -> Event:
    role = used.value if used is not None else role
    if ctx.via is not None:
        data = by_way_of(data, ctx.via)
    return Event(
        kind, ctx.actor.login, role, ctx.at, ctx.operation_id, ctx.policy_version, data, ctx.actor.id
    )


def by_way_of(data: Mapping[str, Any], via: str) -> dict[str, Any]:
    """The event's data with `via` (how the command came: "api"); a creation's own `via` (draft,
    publish) is kept as `origin`."""
    marked = dict(data)
    if "via" in marked:
        marked["origin"] = marked["via"]
    marked["via"] = via
    return marked


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def missing_text(command: Command, what: str, example: str) -> Refusal:
    return Refusal(
        RefusalCode.MISSING_TEXT,
        f"{command_label(command)} needs {what}.",
        f"Write it after the command, for example: {example}",
    )
