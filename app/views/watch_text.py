"""The watchdog's notices on the status comment: a claim overdue (silence or deadline), a review overdue."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from app.views.markdown import escape_inline
from policies.events import Event, EventType
from policies.model import Ticket
from policies.states import WorkState
from policies.watchdog import Clocks


def who(login: str | None) -> str:
    """A login as text that names the person without notifying them."""
    return escape_inline("@" + login, limit=60) if login else "someone"


def when(at: datetime | None) -> str:
    """A time the way the comment shows it (UTC, to the minute)."""
    return at.strftime("%Y-%m-%d %H:%M UTC") if at else "unknown time"


def watch_notices(ticket: Ticket, events: Sequence[Event], clocks: Clocks | None = None) -> list[str]:
    """The lines for the current attempt's `claim_overdue` and the current delivery's `review_overdue`.

    A silence recorded overdue is shown only while no sign of life came after it began (`clocks`:
    the watchdog's stored facts), as the board's attention code judges it: once the claimant
    speaks, a new silence starts and the old one is over."""
    lines: list[str] = []
    overdue = _current_overdue(ticket, events)
    if overdue is not None and _spoken_since(overdue, clocks):
        overdue = None
    if overdue is not None:
        data = overdue.data
        if data.get("reason") == "deadline":
            lines += [
                "",
                f"**Claim overdue.** Attempt {data.get('attempt')} by {who(data.get('claimant'))} passed "
                f"its deadline at {when(_time(data.get('deadline_at')))} "
                f"({data.get('max_attempt_hours')} hours from the claim; recorded {when(overdue.at)}), "
                "whatever signs of life it shows.",
            ]
        else:
            lines += [
                "",
                f"**Claim overdue.** {who(data.get('claimant'))} has given no sign of life on attempt "
                f"{data.get('attempt')} since {when(_time(data.get('silent_since')))} "
                f"(limit: {data.get('limit_minutes')} minutes; recorded {when(overdue.at)}).",
            ]
    waiting = _current_review_overdue(ticket, events)
    if waiting is not None:
        data = waiting.data
        lines += [
            "",
            f"**Review overdue.** The delivery of attempt {data.get('attempt')} by "
            f"{who(data.get('runner'))} has waited for a decision since "
            f"{when(_time(data.get('delivered_at')))} (limit: {data.get('max_wait_hours')} hours; "
            f"recorded {when(waiting.at)}).",
        ]
    return lines


def _current_review_overdue(ticket: Ticket, events: Sequence[Event]) -> Event | None:
    """The latest `review_overdue` of the current delivery, while it still waits for a decision."""
    delivery = ticket.last_delivery
    if ticket.work is not WorkState.DELIVERED or delivery is None:
        return None
    for event in reversed(events):
        if event.type is EventType.REVIEW_OVERDUE and event.data.get("delivery") == delivery.operation_id:
            return event
        if event.type in (EventType.CLAIMED, EventType.SENT_BACK, EventType.DELIVERED, EventType.ACCEPTED):
            return None
    return None


def _spoken_since(overdue: Event, clocks: Clocks | None) -> bool:
    """Whether a silence's `claim_overdue` is over: a sign of life of its attempt came after the
    silence began (a deadline passed stays passed)."""
    watch = clocks.watch if clocks is not None else None
    if overdue.data.get("reason") == "deadline" or watch is None or watch.last_sign_of_life is None:
        return False
    since = _time(overdue.data.get("silent_since"))
    return (
        watch.attempt == overdue.data.get("attempt") and since is not None and watch.last_sign_of_life > since
    )


def _current_overdue(ticket: Ticket, events: Sequence[Event]) -> Event | None:
    """The current attempt's `claim_overdue` for its deadline, else its latest, while it is still claimed
    (a deadline passed stays passed: a later silence does not hide it)."""
    if ticket.work is not WorkState.CLAIMED:
        return None
    latest: Event | None = None
    for event in reversed(events):
        if event.type is EventType.CLAIM_OVERDUE and event.data.get("attempt") == ticket.attempt:
            if event.data.get("reason") == "deadline":
                return event
            latest = latest or event
        if event.type in (EventType.CLAIMED, EventType.SENT_BACK, EventType.DELIVERED):
            break
    return latest


def _time(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None
