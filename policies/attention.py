"""The attention codes of one ticket: what needs a person, decided from what the record holds.

No I/O: the ticket (its stored snapshot), the few facts the record keeps beside it
(`RecordFacts`, read by `app.store.listing` in the page's one query) and the time of looking.

- `merged_not_accepted`: a linked pull request merged while the work rail is not `accepted`.
- `accepted_not_deployed`: accepted, a code ticket, and the headline environment's deployment
  rail is `not_deployed`, `deploying` or `failed` (an untracked deployment, `not_applicable`,
  says nothing).
- `accepted_commit_not_merged`: accepted at a commit, a linked PR merged, and that commit is
  neither the head of any PR that merged while linked (the head at merge: a merged PR's head
  never moves again) nor a merge commit. Ancestry is not consulted (the record holds none), so
  an accepted commit with unreviewed commits pushed on top of it before the merge is flagged:
  the merge holds work nobody accepted. An acceptance without a commit (artifacts only) is
  never flagged.
- `claim_overdue`: the watchdog recorded `claim_overdue` for the current attempt, the ticket is
  still claimed, and either its reason is `deadline` (past `claims.max_attempt_hours`: nothing
  but a new attempt ends it), or the recorded silence's deadline is past at `now` and no sign of
  life was stored after the silence it recorded began (a comment since then ended that silence).
- `awaiting_review`: delivered, no decision yet.
- `review_overdue`: delivered, and the watchdog recorded `review_overdue` for the current
  delivery (it waited for a decision past `reviews.max_wait_hours`); a decision, a send-back or
  a new delivery ends it.
- `blocked`: the repository rail is `blocked`.
- `acceptance_invalid`: accepted, and the acceptance no longer holds: `acceptance_invalidated`
  is recorded, or it is past its expiry at `now` (SPEC *Acceptance that stays true*).
- `description_changed`: the issue's title or body was edited after the claim or the
  acceptance, and no claim or acceptance since has taken the new description.
- `over_budget`: the deliveries' reported cost passed `limits.cost_per_ticket` (recorded once,
  as `over_budget`, by the delivery that passed it).
- `config_error`: the repository's latest recorded command (stale-revision refusals aside: they
  are answered before the configuration is read) was refused because `.github/railyard.yml`
  could not be used. The record learns of a repaired file only at the next command, so the
  flag stays until someone runs one; a repository whose file broke after its last command is
  not flagged.
- `reverted`: a merged PR reverted a PR that merged the ticket's change (`policies.reverts`):
  the work rail still says what was accepted, the code is no longer there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from policies.acceptance import recorded_validity
from policies.events import EventType
from policies.model import Ticket
from policies.notices import period_of, review_overdue_operation_id
from policies.states import DeploymentState, IntegrationState, WorkState
from policies.watchdog import Silence

MERGED_NOT_ACCEPTED = "merged_not_accepted"
ACCEPTED_NOT_DEPLOYED = "accepted_not_deployed"
ACCEPTED_COMMIT_NOT_MERGED = "accepted_commit_not_merged"
CLAIM_OVERDUE = "claim_overdue"
AWAITING_REVIEW = "awaiting_review"
REVIEW_OVERDUE = "review_overdue"
BLOCKED = "blocked"
CONFIG_ERROR = "config_error"
ACCEPTANCE_INVALID = "acceptance_invalid"
DESCRIPTION_CHANGED = "description_changed"
OVER_BUDGET = "over_budget"
REVERTED = "reverted"

CODES = (
    MERGED_NOT_ACCEPTED,
    ACCEPTED_NOT_DEPLOYED,
    ACCEPTED_COMMIT_NOT_MERGED,
    CLAIM_OVERDUE,
    AWAITING_REVIEW,
    REVIEW_OVERDUE,
    BLOCKED,
    CONFIG_ERROR,
    ACCEPTANCE_INVALID,
    DESCRIPTION_CHANGED,
    OVER_BUDGET,
    REVERTED,
)
"""Every code, in the order `attention` lists them."""

_UNDEPLOYED = frozenset({DeploymentState.NOT_DEPLOYED, DeploymentState.DEPLOYING, DeploymentState.FAILED})


@dataclass(frozen=True)
class OverdueRecord:
    """The ticket's latest recorded `claim_overdue`: for which attempt, which silence, its limit."""

    attempt: int
    silent_since: datetime | None
    limit_minutes: int | None
    at: datetime
    reason: str = "silence"  # `deadline`: past `claims.max_attempt_hours`, which no sign of life undoes


