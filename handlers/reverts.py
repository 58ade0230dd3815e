"""A merged pull request that reverts a ticket's merge: `reverted` on that ticket (`policies.reverts`).

Its body names the reverted PR (`Reverts owner/repo#34`, as GitHub's revert button writes), or,
for a PR titled `Revert ...` whose body names none, its merge commit's message names the
reverted merge commit (`This reverts commit <sha>.`): one commit read, only for such a title.
The name in the body counts only when it is this repository's, the one whose id the delivery
carries (its current name is the payload's `repository.full_name`: the router's guard has
matched that id already). Recorded through the one door, one operation per ticket and pair, so a
redelivery records nothing twice.
"""

from __future__ import annotations

from datetime import UTC, datetime

from handlers.errors import Missing
from handlers.payloads import dig, dig_int, dig_str
from handlers.ports import Reads, Services
from handlers.routing import Router, WebhookEvent
from policies.model import TicketKey
from policies.notices import NoticeContext
from policies.reverts import (
    REVERT_TITLE,
    RevertObserved,
    revert_operation_id,
    reverted_commits,
    reverted_pulls,
)

router = Router()
Target = tuple[int, int]
"""(a ticket's number, the PR of that ticket the revert undid)."""


@router.register("pull_request", "closed")
async def on_revert_merged(event: WebhookEvent, services: Services) -> None:
    """Record `reverted` on each ticket whose merged PR (or merge commit) this merged PR reverts."""
    repository = dig_str(event.payload, "repository", "full_name")
    pull = dig(event.payload, "pull_request")
    number = dig_int(pull, "number")
    if (
        repository is None
        or event.installation_id is None
        or number is None
        or dig(pull, "merged") is not True
    ):
        return
    named = reverted_pulls(dig_str(pull, "body"), repository) - {number}
    commits: tuple[str, ...] = ()
    merge_commit = dig_str(pull, "merge_commit_sha")
    if not named and merge_commit and REVERT_TITLE.match(dig_str(pull, "title") or ""):
        commits = await _reverted_by_commit(services, event.installation_id, repository, merge_commit)
    if not named and not commits:
        return
    async with services.store.read() as reads:
        targets = await revert_targets(reads, repository, named, commits)
    if not targets:
        return
    rules = await services.configs.load(event.installation_id, repository)
    url = dig_str(pull, "html_url") or ""
    async with services.store.unit() as uow:
        for ticket, reverted in targets:
            context = NoticeContext(
                actor=dig_str(event.payload, "sender", "login") or "github",
                actor_id=dig_int(event.payload, "sender", "id"),
                operation_id=revert_operation_id(repository, ticket, reverted, number),
                at=datetime.fromtimestamp(services.clock(), UTC),
                policy_version=rules.policy_version,
            )
            notice = RevertObserved(reverts=reverted, by=number, url=url)
            await uow.execute(
                TicketKey(repository, ticket), notice, context, installation_id=event.installation_id
            )
        await uow.commit()


async def _reverted_by_commit(
    services: Services, installation_id: int, repository: str, merge_commit: str
) -> tuple[str, ...]:
    """The commits the merge commit's message says it reverts (none when GitHub has no such commit)."""
    try:
        found = await services.github.commit(installation_id, repository, merge_commit)
    except Missing:
        return ()
    return reverted_commits(dig_str(found, "commit", "message"))


async def revert_targets(
    reads: Reads, repository: str, pulls: frozenset[int], commits: tuple[str, ...]
) -> list[Target]:
    """The (ticket, merged PR) pairs the revert undoes: the tickets each named PR linked, and the
    tickets whose merged PR merged as one of `commits`. Whether that PR merged the ticket's
    change is the core's to judge (`policies.reverts.revert_data`)."""
    targets: set[Target] = set()
    for number in sorted(pulls):
        stored = await reads.stored_pull(repository, number)
        if stored is not None and stored[0].merged:
            targets |= {(ticket, number) for ticket in stored[1]}
    wanted = {sha.casefold() for sha in commits}
    if wanted:
        for merged in await reads.merged_tickets(repository):
            ticket = await reads.ticket(TicketKey(repository, merged.number))
            prs = ticket.rails.pull_requests.values() if ticket is not None else ()
            targets |= {
                (merged.number, pr.number) for pr in prs if (pr.merge_commit or "").casefold() in wanted
            }
    return sorted(targets)
