"""`merge_group` events: the `railyard` check on the merge queue's commit.

GitHub runs required checks again on the temporary commit a merge queue builds
(`gh-readonly-queue/<base>/pr-<N>-<sha>`); without the same check there, a queue could
merge work that branch protection meant to hold. The check is judged by the PR it names, at
the PR head commit the queue entry names: the one GitHub merges, whatever railyard has stored
as the PR's head (its `synchronize` may not have been processed yet).
"""

from __future__ import annotations

import re

import structlog

from handlers.answers import CheckRun
from handlers.payloads import dig_str
from handlers.ports import Services
from handlers.routing import Router, WebhookEvent

router = Router()
log = structlog.get_logger(__name__)
_MERGE_QUEUE_REF = re.compile(r"gh-readonly-queue/.+/pr-(\d+)-([^/]+)$")
_COMMIT_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 object names


def merge_queue_entry(head_ref: str | None) -> tuple[int, str | None] | None:
    """The PR a merge-queue branch (`gh-readonly-queue/main/pr-34-<sha>`) was made for, and the
    PR head commit it queued (None when the suffix is not a full commit sha)."""
    found = _MERGE_QUEUE_REF.search(head_ref or "")
    if found is None:
        return None
    sha = found.group(2).casefold()
    return int(found.group(1)), sha if _COMMIT_SHA.fullmatch(sha) else None


@router.register("merge_group", "checks_requested")
async def on_merge_group(event: WebhookEvent, services: Services) -> None:
    """Enqueue the check on the merge-queue commit, judged by the PR the queue branch names."""
    repository = dig_str(event.payload, "repository", "full_name")
    head_sha = dig_str(event.payload, "merge_group", "head_sha")
    head_ref = dig_str(event.payload, "merge_group", "head_ref")
    entry = merge_queue_entry(head_ref)
    if repository is None or head_sha is None or event.installation_id is None:
        return
    if entry is None:
        log.warning("merge queue branch names no pull request", head_ref=head_ref)
        return
    pull, pull_head = entry
    if pull_head is None:  # still checked: the check cannot pass, and says so
        log.warning("merge queue branch names no PR head commit", head_ref=head_ref)
    check = CheckRun(event.installation_id, repository, pull, head_sha, merge_group=True, pull_head=pull_head)
    async with services.store.unit() as uow:
        await uow.send(check)
        await uow.commit()
