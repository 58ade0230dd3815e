"""Signs of life a handler reads from what happened: the watchdog's input (`app.store.signs` keeps them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from handlers.ports import Heard, Rules
from policies.events import Event, EventType
from policies.model import Ticket, TicketKey, same_account
from policies.parser import INFORMATIONAL, ParsedComment
from policies.watchdog import ticket_number_from_branch

# What a command's events say about the attempt they concern.
_COMMAND_SIGNS = {
    EventType.CLAIMED: "claim",
    EventType.SENT_BACK: "send-back",
    EventType.DELIVERED: "delivery",
}


def signs_from_events(
    key: TicketKey, events: Sequence[Event], at: datetime, source: str, rules: Rules
) -> list[Heard]:
    """The attempt openings and deliveries a command recorded, as signs to store, with the
    configuration in force (`rules`) the watchdog judges the attempt by."""
    return [
        _configured(Heard(key, int(e.data["attempt"]), at, _COMMAND_SIGNS[e.type], source), rules)
        for e in events
        if e.type in _COMMAND_SIGNS
    ]


def _configured(heard: Heard, rules: Rules) -> Heard:
    """`heard` carrying the watchdog's limits from the configuration in force."""
    return replace(
        heard,
        max_silence_minutes=rules.max_silence_minutes,
        policy_version=rules.policy_version,
        max_attempt_hours=rules.max_attempt_hours,
        max_review_wait_hours=rules.max_review_wait_hours,
    )


def only_informational(body: str, parsed: ParsedComment) -> bool:
    """Whether a comment is nothing but `/status` or `/help` lines: asking, not working (SPEC
    *Watchdog, budgets and loops*: not a sign of life). Any other line, a command or words, is."""
    if parsed.informational is None or parsed.command is not None or parsed.error is not None:
        return False
    for line in body.splitlines():
        text = line.strip()
        if not text:
            continue
        word = text[1:].split(maxsplit=1)[0].lower() if text.startswith("/") and len(text) > 1 else ""
        if word not in INFORMATIONAL:
            return False
    return True


def claimant_comment(
    ticket: Ticket | None,
    author: str,
    author_id: int,
    at: datetime,
    comment_id: int,
    informational_only: bool = False,
) -> Heard | None:
    """A comment by the ticket's current claimant (the account, not the login) is a sign of life,
    unless it only asks for `/status` or `/help` (`only_informational`)."""
    if ticket is None or ticket.attempt == 0 or ticket.claimant is None or informational_only:
        return None
    if not same_account(author, author_id, ticket.claimant, ticket.claimant_id):
        return None
    return Heard(ticket.key, ticket.attempt, at, "comment", str(comment_id))


def push_signs(
    tickets: Sequence[Ticket], branch: str, rules: Rules, at: datetime, source: str
) -> list[Heard]:
    """A push is a sign of life for each claimed ticket (of `tickets`: those the branch was
    reported for or that `tickets.branch_pattern` names) whose current attempt works on
    `branch`: named at `/claim branch=` or `/deliver`, or matching the pattern."""
    found = []
    for ticket in tickets:
        if ticket.claimant is None or ticket.attempt == 0:
            continue
        by_pattern = ticket_number_from_branch(rules.branch_pattern, branch) == ticket.key.number
        if ticket.attempt_branch == branch or by_pattern:
            found.append(_configured(Heard(ticket.key, ticket.attempt, at, "push", source), rules))
    return found


def push_candidates(on_branch: set[int], branch: str, rules: Rules) -> list[int]:
    """The tickets a push to `branch` may be a sign of life for."""
    by_pattern = ticket_number_from_branch(rules.branch_pattern, branch)
    return sorted(on_branch | ({by_pattern} if by_pattern is not None else set()))
