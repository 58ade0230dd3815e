"""The repository rail's words beyond its state: why it is blocked (SPEC *CI waiting to run*:
CI that GitHub holds for approval reads "CI awaiting approval to run", never as a failing
check), and a merge a later PR reverted ("merged in #34, reverted by #40")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.views.markdown import escape_inline
from policies.blocking import Block, BlockReason, blocks
from policies.model import Ticket
from policies.rails import RailPolicy

BLOCK_WORDS = {
    BlockReason.CHECK_FAILED: "failed",
    BlockReason.CI_AWAITING_APPROVAL: "CI awaiting approval to run",
    BlockReason.CONFLICT: "conflicts with its base branch",
}


def _block_text(block: Block) -> str:
    """`#34: ci, lint failed`, `#34: CI awaiting approval to run`, `#34: conflicts with ...`."""
    if block.reason is BlockReason.CHECK_FAILED:
        names = ", ".join(escape_inline(name, limit=80) for name in block.checks[:5])
        more = f" and {len(block.checks) - 5} more" if len(block.checks) > 5 else ""
        return f"#{block.number}: {names}{more} {BLOCK_WORDS[block.reason]}"
    return f"#{block.number}: {BLOCK_WORDS[block.reason]}"


def blocked_words(ticket: Ticket, policy: RailPolicy | None = None) -> str:
    """`blocked (#34: CI awaiting approval to run)`: the rail and what holds each PR back, under
    the repository's `policy` (a check `checks.required` leaves out is never named)."""
    found = blocks(ticket.rails, policy)
    if not found:
        numbers = sorted(p.number for p in ticket.rails.pull_requests.values() if p.linked and p.open)
        return "blocked" + (f" ({', '.join(f'#{n}' for n in numbers)})" if numbers else "")
    return f"blocked ({'; '.join(_block_text(block) for block in found)})"


def merged_words(ticket: Ticket) -> str:
    """`merged (#34)`, or `merged in #34, reverted by #40` once a merged PR reverted it."""
    merged = sorted(p.number for p in ticket.rails.pull_requests.values() if p.merged_while_linked)
    if not ticket.reverts:
        return "merged" + (f" ({', '.join(f'#{n}' for n in merged)})" if merged else "")
    by: dict[int, list[int]] = {}
    for reverted, reverting in ticket.reverts:
        by.setdefault(reverted, []).append(reverting)
    parts = []
    for number in merged:
        undone = ", ".join(f"#{n}" for n in by.get(number, []))
        parts.append(f"merged in #{number}" + (f", reverted by {undone}" if undone else ""))
    return "; ".join(parts)


def revert_notice(ticket: Ticket) -> list[str]:
    """The notice of a reverted merge: the rails stand, a person decides what happens next."""
    if not ticket.reverts:
        return []
    pairs = ", ".join(f"#{by} reverted #{reverted}" for reverted, by in ticket.reverts)
    return [
        "",
        f"**Reverted.** {pairs}. The work rail is unchanged and the repository rail stays merged; "
        "`/reopen` sends the work back if it must be done again.",
    ]


def revert_detail(data: Mapping[str, Any]) -> str:
    """The recent-events detail of `reverted`: `: #34 by #40`."""
    reverted, by = data.get("pull_request"), data.get("reverted_by")
    return f": #{reverted} by #{by}" if isinstance(reverted, int) and isinstance(by, int) else ""
