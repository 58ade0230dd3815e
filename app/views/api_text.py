"""The HTTP API's words: which status answers an outcome, and the JSON bodies (SPEC *Agent interface*).

200 applied; 403 a role or relation refused; 404 not a ticket; 409 stale revision, wrong state
or a lost race; 422 a command that cannot run as written; 429 the command budget; 503 GitHub
could not answer (nothing recorded: retry with the same key). Refusals carry
`{"applied": false, "refusal": {"code", "message", "hint"}, "status": {...}}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from app.views.event_log import event_item
from app.views.status_json import status_object
from handlers.ports import Outcome
from policies.model import Ticket
from policies.rails import RailPolicy
from policies.refusals import RefusalCode
from policies.watchdog import Clocks

REFUSAL_STATUS: dict[RefusalCode, int] = {
    RefusalCode.NOT_ALLOWED: 403,
    RefusalCode.NOT_INDEPENDENT: 403,
    RefusalCode.SELF_NOT_ALLOWED: 403,
    RefusalCode.AGENTS_CANNOT_ACCEPT: 403,
    RefusalCode.CI_NOT_PASSED: 409,
    RefusalCode.ATTEMPT_LIMIT: 409,
    RefusalCode.BUDGET_EXHAUSTED: 409,
    RefusalCode.NOT_A_TICKET: 404,
    RefusalCode.ALREADY_A_TICKET: 409,
    RefusalCode.WRONG_STATE: 409,
    RefusalCode.STALE_REVISION: 409,
    RefusalCode.STALE_DECISION: 409,
    RefusalCode.NO_PROGRESS: 409,
    RefusalCode.CONFIG_ERROR: 409,
    RefusalCode.MISSING_TEXT: 422,
    RefusalCode.INVALID_ARGUMENT: 422,
    RefusalCode.MISSING_DESCRIPTION: 422,
    RefusalCode.MISSING_ARTIFACT: 422,
    RefusalCode.BUDGET: 429,
    RefusalCode.CANNOT_VERIFY: 503,
}
"""Every refusal code has its status (a test holds the table complete)."""


def error_body(code: str, message: str, **more: Any) -> dict[str, Any]:
    """`{"error": {"code", "message", ...}}`: a request that never reached the one door."""
    return {"error": {"code": code, "message": message, **more}}


def outcome_answer(
    outcome: Outcome,
    ticket: Ticket | None,
    now: datetime,
    clocks: Clocks | None = None,
    policy: RailPolicy | None = None,
) -> tuple[int, Mapping[str, Any]]:
    """The status and body answering what the one door did, with the ticket as it is `now`
    (`blocked_by` judged under the repository's `policy`)."""
    status = status_object(ticket, now, clocks, policy) if ticket is not None and ticket.exists else None
    if outcome.refusal is None:
        first = outcome.revision - len(outcome.events) + 1
        events = [event_item(first + i, event) for i, event in enumerate(outcome.events)]
        return 200, {"applied": bool(outcome.events), "status": status, "events": events}
    refusal = outcome.refusal
    said: dict[str, Any] = {"code": refusal.code.value, "message": refusal.reason, "hint": refusal.hint}
    if refusal.code is RefusalCode.STALE_REVISION:
        said["current_revision"] = outcome.revision
    return REFUSAL_STATUS.get(refusal.code, 409), {"applied": False, "refusal": said, "status": status}


def earlier_attempt_answer(
    kept: Mapping[str, Any], ticket: Ticket, now: datetime, policy: RailPolicy | None = None
) -> tuple[int, Mapping[str, Any]]:
    """409: the key's command applied to an earlier attempt, not to the ticket as it is now; the
    current status (`blocked_by` under the repository's `policy`), and the earlier answer kept
    under `earlier_answer`."""
    status = kept.get("status")
    then = status.get("attempt") if isinstance(status, Mapping) else None
    current = status_object(ticket, now, policy=policy)
    message = (
        f"this Idempotency-Key's command applied to attempt {then}; the ticket is now at attempt "
        f"{ticket.attempt} ({current['work']}, revision {ticket.revision}), which it did not change"
    )
    hint = "Send the command again with a new Idempotency-Key (a workflow re-run gets one by default)."
    said = {"code": "earlier_attempt", "message": message, "hint": hint}
    return 409, {"applied": False, "refusal": said, "status": current, "earlier_answer": dict(kept)}
