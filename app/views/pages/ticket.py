"""One ticket's page: its rails, its attempts with their evidence and its whole event log, as
recorded (every user text escaped)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from app.views.pages.document import document, words
from handlers.ports import RecordedEvent
from policies.events import Event, EventType
from policies.model import Ticket

_TEXT_LIMIT = 4000


def _when(event: Event) -> str:
    return event.at.strftime("%Y-%m-%d %H:%M UTC")


def _text(value: object) -> Markup:
    """A person's text (summary, feedback, reason), escaped, kept to a readable length."""
    text = str(value or "")
    cut = text[:_TEXT_LIMIT] + ("…" if len(text) > _TEXT_LIMIT else "")
    return Markup("<blockquote>{}</blockquote>").format(cut) if cut else Markup("")


def evidence(data: Mapping[str, Any]) -> Markup:
    """What a delivery handed over: commit, PR, branch, artifacts."""
    parts = []
    if data.get("commit"):
        parts.append(Markup("commit <code>{}</code>").format(str(data["commit"])[:12]))
    if data.get("pull_request"):
        parts.append(Markup("PR #{}").format(int(data["pull_request"])))
    if data.get("branch"):
        parts.append(Markup("branch <code>{}</code>").format(data["branch"]))
    for url in list(data.get("artifacts") or [])[:20]:
        parts.append(Markup("artifact <code>{}</code>").format(url))  # shown, not linked: any URL
    return Markup(", ").join(parts) if parts else Markup("no artifact recorded")


def _line(event: Event) -> tuple[str, Markup] | None:
    """The attempt field an event names and its line, for the events an attempt shows."""
    data, at, actor = event.data, _when(event), event.actor
    if event.type is EventType.CLAIMED:
        return "attempt", Markup("Claimed {} by {}").format(at, actor)
    if event.type is EventType.DELIVERED:
        return "attempt", Markup("Delivered {} by {}: {}{}").format(
            at, actor, evidence(data), _text(data.get("summary"))
        )
    if event.type is EventType.SENT_BACK:
        return "previous_attempt", Markup("<strong>Sent back</strong> {} by {}{}").format(
            at, actor, _text(data.get("feedback"))
        )
    if event.type is EventType.ACCEPTED:
        return "attempt", Markup("<strong>Accepted</strong> {} by {} ({}){}").format(
            at, actor, words(str(data.get("review", ""))), _text(data.get("reason"))
        )
    return None


def attempts(events: Sequence[Event]) -> dict[int, list[Markup]]:
    """Each attempt's lines, from claim and send-back to delivery, review and reopening."""
    lines: dict[int, list[Markup]] = {}
    for event in events:
        if event.type is EventType.REOPENED:
            if lines:  # a reopening belongs to the latest attempt, if there is one
                lines[max(lines)].append(
                    Markup("<strong>Reopened</strong> {} by {}{}").format(
                        _when(event), event.actor, _text(event.data.get("reason"))
                    )
                )
            continue
        found = _line(event)
        if found is not None:
            field, line = found
            lines.setdefault(int(event.data[field]), []).append(line)
    return lines


def rails_table(ticket: Ticket) -> Markup:
    """The three rails, and each environment's deployment state."""
    rows = [
        ("Work", words(ticket.work.value) if ticket.work else "not a ticket"),
        ("Repository", words(ticket.rails.integration.value)),
    ]
    rows += [(f"Deployment: {env}", words(state.value)) for env, state in ticket.rails.deployments.items()]
    if not ticket.rails.deployments:
        rows.append(("Deployment", words(ticket.rails.deployment.value)))
    body = Markup("").join(
        Markup('<tr><th scope="row">{}</th><td>{}</td></tr>').format(n, v) for n, v in rows
    )
    return Markup(
        '<table><caption>Rails</caption><thead><tr><th scope="col">Rail</th><th scope="col">State</th>'
        "</tr></thead><tbody>{}</tbody></table>"
    ).format(body)


def event_log(history: Sequence[RecordedEvent]) -> Markup:
    """Every recorded event, oldest first."""
    rows = Markup("").join(
        Markup("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>").format(
            r.revision, _when(r.event), words(r.event.type.value), r.event.actor, r.event.role or ""
        )
        for r in history
    )
    return Markup(
        '<div class="table-wrap"><table><caption>Event log</caption><thead><tr><th scope="col">Rev</th>'
        '<th scope="col">When</th><th scope="col">Event</th><th scope="col">Who</th>'
        '<th scope="col">As</th></tr>'
        "</thead><tbody>{}</tbody></table></div>"
    ).format(rows)


def _sections(ticket: Ticket, history: Sequence[RecordedEvent]) -> Markup:
    by_attempt = attempts([r.event for r in history])
    return Markup("").join(
        Markup("<section><h3>Attempt {}{}</h3><ul>{}</ul></section>").format(
            n,
            " (current)" if n == ticket.attempt else "",
            Markup("").join(Markup("<li>{}</li>").format(line) for line in lines),
        )
        for n, lines in sorted(by_attempt.items())
    )


def ticket_page(
    full_name: str, ticket: Ticket, history: Sequence[RecordedEvent], **who: str | None
) -> Markup:
    """The page of `ticket` of `full_name` (as GitHub spells it): holders, rails, attempts, event log."""
    number = ticket.key.number
    people = Markup('<p class="muted">owner {} · claimant {}</p>').format(
        ticket.owner or "none", ticket.claimant or "none"
    )
    body = Markup(
        '<h1>{} #{}</h1><p><a href="/tickets/{}">Board</a></p>{}{}<h2>Attempts</h2>{}<h2>Events</h2>{}'
    ).format(
        full_name,
        number,
        full_name,
        people,
        rails_table(ticket),
        _sections(ticket, history) or Markup("<p>No attempt yet.</p>"),
        event_log(history),
    )
    return document(f"{full_name} #{number}", body, **who)