@dataclass(frozen=True)
class RecordFacts:
    """What the record holds beside the ticket's snapshot that attention needs."""

    overdue: OverdueRecord | None = None
    last_sign_of_life: datetime | None = None  # the latest stored for any of the ticket's attempts
    config_refused: bool = False  # the repository's latest command was refused as config_error
    review_overdue: str | None = None  # the operation id of the ticket's latest `review_overdue`


def attention(ticket: Ticket, facts: RecordFacts, now: datetime) -> list[str]:
    """The codes of what needs a person on `ticket` at `now`, in `CODES` order."""
    found = {
        MERGED_NOT_ACCEPTED: merged_not_accepted(ticket),
        ACCEPTED_NOT_DEPLOYED: accepted_not_deployed(ticket),
        ACCEPTED_COMMIT_NOT_MERGED: accepted_commit_not_merged(ticket),
        CLAIM_OVERDUE: claim_overdue(ticket, facts, now),
        AWAITING_REVIEW: ticket.work is WorkState.DELIVERED,
        REVIEW_OVERDUE: review_overdue(ticket, facts),
        BLOCKED: ticket.rails.integration is IntegrationState.BLOCKED,
        CONFIG_ERROR: ticket.exists and facts.config_refused,
        ACCEPTANCE_INVALID: acceptance_invalid(ticket, now),
        DESCRIPTION_CHANGED: ticket.exists and ticket.description_changed is not None,
        OVER_BUDGET: ticket.over_budget,
        REVERTED: ticket.exists and bool(ticket.reverts),
    }
    return [code for code in CODES if found[code]]


def acceptance_invalid(ticket: Ticket, now: datetime) -> bool:
    """Whether the ticket is accepted and its acceptance no longer holds, as the record says at `now`."""
    validity = recorded_validity(ticket, now)
    return validity is not None and not validity.valid


def _merged_prs(ticket: Ticket) -> list[tuple[str | None, str | None]]:
    """(head at merge, merge commit) of every PR that merged while it linked the ticket."""
    return [
        (p.head_sha, p.merge_commit) for p in ticket.rails.pull_requests.values() if p.merged_while_linked
    ]


def merged_not_accepted(ticket: Ticket) -> bool:
    """Whether a linked PR merged while the work is not accepted."""
    merged = bool(_merged_prs(ticket)) or ticket.rails.integration is IntegrationState.MERGED
    return ticket.exists and merged and ticket.work is not WorkState.ACCEPTED


def accepted_not_deployed(ticket: Ticket) -> bool:
    """Whether an accepted code ticket's headline deployment has not succeeded."""
    applicable = ticket.rails.applicable and not ticket.no_code
    return ticket.work is WorkState.ACCEPTED and applicable and ticket.rails.deployment in _UNDEPLOYED


def accepted_commit_not_merged(ticket: Ticket) -> bool:
    """Whether the accepted commit is not what a merged linked PR merged (see the module)."""
    review = ticket.review
    if ticket.work is not WorkState.ACCEPTED or review is None or not review.commit:
        return False
    merged = _merged_prs(ticket)
    if not merged:
        return False
    accepted = review.commit.casefold()
    merged_shas = {sha.casefold() for pair in merged for sha in pair if sha}
    return accepted not in merged_shas


def review_overdue(ticket: Ticket, facts: RecordFacts) -> bool:
    """Whether the watchdog recorded the current delivery's wait for review overdue."""
    delivery = ticket.last_delivery
    if ticket.work is not WorkState.DELIVERED or delivery is None:
        return False
    if period_of(EventType.REVIEW_OVERDUE, {"delivery": delivery.operation_id}) in ticket.noticed:
        return True
    key = ticket.key  # recorded before tickets noted it: by its operation id, under the name now
    return facts.review_overdue == review_overdue_operation_id(
        key.repository, key.number, delivery.operation_id
    )


def claim_overdue(ticket: Ticket, facts: RecordFacts, now: datetime) -> bool:
    """Whether the watchdog's record says the current claim is overdue, and nothing since ended it."""
    record = facts.overdue
    if ticket.work is not WorkState.CLAIMED or ticket.closed or record is None:
        return False
    if record.attempt != ticket.attempt or record.at > now:
        return False
    if record.reason == "deadline":
        return True
    since = record.silent_since
    if (
        since is not None
        and record.limit_minutes is not None
        and now <= Silence(record.attempt, "", since, record.limit_minutes).deadline  # never overflows
    ):
        return False
    sign = facts.last_sign_of_life
    return since is None or sign is None or sign <= since
