"""`push` events: a push to a branch a ticket's claim or delivery reported is verified with the
API and recorded, counts as the claimant's sign of life, and asks whether its PRs still merge."""

from __future__ import annotations

from datetime import UTC, datetime

from handlers.observe import Told, branch_head, by_pattern, mergeability, record, reread_later
from handlers.payloads import dig, dig_str, time_or
from handlers.ports import Services
from handlers.pull_requests import source_of
from handlers.routing import Router, WebhookEvent
from handlers.signs import push_candidates, push_signs
from policies.model import Ticket, TicketKey
from policies.rails import BranchObserved

router = Router()


@router.register("push")
async def on_push(event: WebhookEvent, services: Services) -> None:
    """Record the pushed branch on its tickets, with the head the API reports now."""
    ref = dig_str(event.payload, "ref") or ""
    default = dig_str(event.payload, "repository", "default_branch")
    repository = dig_str(event.payload, "repository", "full_name")
    if default and repository and ref == f"refs/heads/{default}":
        services.configs.forget(repository)  # `.github/railyard.yml` may have changed
    if repository is None or event.installation_id is None or not ref.startswith("refs/heads/"):
        return
    rules = await services.configs.load(event.installation_id, repository)
    branch = ref.removeprefix("refs/heads/")
    pushed_at = push_time(event, services.clock())
    async with services.store.read() as reads:
        # A push names a branch of the repository it was pushed to, never a fork's.
        tickets = await reads.tickets_on_branch(repository, branch, head_in_repository=True)
        tickets |= await by_pattern(reads, repository, branch, rules)
        candidates = [
            await reads.ticket(TicketKey(repository, n)) for n in push_candidates(tickets, branch, rules)
        ]
        pulls = await reads.pulls_where(repository, head_ref=branch)
    heard = push_signs(
        [t for t in candidates if isinstance(t, Ticket)], branch, rules, pushed_at, event.delivery_id
    )
    told: list[Told] = []
    if tickets:
        sha = await branch_head(services, event.installation_id, repository, branch)
        told += [(n, BranchObserved(branch, sha, pushed_at)) for n in sorted(tickets)]
    computing = []
    for pull, linked in pulls:
        if pull.open and linked:  # a push to a PR's head: is it still mergeable?
            answer = await mergeability(services, event.installation_id, repository, pull.number, pushed_at)
            told += [(n, answer) for n in sorted(linked) if answer is not None]
            computing += [pull.number] if answer is None else []
    async with services.store.unit() as uow:
        for sign in heard:
            await uow.record_sign_of_life(sign)
        await record(uow, services, repository, rules, told, source_of(event))
        await uow.commit()
    reread_later(computing, pushed_at, services.clock())  # GitHub answers null while it computes


def push_time(event: WebhookEvent, fallback: float) -> datetime:
    """When the push happened, by GitHub's payload (so a redelivery is the same observation)."""
    pushed = dig(event.payload, "repository", "pushed_at")
    if isinstance(pushed, int | float) and not isinstance(pushed, bool):
        return datetime.fromtimestamp(pushed, UTC)
    return time_or(dig_str(event.payload, "head_commit", "timestamp"), fallback)
