"""What people see: the status comment and the check-run's text, as pure functions of state.

Nothing here performs I/O or reads a clock: `render_status_comment(view)` is a function of the
ticket, its event log and the few facts the view carries, so the outbox can render it again
from the latest state whenever it writes (a burst of changes becomes one write).

User text (summaries, feedback, reasons, branch names, artifact URLs, logins) always goes
through `app.views.markdown`, so it cannot open HTML, mention anyone, forge the marker, or break a
fence or a table. Logins are shown without a live mention: an edited status comment must not
notify people again and again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.views.acceptance_text import (
    acceptance_notices,
    budget_notice,
    description_notice,
    invalidated_line,
    reported_text,
)
from app.views.gate_text import gated_detail
from app.views.markdown import escape_block, escape_inline
from app.views.project_text import project_notices
from app.views.repository_text import blocked_words, merged_words, revert_detail, revert_notice
from app.views.watch_text import watch_notices, when, who
from policies.acceptance import recorded_validity
from policies.checks import Verdict
from policies.events import Event, EventType
from policies.model import Ticket
from policies.projects import Problem
from policies.rails import RailPolicy
from policies.states import DeploymentState, IntegrationState, ReviewKind, WorkState
from policies.transitions import next_steps
from policies.watchdog import Clocks

COMMENT_LIMIT = 65_536
"""GitHub's limit on a comment body, in characters."""
SUMMARY_LIMIT = 65_535
"""GitHub's limit on a check-run's `output.summary`."""
STATUS_BUDGET = COMMENT_LIMIT - 200
"""What the rendered body may use: the outbox appends the hidden marker after it."""
TEXT_LIMIT = 4_000
"""At most this much of one summary, feedback or reason is quoted."""
RECENT_EVENTS = 10
CHECK_LINES, CHECK_BODIES = 100, 20
"""A check's summary lists at most this many linked tickets, and quotes this many status comments."""

_SHA = re.compile(r"[0-9a-f]{7,64}")


@dataclass(frozen=True)
class StatusView:
    """Everything the status comment shows: the ticket, its log (oldest first), and facts
    that live outside the log (the configuration error, whether the issue is closed)."""

    ticket: Ticket
    events: Sequence[Event] = ()
    config_error: str | None = None
    issue_closed: bool = False
    now: datetime | None = None  # when it is rendered: an acceptance's expiry is judged at it
    clocks: Clocks | None = None  # the watchdog's stored facts: the status object's due times
    # What each configured project (`acme/5`) lacks to show the rails, as its last sync found.
    project_problems: tuple[tuple[str, tuple[Problem, ...]], ...] = ()
    # The configuration the rails are decided under: what blocks is named as the rail judged it.
    policy: RailPolicy | None = None


# -- the headline ------------------------------------------------------------------------


def _words(value: str) -> str:
    return value.replace("_", " ")


def _pulls(ticket: Ticket, *, merged: bool) -> str:
    facts = ticket.rails.pull_requests.values()
    if merged:
        numbers = sorted(p.number for p in facts if p.merged_while_linked)
    else:
        numbers = sorted(p.number for p in facts if p.linked and p.open)
    return f" ({', '.join(f'#{n}' for n in numbers)})" if numbers else ""


def repository_words(ticket: Ticket, policy: RailPolicy | None = None) -> str:
    """The repository rail in plain words, e.g. `PR open (#34)`; a block under `policy`."""
    state = ticket.rails.integration
    if state is IntegrationState.PULL_REQUEST_OPEN:
        return "PR open" + _pulls(ticket, merged=False)
    if state is IntegrationState.BLOCKED:
        return blocked_words(ticket, policy)
    if state is IntegrationState.MERGED:
        return merged_words(ticket)
    if state is IntegrationState.BRANCH_REPORTED:
        found = [name for name, fact in ticket.rails.branches.items() if fact.sha]
        return "branch reported" + (f" ({escape_inline(found[-1], limit=100)})" if found else "")
    if state is IntegrationState.UNREPORTED:
        return "nothing reported yet"
    return "not applicable"


