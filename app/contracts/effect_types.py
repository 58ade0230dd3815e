"""The intended GitHub writes (effects), as values: what the handlers' answers become, what the
store records in the change's transaction, what the outbox performs later.

`EffectKind` names every kind the outbox knows; the two surfaces (`STATUS_COMMENT`,
`CHECK_RUN`) and the project fields (`PROJECT_FIELDS`) are rendered from the latest state when
performed, the others carry their body.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from policies.model import Ticket


class EffectKind(StrEnum):
    """What an effect writes on GitHub (stored as its value in `outbox_effects.kind`)."""

    REACTION = "reaction"
    COMMENT = "comment"
    ASSIGN = "assign"
    UNASSIGN = "unassign"
    STATUS_COMMENT = "status_comment"
    CHECK_RUN = "check_run"
    PROJECT_FIELDS = "project_fields"
    DEPLOYMENT_REVIEW = "deployment_review"


SURFACES = (EffectKind.STATUS_COMMENT, EffectKind.CHECK_RUN)
"""The kinds rendered from the latest state when the outbox writes them (coalescing)."""

RENDER_NOTES = "railyard_notes"
"""The key under which a renderer returns, beside what it writes, notes about what it judged
(`{"unverified": True}`: a check that could not verify a reviewer's role). The outbox keeps them
in the effect's result, never sends them, and leaves them out of the write's digest."""


@dataclass(frozen=True)
class Effect:
    """One intended write. `payload` holds what the kind needs (number, body, content...)."""

    kind: EffectKind
    installation_id: int
    repository: str
    dedupe_key: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    coalesce: bool = False


@dataclass(frozen=True)
class LimitedReply:
    """A comment answering one person's comment, written only while the person has replies left."""

    installation_id: int
    repository: str
    number: int  # the issue or pull request to answer on
    comment_id: int  # the comment answered (reacted to when over the limit)
    actor_id: int
    kind: str
    body: str

    @property
    def key(self) -> str:
        """One reply per answered comment and kind."""
        return f"{self.kind}:{self.comment_id}"


def reaction(installation_id: int, repository: str, comment_id: int, content: str = "+1") -> Effect:
    """React to a comment (GitHub answers 200 for a reaction that already exists)."""
    key = f"reaction:{repository}:{comment_id}:{content}"
    payload = {"comment_id": comment_id, "content": content}
    return Effect(EffectKind.REACTION, installation_id, repository, key, payload)


def comment(installation_id: int, repository: str, number: int, body: str, key: str) -> Effect:
    """Create one comment on an issue or PR, once, whatever happens."""
    payload = {"number": number, "body": body}
    return Effect(EffectKind.COMMENT, installation_id, repository, f"comment:{key}", payload)


def assign(installation_id: int, repository: str, number: int, logins: Sequence[str], key: str) -> Effect:
    """Add assignees to an issue."""
    payload = {"number": number, "assignees": list(logins)}
    return Effect(EffectKind.ASSIGN, installation_id, repository, f"assign:{key}", payload)


def unassign(installation_id: int, repository: str, number: int, logins: Sequence[str], key: str) -> Effect:
    """Remove assignees from an issue (removing one not assigned changes nothing)."""
    payload = {"number": number, "assignees": list(logins)}
    return Effect(EffectKind.UNASSIGN, installation_id, repository, f"unassign:{key}", payload)


def deployment_review(
    installation_id: int, repository: str, run_id: int, environment: str, state: str, comment: str, key: str
) -> Effect:
    """Answer a custom deployment protection rule for one run and environment, once per `key`."""
    payload = {"run_id": run_id, "environment_name": environment, "state": state, "comment": comment}
    return Effect(EffectKind.DEPLOYMENT_REVIEW, installation_id, repository, review_dedupe_key(key), payload)


def review_dedupe_key(key: str) -> str:
    """The outbox's key of the answer to the protection-rule request `key`."""
    return f"gate:{key}"


def rerun(effect: Effect) -> Effect:
    """The surface write marked to be written even when GitHub already shows the same (Re-run)."""
    return dataclasses.replace(effect, payload={**effect.payload, "rerun": True})


def marker(dedupe_key: str) -> str:
    """The hidden marker that identifies the comment written for one effect."""
    return f"<!-- railyard:effect:{hashlib.sha256(dedupe_key.encode()).hexdigest()[:20]} -->"


EARLIER_KEYS_KEPT = 4


def with_earlier_key(result: Mapping[str, Any] | None, key: str) -> dict[str, Any]:
    """An effect's `result` once its key (`key`) was spelled anew for a renamed repository: the
    key is kept (`earlier_keys`, the latest few), so a comment an earlier attempt created under
    it is found by its marker (`marker`) instead of being created twice."""
    kept = dict(result or {})
    earlier = [k for k in kept.get("earlier_keys") or () if isinstance(k, str) and k != key]
    kept["earlier_keys"] = [*earlier, key][-EARLIER_KEYS_KEPT:]
    return kept


def markers_of(dedupe_key: str, result: Mapping[str, Any] | None) -> list[str]:
    """The markers a comment written for the effect may carry: its key's now, and its earlier keys'."""
    earlier = (result or {}).get("earlier_keys") or ()
    return [marker(dedupe_key), *(marker(k) for k in earlier if isinstance(k, str))]


def status_key(repository: str, number: int) -> str:
    """The dedupe key of a ticket's one status comment."""
    return f"status:{repository.casefold()}#{number}"


def status_comment(installation_id: int, repository: str, number: int) -> Effect:
    """Write (create once, then edit) the ticket's status comment from its latest state."""
    key = status_key(repository, number)
    return Effect(
        EffectKind.STATUS_COMMENT, installation_id, repository, key, {"number": number}, coalesce=True
    )


def check_run(
    installation_id: int,
    repository: str,
    pull: int,
    head_sha: str,
    *,
    merge_group: bool = False,
    shared_only: bool = False,
) -> Effect:
    """Write the `railyard` check on one commit (a PR's head, an accepted commit, a merge-queue
    commit), judged by every open PR whose head it is and by `pull`'s tickets accepted at it,
    else by `pull` (`app.runtime.surface_renderers`). One per commit, as GitHub keeps them:
    whichever PR asks, the one run is written again. `shared_only`: `pull` left the commit
    (closed, pushed over): write only what is still judged there."""
    key = f"check:{repository.casefold()}:{head_sha}"
    payload: dict[str, Any] = {"pull_request": pull, "head_sha": head_sha, "merge_group": merge_group}
    if shared_only:
        payload["shared_only"] = True
    return Effect(EffectKind.CHECK_RUN, installation_id, repository, key, payload, coalesce=True)


def project_key(repository: str, number: int) -> str:
    """The dedupe key of the write that keeps a ticket's project items showing its rails."""
    return f"projects:{repository.casefold()}#{number}"


def project_fields(installation_id: int, repository: str, number: int) -> Effect:
    """Keep the rails' fields of the issue's item in each configured project (GitHub Projects).

    One effect per ticket, not per project: the store that enqueues it does not read
    `.github/railyard.yml`; the renderer does, when it is performed, and syncs each project the
    file names then (none: no write).
    """
    key = project_key(repository, number)
    return Effect(
        EffectKind.PROJECT_FIELDS, installation_id, repository, key, {"number": number}, coalesce=True
    )


def surfaces_for(installation_id: int, ticket: Ticket, *, projects: bool = True) -> list[Effect]:
    """The status comment, the check on the head(s) of every PR that links the ticket, and (unless
    the repository is known to name no project) the ticket's project items."""
    repository = ticket.key.repository
    effects = [status_comment(installation_id, repository, ticket.key.number)]
    accepted = ticket.review.commit if ticket.review is not None else None
    for pr in sorted(ticket.rails.pull_requests.values(), key=lambda p: p.number):
        if pr.head_sha and (pr.merged_while_linked or (pr.linked and pr.open)):
            # Every head of the PR's last second: which of two same-second pushes is the head
            # now, the record cannot tell (`PullRequestFact.same_second_heads`).
            effects.extend(check_run(installation_id, repository, pr.number, head) for head in pr.heads)
            if accepted and pr.open and accepted not in pr.heads:
                # The accepted commit's check too: a lapse turns it, so a force-push back to it
                # finds no success GitHub would count before railyard hears the push.
                effects.append(check_run(installation_id, repository, pr.number, accepted))
    if projects:
        effects.append(project_fields(installation_id, repository, ticket.key.number))
    return effects
