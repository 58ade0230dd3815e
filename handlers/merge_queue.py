"""`merge_group` events: the `railyard` check on the merge queue's commit.

GitHub runs required checks again on the temporary commit a merge queue builds
(`gh-readonly-queue/<base>/pr-<N>-<sha>`); without the same check there, a queue could
merge work that branch protection meant to hold. The check is judged by the PR it names.
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
_MERGE_QUEUE_REF = re.compile(r"gh-readonly-queue/.+/pr-(\d+)-[0-9a-f]+$")


def merge_queue_pull(head_ref: str | None) -> int | None:
    """The PR a merge-queue branch (`gh-readonly-queue/main/pr-34-<sha>`) was made for."""
    found = _MERGE_QUEUE_REF.search(head_ref or "")
    return int(found.group(1)) if found else None


@router.register("merge_group", "checks_requested")
async def on_merge_group(event: WebhookEvent, services: Services) -> None:
    """Enqueue the check on the merge-queue commit, judged by the PR the queue branch names."""
    repository = dig_str(event.payload, "repository", "full_name")
    head_sha = dig_str(event.payload, "merge_group", "head_sha")
    head_ref = dig_str(event.payload, "merge_group", "head_ref")
    pull = merge_queue_pull(head_ref)
    if repository is None or head_sha is None or event.installation_id is None:
        return
    if pull is None:
        log.warning("merge queue branch names no pull request", head_ref=head_ref)
        return
    async with services.store.unit() as uow:
        await uow.send(CheckRun(event.installation_id, repository, pull, head_sha, merge_group=True))
        await uow.commit()