def headline(ticket: Ticket, policy: RailPolicy | None = None) -> str:
    """The three rails in plain words: `Work: accepted · Repository: PR open (#34) · Deployment: ...`
    (what blocks named under the repository's `policy`, when given)."""
    work = ticket.work.value if ticket.work else "not a ticket"
    deployment = _words(ticket.rails.deployment.value)
    return f"Work: {work} · Repository: {repository_words(ticket, policy)} · Deployment: {deployment}"


# -- small pieces ----------------------------------------------------------------------


def commit(sha: object) -> str:
    """A commit as a short code span; anything that is not a sha is shown escaped."""
    if isinstance(sha, str) and _SHA.fullmatch(sha):
        return f"`{sha[:7]}`"
    return escape_inline(str(sha), limit=80) if sha else "no commit"


def quoted(text: object, limit: int = TEXT_LIMIT) -> list[str]:
    """User text as a quoted block on its own lines (nothing when empty)."""
    block = escape_block(str(text or ""), limit=limit)
    return ["", block, ""] if block else []


# -- sections ----------------------------------------------------------------------------

_REVIEW_WORDS = {
    ReviewKind.INDEPENDENT.value: "independent review",
    ReviewKind.SELF_VERIFIED.value: "self-verified by the runner, not an independent review",
    ReviewKind.OVERRIDE.value: "override by a maintainer, not a review",
}


def _remains(view: StatusView) -> list[str]:
    """What remains, and which role (or relation) can do it."""
    ticket = view.ticket
    lines = ["### What remains", ""]
    state = ticket.work
    if state is WorkState.DRAFT:
        lines.append("The ticket is a draft: it needs a description and `/publish`.")
    elif state is WorkState.OPEN:
        lines.append("Waiting for a runner to `/claim` it.")
    elif state is WorkState.CLAIMED:
        again = " again after the send-back" if ticket.sent_back else ""
        lines.append(f"Waiting for {who(ticket.claimant)} to `/deliver`{again} (attempt {ticket.attempt}).")
    elif state is WorkState.DELIVERED:
        runner = ticket.last_delivery.runner if ticket.last_delivery else None
        lines.append(f"Waiting for a reviewer other than {who(runner)} to `/accept` or `/send-back`.")
    elif state is WorkState.ACCEPTED:
        lines.append("The work is accepted." + _rails_remaining(ticket))
    steps = next_steps(state)
    if steps:
        lines.append("")
        lines += [f"- `{label}`: {' or '.join(_words(q) for q in allowed)}" for label, allowed in steps]
    return lines


def _rails_remaining(ticket: Ticket) -> str:
    if not ticket.rails.applicable:
        return " It needs no code, so there is nothing to merge or deploy."
    parts = []
    if ticket.rails.integration is not IntegrationState.MERGED:
        parts.append(" The change is not merged yet.")
    first = next(iter(ticket.rails.deployments), None)
    if first is not None and ticket.rails.deployment is not DeploymentState.DEPLOYED:
        parts.append(f" It has not reached {escape_inline(first, limit=60)} yet.")
    return "".join(parts)


def _environments(ticket: Ticket) -> list[str]:
    deployments = ticket.rails.deployments
    if len(deployments) < 2 or not ticket.rails.applicable:
        return []
    states = " · ".join(
        f"{escape_inline(env, limit=60)}: {_words(s.value)}" for env, s in deployments.items()
    )
    return ["", f"Deployments by environment: {states}"]


