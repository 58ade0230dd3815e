"""`railyard resync` after an outage in which the repository was renamed: GitHub's answers name
the repository as it is called now, railyard's records the name it last heard, and a PR from
the repository's own branch is still told from a fork's by GitHub's ids, not by those names."""

from __future__ import annotations

from handlers.resync import resync
from policies.states import IntegrationState
from tests.fakes.github import REPOSITORY_ID, pull_answer
from tests.fakes.webhooks import INSTALLATION, REPOSITORY, pull_request
from tests.unit.handlers.steps import KEY, claimed, ticket, world

RENAMED, MERGE = "acme/application", "e" * 40
MERGED_AT = "2027-02-01T10:00:00Z"  # after the claim (the fake clock's 2027-01-15)


async def test_resync_after_a_rename_keeps_a_pull_request_from_the_claimed_branch_linked() -> None:
    """#12 was claimed on agent/12-fix and PR #41 from that branch linked it; unheard, acme/app
    became acme/application and #41 merged. GitHub's answer names the head's repository
    acme/application, the ticket's records acme/app: the same repository (one id), so the
    branch still links #41 and its merge makes #12 merged."""
    ports = world()
    ports.github.installations[REPOSITORY] = INSTALLATION
    await claimed(ports, branch="agent/12-fix")
    opened = pull_answer(REPOSITORY, 41, body="Retries.", head_ref="agent/12-fix")
    await ports.dispatch("pull_request", pull_request("opened", opened))
    assert ticket(ports).rails.pull_requests[41].linked
    merged = pull_answer(
        REPOSITORY, 41, body="Retries.", head_ref="agent/12-fix", head_repository=RENAMED,
        head_repository_id=REPOSITORY_ID, state="closed", merged_at=MERGED_AT, merge_commit=MERGE,
        updated_at=MERGED_AT,
    )  # fmt: skip
    ports.github.add_pull(REPOSITORY, merged)  # GitHub follows the old name to the repository

    await resync(ports.services, KEY)

    rails = ticket(ports).rails
    assert rails.pull_requests[41].linked
    assert rails.integration is IntegrationState.MERGED and rails.merge_commit == MERGE
