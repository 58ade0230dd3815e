"""The base moves (SPEC *Organization defaults and GitHub's own views*): a push to a branch that
open linked PRs target re-reads their mergeability, so a conflict the base caused shows as
`blocked` (GitHub's `mergeable: false`, `mergeable_state: dirty`).

- Bounded: the open PRs railyard stores as linking a ticket and targeting the pushed branch
  (a PR stored before bases were, whatever its base), at most `MAX_PULLS_PER_PUSH` of them,
  newest first, are read again (`GET .../pulls/{n}`), one read each. PRs that link nothing cost
  nothing and never take a linked PR's place.
- Lazy answers: GitHub computes mergeability after it is asked, answering `mergeable: null`
  first. Such a PR is read again when the worker retries the delivery (`TransientError`, the
  queue's backoff), until `REREAD_WINDOW` after the push; then it is left to the next push.
- Coalesced: a push whose commit is no longer the branch's head reads nothing (one branch
  read): a newer push is queued behind it and re-reads for itself, so a burst of pushes to
  `main` costs one re-read per PR, not one per push.
"""

from __future__ import annotations

from handlers.observe import REREAD_WINDOW as REREAD_WINDOW
from handlers.observe import Told, branch_head, mergeability, record, reread_later
from handlers.payloads import dig, dig_str
from handlers.ports import Services
from handlers.pull_requests import source_of
from handlers.pushes import push_time
from handlers.routing import Router, WebhookEvent

router = Router()

MAX_PULLS_PER_PUSH = 20
"""At most this many open linked PRs into the pushed branch are read again per push (the newest)."""

Targets = list[tuple[int, set[int]]]


@router.register("push")
async def on_base_moved(event: WebhookEvent, services: Services) -> None:
    """Re-read the mergeability of the open linked PRs into the pushed branch."""
    ref = dig_str(event.payload, "ref") or ""
    repository = dig_str(event.payload, "repository", "full_name")
    installation_id = event.installation_id
    if repository is None or installation_id is None or not ref.startswith("refs/heads/"):
        return
    if dig(event.payload, "deleted") is True or dig(event.payload, "created") is True:
        return  # no PR targets a branch just created; a deleted one has no head to merge into
    branch = ref.removeprefix("refs/heads/")
    targets = await _linked_targets(services, installation_id, repository, branch)
    if not targets:
        return
    after = dig_str(event.payload, "after")
    head = await branch_head(services, installation_id, repository, branch)
    if after is not None and head is not None and head.casefold() != after.casefold():
        return  # coalesced: the branch moved again, and that push re-reads for itself
    pushed_at = push_time(event, services.clock())
    told: list[Told] = []
    computing = []
    for number, linked in targets:
        answer = await mergeability(services, installation_id, repository, number, pushed_at)
        if answer is None:
            computing.append(number)
        told += [(ticket, answer) for ticket in sorted(linked) if answer is not None]
    if told:
        rules = await services.configs.load(installation_id, repository)
        async with services.store.unit() as uow:
            await record(uow, services, repository, rules, told, source_of(event))
            await uow.commit()
    reread_later(computing, pushed_at, services.clock())


async def _linked_targets(services: Services, installation_id: int, repository: str, branch: str) -> Targets:
    """The open PRs railyard stores as linking tickets and targeting `branch` (the newest
    `MAX_PULLS_PER_PUSH`), with those tickets: PRs that link nothing never use up the bound, so
    nobody can hide a linked PR from the re-read by opening others."""
    async with services.store.read() as reads:
        stored = await reads.open_linked_into(repository, branch)
    return [(pull.number, linked) for pull, linked in stored[:MAX_PULLS_PER_PUSH]]
