"""`/tickets/{owner}/{repo}/{number}`: one ticket's rails, its attempts with their evidence and
its whole event log, as recorded (every user text escaped)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web
from markupsafe import Markup

from app.store.tickets import TicketService
from app.web.board_page import words
from app.web.pages import document, html_response, not_found
from handlers.ports import RecordedEvent
from policies.events import Event, EventType
from policies.model import Ticket, TicketKey

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


def attempts(events: Sequence[Event]) -> dict[int, list[Markup]]:
    """Each attempt's lines, from claim and send-back to delivery, review and reopening."""
    lines: dict[int, list[Markup]] = {}
    for event in events:
        data, at = event.data, _when(event)
        if event.type is EventType.CLAIMED:
            lines.setdefault(int(data["attempt"]), []).append(
                Markup("Claimed {} by {}").format(at, event.actor)
            )
        elif event.type is EventType.DELIVERED:
            lines.setdefault(int(data["attempt"]), []).append(
                Markup("Delivered {} by {}: {}{}").format(
                    at, event.actor, evidence(data), _text(data.get("summary"))
                )
            )
        elif event.type is EventType.SENT_BACK:
            lines.setdefault(int(data["previous_attempt"]), []).append(
                Markup("<strong>Sent back</strong> {} by {}{}").format(
                    at, event.actor, _text(data.get("feedback"))
                )
            )
        elif event.type is EventType.ACCEPTED:
            lines.setdefault(int(data["attempt"]), []).append(
                Markup("<strong>Accepted</strong> {} by {} ({}){}").format(
                    at, event.actor, words(str(data.get("review", ""))), _text(data.get("reason"))
                )
            )
        elif event.type is EventType.REOPENED and lines:
            lines[max(lines)].append(
                Markup("<strong>Reopened</strong> {} by {}{}").format(
                    at, event.actor, _text(data.get("reason"))
                )
            )
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


async def ticket_page(
    request: web.Request, service: TicketService, full_name: str, who: dict[str, str]
) -> web.Response:
    """The ticket page, or the same 404 as for anything missing."""
    key = TicketKey(full_name, int(request.match_info["number"]))
    ticket = await asyncio.to_thread(service.load, key)
    if ticket is None or ticket.work is None:
        return not_found(**who)
    history = await asyncio.to_thread(service.history, key)
    by_attempt = attempts([r.event for r in history])
    sections = Markup("").join(
        Markup("<section><h3>Attempt {}{}</h3><ul>{}</ul></section>").format(
            n,
            " (current)" if n == ticket.attempt else "",
            Markup("").join(Markup("<li>{}</li>").format(line) for line in lines),
        )
        for n, lines in sorted(by_attempt.items())
    )
    people = Markup('<p class="muted">owner {} · claimant {}</p>').format(
        ticket.owner or "none", ticket.claimant or "none"
    )
    body = Markup(
        '<h1>{} #{}</h1><p><a href="/tickets/{}">Board</a></p>{}{}<h2>Attempts</h2>{}<h2>Events</h2>{}'
    ).format(
        full_name,
        key.number,
        full_name,
        people,
        rails_table(ticket),
        sections or Markup("<p>No attempt yet.</p>"),
        event_log(history),
    )
    return html_response(document(f"{full_name} #{key.number}", body, **who))