def _pull_requests(ticket: Ticket) -> list[str]:
    """Every PR that links (or linked) the ticket, with its state and head."""
    shown = []
    for pr in sorted(ticket.rails.pull_requests.values(), key=lambda p: p.number):
        if pr.merged_while_linked:
            state = "merged"
        elif pr.mention and pr.open:
            state = "mentions this ticket (a fork's PR by an account without a role: linked only if merged)"
        elif pr.mention:
            state = "mentioned this ticket, closed without merging"
        elif not pr.linked:
            state = "no longer linked"
        else:
            state = f"open at {commit(pr.head_sha)}" if pr.open else "closed"
        shown.append(f"#{pr.number} {state}")
    return ["", f"Pull requests: {'; '.join(shown)}."] if shown else []


def _notices(view: StatusView) -> list[str]:
    lines: list[str] = []
    if view.config_error:
        lines += [
            "",
            "**Configuration error.** `.github/railyard.yml` cannot be used: "
            f"{escape_inline(view.config_error.rstrip('. '), limit=TEXT_LIMIT)}. "
            "Commands are refused until it is fixed.",
        ]
    if view.issue_closed or view.ticket.closed:
        lines += [
            "",
            "**Issue closed.** The work rail is unchanged; the claim watchdog no longer watches it.",
        ]
    lines += description_notice(view.ticket) + budget_notice(view.ticket) + revert_notice(view.ticket)
    lines += acceptance_notices(view.ticket, recorded_validity(view.ticket, view.now))
    lines += watch_notices(view.ticket, view.events, view.clocks)
    lines += project_notices(view.project_problems)
    return lines


# -- attempts ----------------------------------------------------------------------------


@dataclass
class _Attempt:
    number: int
    runner: str | None
    lines: list[str]


class _Attempts:
    """Each attempt with what happened in it, built from the log."""

    def __init__(self) -> None:
        self.by_number: dict[int, _Attempt] = {}

    def get(self, number: Any, runner: str | None) -> _Attempt:
        item = self.by_number.setdefault(int(number), _Attempt(int(number), runner, []))
        if item.runner is None:
            item.runner = runner
        return item

    def add(self, event: Event) -> None:
        handler = _ATTEMPT_EVENTS.get(event.type)
        if handler is not None:
            handler(self, event, event.data)

    def oldest_first(self) -> list[_Attempt]:
        return [self.by_number[number] for number in sorted(self.by_number)]


def _on_claimed(attempts: _Attempts, event: Event, data: Mapping[str, Any]) -> None:
    check_in = data.get("check_in_minutes")
    limit = f"; check-in every {check_in} minutes" if check_in else ""
    branch = f" on branch {escape_inline(str(data['branch']), limit=200)}" if data.get("branch") else ""
    line = f"- Claimed {when(event.at)} by {who(event.actor)}{branch}{limit}."
    attempts.get(data["attempt"], event.actor).lines.append(line)


def _on_sent_back(attempts: _Attempts, event: Event, data: Mapping[str, Any]) -> None:
    previous = attempts.get(data["previous_attempt"], data.get("runner"))
    previous.lines.append(f"- **Sent back** {when(event.at)} by {who(event.actor)}:")
    previous.lines += quoted(data.get("feedback"))
    opened = f"- Opened {when(event.at)} by the send-back of attempt {data['previous_attempt']}."
    attempts.get(data["attempt"], data.get("runner")).lines.append(opened)


def _on_delivered(attempts: _Attempts, event: Event, data: Mapping[str, Any]) -> None:
    delivered = attempts.get(data["attempt"], event.actor)
    delivered.lines.append(f"- Delivered {when(event.at)} by {who(event.actor)}: {_evidence(data)}.")
    reported = reported_text(data.get("evidence"))
    if reported:
        delivered.lines.append(f"  {reported}")
    delivered.lines += quoted(data.get("summary"))


