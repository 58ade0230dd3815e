"""The words of the deployment gate's answer: the comment GitHub shows on the deployment review,
and the lines `railyard gate` prints, and the status comment's line of a gated deployment. Only
numbers and fixed words, and the environment's name escaped."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.views.markdown import escape_inline
from policies.checks import INVALID_WORDS
from policies.gate import Blocker, GateDecision, TicketVerdict

SHOWN = 25
"""At most this many tickets (and as many merges) are named; the rest are counted."""


def verdict_words(verdict: TicketVerdict) -> str:
    """Why one ticket holds the deployment back, or that it lets it go."""
    number = f"#{verdict.number}"
    if verdict.blocker is Blocker.NOT_ACCEPTED:
        return f"{number} is not accepted"
    if verdict.blocker is Blocker.UNVERIFIED:
        return f"{number}: railyard cannot verify now that its reviewer still holds the role"
    if verdict.blocker is Blocker.CI_FAILED:
        return f"{number} was accepted while its CI failed"
    if verdict.blocker in (Blocker.EXPIRED, Blocker.INVALID) and verdict.invalid_reason is not None:
        return f"{number}: {INVALID_WORDS[verdict.invalid_reason]}"
    if verdict.blocker is Blocker.INVALID:
        return f"{number}: what merged is not the accepted commit or its content"
    return f"{number} is accepted"


def _named(items: list[str]) -> str:
    shown = items[:SHOWN]
    more = f"; and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return "; ".join(shown) + more


def range_words(decision: GateDecision) -> list[str]:
    """What the range held besides tickets: merges without one, commits no recorded PR merged."""
    return [words for words in (unticketed_words(decision), unmerged_words(decision)) if words is not None]


def unmerged_words(decision: GateDecision) -> str | None:
    """The commits no recorded pull request merged (None: there are none)."""
    if not decision.unmerged:
        return None
    verb = "not allowed" if decision.unmerged_block else "allowed"
    shas = _named([sha[:7] for sha in decision.unmerged])
    return f"commits no recorded pull request merged ({verb} by deployments.unticketed): {shas}"


def unticketed_words(decision: GateDecision) -> str | None:
    """The merges that belong to no ticket, as the decision counts them (None: there are none)."""
    if not decision.unticketed:
        return None
    pulls = _named([f"#{number}" for number in decision.unticketed])
    verb = "not allowed" if decision.unticketed_block else "allowed"
    return f"merged without a ticket ({verb} by deployments.unticketed): pull requests {pulls}"


def gate_comment(decision: GateDecision) -> str:
    """The comment on railyard's answer: each ticket that holds the deployment back and why, or
    the tickets that let it go."""
    if not decision.commit_known:
        return "railyard rejected: GitHub does not know the commit this deployment names."
    if decision.config_unusable:
        return (
            "railyard rejected: this repository's railyard configuration cannot be used (see "
            "`railyard validate` or a ticket's status comment), so what this environment requires "
            "is not known. Run the deployment again once the file is fixed."
        )
    if decision.unjudged:
        return (
            "railyard rejected: GitHub did not give railyard what it needs to judge this deployment "
            "(it kept failing, or refused a read), so nothing was judged. Run the deployment again."
        )
    if decision.merges_unrecorded:
        return (
            "railyard rejected: a pull request of this repository was closed and railyard has not "
            "recorded it yet, so what this deployment brings is not known. Run the deployment again "
            "once railyard has processed it."
        )
    parts: list[str] = []
    if decision.approved:
        accepted = [f"#{v.number}" for v in decision.tickets]
        parts.append(
            f"every ticket this deployment brings is accepted: {_named(accepted)}"
            if accepted
            else "this deployment brings no ticket"
        )
    else:
        blocking = [verdict_words(v) for v in decision.blocking]
        if blocking:
            parts.append(_named(blocking))
    parts += range_words(decision)
    return f"railyard {decision.state.value}: " + ". ".join(parts) + "."


def gate_lines(decision: GateDecision, base: str | None) -> list[str]:
    """What `railyard gate` prints: the answer, the range, then one line per ticket."""
    since = f"since {base[:12]}" if base else "no earlier successful deployment known"
    lines = [gate_comment(decision), f"range: {since}"]
    lines += [f"  {verdict_words(v)}" for v in decision.tickets]
    lines += [f"  {words}" for words in range_words(decision)]
    return lines


BLOCKER_WORDS = {
    Blocker.NOT_ACCEPTED: "not accepted",
    Blocker.EXPIRED: "its acceptance expired",
    Blocker.INVALID: "its acceptance no longer holds",
    Blocker.UNVERIFIED: "its reviewer's role could not be verified",
    Blocker.CI_FAILED: "accepted while its CI failed",
}


def gated_detail(data: Mapping[str, Any]) -> str:
    """The status comment's recent-events detail of `deployment_gated`:
    `: production approved at abc1234` or `: production held back at abc1234 (not accepted)`."""
    environment, sha, state = data.get("environment"), data.get("sha"), data.get("state")
    if not isinstance(environment, str) or not isinstance(sha, str) or state not in ("approved", "rejected"):
        return ""
    where = f"{escape_inline(environment, limit=60)} {'approved' if state == 'approved' else 'held back'}"
    at = f" at `{sha[:7]}`" if re.fullmatch(r"[0-9a-f]{7,40}", sha) else ""
    blocker = data.get("blocker")
    why = f" ({BLOCKER_WORDS[Blocker(blocker)]})" if blocker in {b.value for b in Blocker} else ""
    return f": {where}{at}{why}"
