"""What people read about an acceptance: whether it still holds, what it was bound to, and a
description edited since the work began (SPEC *Acceptance that stays true*); and what a
delivery's runner reported its run used (its word, labelled so)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from app.views.markdown import escape_inline
from policies.acceptance import InvalidReason, Validity
from policies.model import Ticket

INVALID_SENTENCES = {
    InvalidReason.EXPIRED.value: "it expired",
    InvalidReason.REVIEWER_LOST_ROLE.value: "the account that accepted it no longer holds that role",
    InvalidReason.NOW_HIGH_RISK.value: "the ticket is now high-risk, where self-verification does not count",
    InvalidReason.SELF_VERIFICATION_DISALLOWED.value: "self-verification is no longer allowed here",
}

CI_WORDS = {
    "passed": "passed",
    "failed": "failed",
    "pending": "still running",
    "awaiting_approval": "awaiting approval to run",
    "none": "no checks known",
}


def _day(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def acceptance_notices(ticket: Ticket, validity: Validity | None) -> list[str]:
    """The notices of an accepted ticket: an acceptance that no longer holds, and what it rests on."""
    review = ticket.review
    if review is None or validity is None:
        return []
    lines: list[str] = []
    if not validity.valid and validity.reason is not None:
        why = INVALID_SENTENCES.get(validity.reason.value, validity.reason.value)
        lines += [
            "",
            f"**Acceptance no longer holds:** {why}. The work rail stays accepted, but the `railyard` "
            "check asks for action; a reviewer entitled to accept can `/accept` again to renew it.",
        ]
    ci = CI_WORDS.get(review.ci, review.ci)
    checks = ", ".join(escape_inline(name, limit=80) for name in review.ci_checks[:10])
    ci_text = f"{ci} ({checks})" if checks else ci
    expiry = f"; expires {_day(validity.expires_at)}" if validity.expires_at else "; never expires"
    same = " or a commit with the same content (tree)" if review.tree else ""
    lines += [
        "",
        f"Acceptance bound to commit {_short(review.commit)}{same}; CI on it when accepted: "
        f"{ci_text}{expiry}.",
    ]
    return lines


def description_notice(ticket: Ticket) -> list[str]:
    """A description edited after the claim or the acceptance, not yet seen by a new one."""
    since = ticket.description_changed
    if since is None:
        return []
    after = "acceptance" if since == "acceptance" else "the claim"
    return ["", f"**The description changed after {after}.** `railyard events` shows who edited it and when."]


def _short(sha: str | None) -> str:
    return f"`{sha[:12]}`" if sha else "(none)"


def invalidated_line(data: Mapping[str, Any], at: datetime) -> str:
    """The attempt's line for `acceptance_invalidated`."""
    why = INVALID_SENTENCES.get(str(data.get("reason")), str(data.get("reason")))
    return f"- **Acceptance no longer holds** since {_day(at)}: {why}."


def reported_text(evidence: Mapping[str, Any] | None) -> str:
    """A delivery's evidence as one sentence, labelled as the runner's report ("" without any)."""
    if not evidence:
        return ""
    parts = []
    if evidence.get("model"):
        parts.append(f"model {escape_inline(str(evidence['model']), limit=100)}")
    tokens_in, tokens_out = evidence.get("input_tokens"), evidence.get("output_tokens")
    if tokens_in is not None or tokens_out is not None:
        parts.append(f"{int(tokens_in or 0):,} tokens in, {int(tokens_out or 0):,} out")
    if evidence.get("cost_usd") is not None:
        parts.append(f"${evidence['cost_usd']}")
    return f"_Reported by the runner:_ {', '.join(parts)}." if parts else ""


def budget_notice(ticket: Ticket) -> list[str]:
    """A ticket whose reported cost passed `limits.cost_per_ticket`."""
    if not ticket.over_budget:
        return []
    return [
        "",
        f"**Over budget.** The deliveries report ${ticket.cost_usd} in all, past `limits.cost_per_ticket`.",
    ]