def _on_accepted(attempts: _Attempts, event: Event, data: Mapping[str, Any]) -> None:
    accepted = attempts.get(data["attempt"], None)
    words = _REVIEW_WORDS.get(str(data.get("review")), str(data.get("review")))
    end = ":" if data.get("reason") else "."
    at = commit(data.get("commit"))
    renews = " (renewed)" if data.get("renews") else ""
    line = f"- **Accepted**{renews} {when(event.at)} by {who(event.actor)} ({words}) at {at}{end}"
    accepted.lines.append(line)
    accepted.lines += quoted(data.get("reason"))


def _on_invalidated(attempts: _Attempts, event: Event, data: Mapping[str, Any]) -> None:
    if attempts.by_number:
        attempts.by_number[max(attempts.by_number)].lines.append(invalidated_line(data, event.at))


def _on_reopened(attempts: _Attempts, event: Event, data: Mapping[str, Any]) -> None:
    if not attempts.by_number:
        return
    latest = attempts.by_number[max(attempts.by_number)]
    released = " (released by the claimant)" if data.get("released_by_claimant") else ""
    latest.lines.append(f"- **Reopened** {when(event.at)} by {who(event.actor)}{released}:")
    latest.lines += quoted(data.get("reason"))


_ATTEMPT_EVENTS = {
    EventType.CLAIMED: _on_claimed,
    EventType.SENT_BACK: _on_sent_back,
    EventType.DELIVERED: _on_delivered,
    EventType.ACCEPTED: _on_accepted,
    EventType.REOPENED: _on_reopened,
    EventType.ACCEPTANCE_INVALIDATED: _on_invalidated,
}


def _attempts(events: Sequence[Event]) -> list[_Attempt]:
    """Each attempt with what happened in it, oldest first."""
    attempts = _Attempts()
    for event in events:
        attempts.add(event)
    return attempts.oldest_first()


def _evidence(data: Mapping[str, Any]) -> str:
    """What a delivery handed over: commit, PR, branch, artifacts."""
    parts = []
    if data.get("commit"):
        parts.append(f"commit {commit(data['commit'])}")
    if data.get("pull_request"):
        parts.append(f"PR #{int(data['pull_request'])}")
    if data.get("branch"):
        parts.append(f"branch {escape_inline(str(data['branch']), limit=200)}")
    artifacts = list(data.get("artifacts") or [])
    if artifacts:
        shown = ", ".join(escape_inline(str(url), limit=300) for url in artifacts[:10])
        extra = f" and {len(artifacts) - 10} more" if len(artifacts) > 10 else ""
        parts.append(f"artifacts {shown}{extra}")
    return ", ".join(parts) or "no artifact recorded"


def _attempt_block(item: _Attempt, current: bool) -> str:
    mark = " (current)" if current else ""
    runner = f" · {who(item.runner)}" if item.runner else ""
    return "\n".join([f"#### Attempt {item.number}{mark}{runner}", "", *item.lines]).rstrip()


# -- recent events ---------------------------------------------------------------------

# Observations are the evidence behind the rails; the log's changes are what people follow.
_EVIDENCE = frozenset({EventType.REPOSITORY_OBSERVED, EventType.DEPLOYMENT_OBSERVED})


def _event_line(event: Event) -> str:
    role = f" ({_words(event.role)})" if event.role and event.role != "github" else ""
    data = event.data
    detail = ""
    if event.type in (EventType.MERGE_STATE_CHANGED, EventType.DEPLOYMENT_STATE_CHANGED):
        where = f" in {escape_inline(str(data['environment']), limit=60)}" if data.get("environment") else ""
        detail = f": {_words(str(data.get('from')))} → {_words(str(data.get('to')))}{where}"
    if event.type is EventType.REVERTED:
        detail = revert_detail(data)
    if event.type is EventType.DEPLOYMENT_GATED:
        detail = gated_detail(data)
    return f"- {when(event.at)} · {_words(event.type.value)}{detail} · {who(event.actor)}{role}"


# -- the whole comment -----------------------------------------------------------------


