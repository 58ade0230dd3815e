"""The status object: `railyard status --json` and the status comment's hidden line, one shape.

The CLI prints `status_object(ticket)`; the status comment carries the same object on one hidden
line, `<!-- railyard:status-json {...} -->`, so an agent that can read the issue can read the
state. Inside that line `<`, `>` and every `-` followed by another `-` are written as JSON
`\\u` escapes: user text (summaries, logins, branch names) can neither close the HTML comment
(`-->`, `--!>`) nor spell a second marker, and the JSON still loads to the same object.

Where railyard's own line sits: the outbox ends every comment it writes with
`<!-- railyard:effect:HASH -->` (HASH from the effect's dedupe key; the status comment's is
`status:OWNER/REPO#N`), and the hidden line is the line just before it: the status line on the
status comment, the answer line on a refusal reply. `own_hidden_line` reads only that line; the
visible part above it never holds `<!--` (app.views.markdown), but a reader must not rely on it.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from app.views.render import STATUS_BUDGET, StatusView, render_status_comment
from policies.acceptance import Validity, recorded_validity
from policies.attention import RecordFacts, attention
from policies.blocking import Block, blocks
from policies.evidence import evidence_to_data
from policies.model import Evidence, Ticket
from policies.rails import RailPolicy
from policies.states import WorkState
from policies.transitions import next_steps
from policies.watchdog import Clocks, current_silence, deadline

MARKER = "<!-- railyard:status-json "
ANSWER_MARKER = "<!-- railyard:answer "
END = " -->"
MIN_VISIBLE = 2_000
"""The visible part keeps at least this much of the comment, however large the object."""

_DOUBLE_DASH = re.compile("-(?=-)")
_MARKER_COLON = re.compile(r"(railyard\s*):", re.IGNORECASE)
r"""`railyard` and a colon in the JSON text: only ever inside a string (a key is quoted), where
the colon is written `\u003a`, so user text never spells a `railyard:` marker there either."""
_EFFECT_AT_END = re.compile(r"\r?\n\r?\n(<!-- railyard:effect:[0-9a-f]{20} -->)\s*\Z")


def status_object(
    ticket: Ticket,
    now: datetime | None = None,
    clocks: Clocks | None = None,
    policy: RailPolicy | None = None,
) -> dict[str, Any]:
    """The `status --json` shape: the three rails, the people, the last delivery, the acceptance
    and whether it holds (at `now`: its expiry; without `now` only what the record says),
    the feedback for the next attempt, `next`, and the watchdog's due times from `clocks`
    (`watch` for a claimed ticket, `review_due_at` for a delivered one; None without them).
    `blocked_by` is judged under `policy` when given (else every check but railyard's counts)."""
    validity = recorded_validity(ticket, now)
    delivery = ticket.last_delivery
    runner = ticket.claimant or (delivery.runner if delivery else None)
    runner_id = ticket.claimant_id if ticket.claimant else (delivery.runner_id if delivery else None)
    return {
        "ticket": str(ticket.key),
        "work": ticket.work.value if ticket.work else None,
        "integration": ticket.rails.integration.value,
        "deployment": ticket.rails.deployment.value,
        "deployments": {env: state.value for env, state in ticket.rails.deployments.items()},
        "revision": ticket.revision,
        "attempt": ticket.attempt,
        "runner": runner,
        "runner_id": runner_id,
        "claimant": ticket.claimant,
        "claimant_id": ticket.claimant_id,
        "owner": ticket.owner,
        "owner_id": ticket.owner_id,
        "no_code": ticket.no_code,
        "review": ticket.review.kind.value if ticket.review else None,
        "reviewer": ticket.review.reviewer if ticket.review else None,
        "reviewer_id": ticket.review.reviewer_id if ticket.review else None,
        "delivery": _delivery(ticket),
        "merge_commit": ticket.rails.merge_commit,
        "evidence": _totals(ticket),
        "acceptance": _acceptance(ticket, validity),
        "feedback": _feedback(ticket),
        "description_changed": ticket.description_changed,
        "blocked_by": [_block(b) for b in blocks(ticket.rails, policy)],
        "reverted": [{"pull_request": a, "reverted_by": b} for a, b in ticket.reverts],
        "next": next_commands(ticket, renewable=validity is not None and not validity.valid),
        "watch": _watch(ticket, clocks),
        "review_due_at": _review_due_at(ticket, clocks),
    }


def _block(block: Block) -> dict[str, Any]:
    """One reason an open linked PR is held back (`policies.blocking`)."""
    return {"pull_request": block.number, "reason": block.reason.value, "checks": list(block.checks)}


def _watch(ticket: Ticket, clocks: Clocks | None) -> dict[str, Any] | None:
    """When a claimed attempt is due: its silence's start and end, its deadline (None without one)."""
    watch = clocks.watch if clocks is not None else None
    if ticket.work is not WorkState.CLAIMED or watch is None or watch.attempt != ticket.attempt:
        return None
    silence = current_silence(watch)
    found = deadline(watch)
    return {
        "silent_since": silence.silent_since.astimezone(UTC).isoformat(),
        "due_at": silence.deadline.astimezone(UTC).isoformat(),
        "deadline_at": found.due_at.astimezone(UTC).isoformat() if found is not None else None,
        "limit_minutes": silence.limit_minutes,
    }


def _review_due_at(ticket: Ticket, clocks: Clocks | None) -> str | None:
    """When a delivered ticket's wait for a decision ends (None when it is not watched)."""
    wait = clocks.review if clocks is not None else None
    delivery = ticket.last_delivery
    if ticket.work is not WorkState.DELIVERED or wait is None or delivery is None:
        return None
    if wait.delivery != delivery.operation_id:
        return None
    return wait.due_at.astimezone(UTC).isoformat()


def _acceptance(ticket: Ticket, validity: Validity | None) -> dict[str, Any] | None:
    review = ticket.review
    if review is None or validity is None:
        return None
    return {
        "valid": validity.valid,
        "reason": validity.reason.value if validity.reason else None,
        "expires_at": validity.expires_at.isoformat() if validity.expires_at else None,
        "ci": {"state": review.ci, "checks": list(review.ci_checks)},
        "tree": review.tree,
        "commit": review.commit,
        "kind": review.kind.value,
        "reviewer": review.reviewer,
        "reviewer_id": review.reviewer_id,
        "role": review.role,
        "decided_at": review.written_at.isoformat(),
        "description_digest": review.description_digest,
        "policy_version": review.policy_version,
        "revision": review.revision,
        "renews": review.renews,
    }


def _feedback(ticket: Ticket) -> dict[str, Any] | None:
    feedback = ticket.feedback
    if feedback is None:
        return None
    return {
        "kind": feedback.kind,
        "text": feedback.text,
        "by": feedback.by,
        "by_id": feedback.by_id,
        "at": feedback.at.isoformat(),
        "attempt": feedback.attempt,
    }


def next_commands(ticket: Ticket, *, renewable: bool = False) -> list[dict[str, Any]]:
    """The commands that can move the ticket now, each with who may run it (the transition table)."""
    steps = next_steps(ticket.work, renewable=renewable)
    return [{"command": label, "roles": list(allowed)} for label, allowed in steps]


def _delivery(ticket: Ticket) -> dict[str, Any] | None:
    delivery = ticket.last_delivery
    if delivery is None:
        return None
    return {
        "attempt": delivery.attempt,
        "runner": delivery.runner,
        "runner_id": delivery.runner_id,
        "summary": delivery.summary,
        "branch": delivery.branch,
        "commit": delivery.commit,
        "pull_request": delivery.pull_request,
        "artifacts": list(delivery.artifacts),
        "operation_id": delivery.operation_id,
        "at": delivery.at.isoformat(),
        "evidence": _evidence(delivery.evidence),
    }


def _evidence(evidence: Evidence | None) -> dict[str, Any] | None:
    """What the runner reported the run used (its word: `reported_by_runner`), cost as a number."""
    data = evidence_to_data(evidence)
    if data is None:
        return None
    cost = data["cost_usd"]
    return {**data, "cost_usd": float(cost) if cost is not None else None, "reported_by_runner": True}


def _totals(ticket: Ticket) -> dict[str, Any]:
    """Every delivery's reported evidence summed: what the ticket cost so far, as reported."""
    return {
        "cost_usd": float(ticket.cost_usd),
        "input_tokens": ticket.input_tokens,
        "output_tokens": ticket.output_tokens,
        "deliveries": ticket.deliveries,
        "over_budget": ticket.over_budget,
        "reported_by_runner": True,
    }


def status_line(status: dict[str, Any]) -> str:
    """The hidden line carrying `status`: one line, safe inside an HTML comment."""
    return hidden_line(MARKER, status)


def hidden_line(marker: str, found: dict[str, Any]) -> str:
    """`marker`, the object as one line of JSON safe inside an HTML comment, and the comment's end."""
    text = json.dumps(found, ensure_ascii=True, separators=(",", ":"))
    # Outside strings JSON has no `<`, `>` or `--`, so escaping the whole text touches only strings.
    text = _DOUBLE_DASH.sub(r"\\u002d", text.replace("<", "\\u003c").replace(">", "\\u003e"))
    text = _MARKER_COLON.sub(r"\1\\u003a", text)
    return f"{marker}{text}{END}"


def answer_line(operation_id: str, code: str, revision: int | None) -> str:
    """The hidden line on a refusal reply: which operation (the comment id) it answers, in machine words."""
    answer = {"operation_id": operation_id, "applied": False, "code": code, "revision": revision}
    return hidden_line(ANSWER_MARKER, answer)


def parse_status_line(body: str) -> dict[str, Any] | None:
    """The object on the first status-json line of a comment body; None if there is none."""
    return parse_hidden_line(body, MARKER)


def parse_hidden_line(body: str, marker: str) -> dict[str, Any] | None:
    """The object on the first `marker` line of a comment body; None if there is none or it is not JSON."""
    start = body.find(marker)
    if start < 0:
        return None
    end = body.find(END, start + len(marker))
    if end < 0:
        return None
    try:
        found = json.loads(body[start + len(marker) : end])
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def own_hidden_line(body: str, marker: str, effect: str | None = None) -> dict[str, Any] | None:
    """The object on the hidden line railyard put last in a comment it wrote; None if none.

    railyard's comments end with the outbox's `<!-- railyard:effect:... -->` marker (`effect`
    when given: the status comment's is its dedupe key's), and the line just before it is the
    status line of a status comment or the answer line of a refusal. Only that line counts: a
    marker anywhere else in the body is not railyard's.
    """
    found = _EFFECT_AT_END.search(body)
    if found is None or (effect is not None and found.group(1) != effect):
        return None
    head = body[: found.start()]
    line = head[head.rfind("\n") + 1 :].rstrip("\r")
    if not (line.startswith(marker) and line.endswith(END)):
        return None
    return parse_hidden_line(line, marker)


def status_comment_body(view: StatusView, limit: int = STATUS_BUDGET) -> str:
    """The status comment: the visible part, cut to leave room, then the hidden status line.

    An object too large for the comment (a delivery summary of tens of thousands of dashes) has
    its delivery summary shortened in the line and `summary_truncated` set; `status --json`
    keeps it whole.
    """
    line = _fitting_line(status_object(view.ticket, view.now, view.clocks, view.policy), limit - MIN_VISIBLE)
    visible = render_status_comment(view, limit=limit - len(line) - 2)
    return f"{visible}\n\n{line}"


def _fitting_line(status: dict[str, Any], room: int) -> str:
    line = status_line(status)
    delivery = status.get("delivery")
    if len(line) <= room or not delivery:
        return line
    summary, shortened = str(delivery["summary"]), dict(delivery)
    keep = len(summary)
    while len(line) > room and keep > 0:
        keep //= 2
        shortened = {**delivery, "summary": summary[:keep], "summary_truncated": True}
        line = status_line({**status, "delivery": shortened})
    if len(line) > room:  # the artifacts alone are too many: keep the count
        shortened = {**shortened, "artifacts": [], "artifacts_truncated": len(delivery["artifacts"])}
        line = status_line({**status, "delivery": shortened})
    return line


def status_with_attention(
    ticket: Ticket, facts: RecordFacts, now: datetime, policy: RailPolicy | None = None
) -> dict[str, Any]:
    """The `tickets --json` item (and the board's card data): `status --json` plus `attention`
    (`blocked_by` judged under `policy` when given)."""
    return {**status_object(ticket, now, policy=policy), "attention": attention(ticket, facts, now)}
