"""`merge_group` events: the `railyard` check on the merge queue's commit.

GitHub runs required checks again on the temporary commit a merge queue builds
(`gh-readonly-queue/<base>/pr-<N>-<sha>`); without the same check there, a queue could
merge work that branch protection meant to hold. The check is judged by the PR it names.
"""

from __future__ import annotations

import structlog

from app.bootstrap import Services
from app.views.surfaces import check_run, merge_queue_pull, show
from app.web.payloads import dig_str
from handlers.routing import Router, WebhookEvent

router = Router()
log = structlog.get_logger(__name__)


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
    show(services, check_run(event.installation_id, repository, pull, head_sha, merge_group=True))