def render_status_comment(view: StatusView, limit: int = STATUS_BUDGET) -> str:
    """The status comment's body: headline, notices, what remains, attempts, recent events.

    Always at most `limit` characters: the oldest attempts give way first (with a note saying
    how many are not shown), then the recent events.
    """
    ticket = view.ticket
    head = [
        f"**{headline(ticket, view.policy)}**",
        *_environments(ticket),
        *_pull_requests(ticket),
        *_notices(view),
        "",
        *_remains(view),
    ]
    top = "\n".join(head)
    attempts = _attempts(view.events)
    blocks = [_attempt_block(item, item.number == ticket.attempt) for item in reversed(attempts)]
    changes = [event for event in view.events if event.type not in _EVIDENCE]
    recent = [_event_line(event) for event in changes[-RECENT_EVENTS:]]
    events_text = "\n".join(["### Recent events", "", *recent]) if recent else ""
    for events_part in (events_text, ""):
        body = _fit(top, blocks, events_part, ticket, limit)
        if body is not None:
            return body
    return top[: max(limit - 1, 0)] + "…"


def _fit(top: str, blocks: list[str], events_text: str, ticket: Ticket, limit: int) -> str | None:
    """Top, as many attempts (newest first) as fit, a note on the rest, the events; or None."""
    tail = f"\n\n{events_text}" if events_text else ""
    used = len(top) + len(tail) + len("\n\n### Attempts\n\n") + 200  # room for the note
    kept: list[str] = []
    for block in blocks:
        if used + len(block) + 2 > limit:
            break
        kept.append(block)
        used += len(block) + 2
    if used > limit:
        return None
    omitted = len(blocks) - len(kept)
    note = (
        f"\n\n_{omitted} older attempt{'s' if omitted > 1 else ''} not shown: "
        f"`railyard events {ticket.key}` prints the whole history._"
        if omitted
        else ""
    )
    attempts = "\n\n### Attempts\n\n" + "\n\n".join(kept) + note if blocks else ""
    return top + attempts + tail


# -- the check-run ---------------------------------------------------------------------


def render_check_summary(
    verdict: Verdict, bodies: Sequence[tuple[str, str | None]], *, config_problems: Sequence[str] = ()
) -> str:
    """The check-run's summary: the verdict's lines, the problems of the `.github/railyard.yml`
    the PR proposes (if any), then each linked ticket's status comment (title, link to it if
    known) under GitHub's 65,535-character limit."""
    lines = [f"**{escape_inline(verdict.title, limit=200)}**", ""]
    lines += [f"- {escape_inline(line, limit=200)}" for line in verdict.lines[:CHECK_LINES]]
    if len(verdict.lines) > CHECK_LINES:
        lines.append(f"- and {len(verdict.lines) - CHECK_LINES} more linked tickets")
    lines += _proposed_config(config_problems)
    text = "\n".join(lines)
    shown = bodies[:CHECK_BODIES]
    if not shown:
        return text
    # Each status comment gets an equal share of what the lines leave (at most ~21 k of 65,535).
    share = (SUMMARY_LIMIT - len(text) - 200) // len(shown)
    parts = [text]
    for link, body in shown:
        where = f"[Status comment]({link})" if link else "Status comment not written yet."
        parts.append(f"---\n\n{where}\n\n" + _shorten(body or "", max(share - len(where) - 10, 0)))
    return "\n\n".join(parts)


def _proposed_config(problems: Sequence[str]) -> list[str]:
    """The section naming what is wrong with the configuration file this PR would merge."""
    if not problems:
        return []
    return [
        "",
        "### `.github/railyard.yml` in this PR cannot be used",
        "",
        "Merged as it is, railyard would refuse every command until it is fixed "
        "(`railyard validate` prints the same):",
        "",
        *(f"- {escape_inline(problem, limit=300)}" for problem in problems[:CHECK_LINES]),
    ]


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 40, 0)]
    return cut[: cut.rfind("\n")] + "\n\n_(shortened; see the status comment)_" if "\n" in cut else ""
