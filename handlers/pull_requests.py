"""`pull_request` events: link and unlink tickets; record the PR's state on each ticket it links.

A fork's PR links only if its author holds a role (`policies.links.links_move_rail`): asked of
GitHub once, when the PR is opened or reopened (or first seen), or edited to name a ticket it
did not name before, and kept with the PR, so its `synchronize` events, body edits and the
check-run storms on its head cost no role calls. One PR names at most `MAX_NAMED_TICKETS`
tickets; a mention is recorded once per PR and ticket, and an edit that changes no link
records nothing, so editing a PR cannot bump revisions or rewrite status comments.
"""

from __future__ import annotations

from dataclasses import replace

from handlers.answers import CheckRun
from handlers.errors import Missing
from handlers.observe import (
    Source,
    Told,
    as_of_merge,
    links_kept,
    mergeability,
    named_tickets,
    pull_links,
    pull_request_from,
    recheck_merged,
    record,
    reread_later,
)
from handlers.payloads import dig, dig_int, dig_str
from handlers.ports import PullAndTickets, PullRequest, Reads, Rules, Services
from handlers.routing import Router, WebhookEvent
from policies.links import tells_nothing_new
from policies.model import TicketKey
from policies.rails import PullRequestObserved
from policies.states import Role

router = Router()
_NEW_HEAD = ("opened", "reopened", "synchronize", "ready_for_review")
_READS_SIDEBAR = ("opened", "edited", "synchronize", "reopened", "closed")
"""Actions after which the Development sidebar's links are read (the merge included: GitHub
closes them then); between two reads the PR's links stand as last stored."""
_RESOLVES_AUTHOR = ("opened", "reopened", "edited")
"""Actions after which a fork's PR author's roles are asked again (an edit only when it names a
ticket the PR did not name before); otherwise the stored answer."""
_ANY_ROLE = (
    Role.RUNNER,
    Role.TASK_OWNER,
    Role.REPOSITORY_MAINTAINER,
    Role.REVIEWER,
    Role.REQUESTER,
    Role.RELEASE_OWNER,
)


def source_of(event: WebhookEvent) -> Source:
    """The sender and delivery of a webhook, as the source of what it tells."""
    actor = dig_str(event.payload, "sender", "login") or "github"
    return Source(actor, event.delivery_id, event.installation_id, dig_int(event.payload, "sender", "id"))


@router.register("pull_request")
async def on_pull_request(event: WebhookEvent, services: Services) -> None:
    """Link and unlink tickets; record the PR's state on each ticket it links or linked."""
    repository = dig_str(event.payload, "repository", "full_name")
    if repository is None or event.installation_id is None:
        return
    rules = await services.configs.load(event.installation_id, repository)
    pull = pull_request_from(dig(event.payload, "pull_request"), repository, services.clock())
    if pull is None:
        return
    body = dig_str(event.payload, "pull_request", "body")
    async with services.store.read() as reads:
        seen = await reads.stored_pull(repository, pull.number)
    # Read before the unit: a GraphQL failure that is transient retries the whole delivery,
    # so neither the body's links nor the sidebar's are lost, and nothing is half-recorded.
    sidebar = (
        await sidebar_links(services, event.installation_id, repository, pull.number)
        if _reads_sidebar(event.action, pull, seen)
        else None
    )
    names = named_tickets(body, repository, sidebar if sidebar is not None else _stored(seen), pull.number)
    async with services.store.read() as reads:
        unseen = await not_named_before(reads, pull, names - _stored(seen))
    pull = await with_author_roles(services, event, rules, pull, names, unseen, seen)
    counts = pull.links_count
    async with services.store.unit() as uow:
        # First the PR as seen now, committed before the held checks are read: a check completing
        # at the same time either finds this PR or is found by it.
        stored = await uow.stored_pull(repository, pull.number)
        if sidebar is None:  # not read for this action: the links stand as last stored
            sidebar = set(stored[1]) if stored else set()
        of_merge = as_of_merge(pull, event.action)
        linked, at_merge = await pull_links(
            uow, repository, pull, body, rules, body_as_of_merge=of_merge, sidebar=sidebar
        )
        mentions = set() if counts else linked
        linked = linked if counts else set()
        kept = links_kept(pull, linked, at_merge, of_merge, set(stored[1]) if stored else None)
        before = await uow.remember(pull, kept if counts else set())
        same_check = _edit_changes_no_check(event, pull, stored, linked, before)
        if pull.open and pull.head_sha and not same_check:
            # Every open PR gets the check on its head, linked or not (`checks.unlinked`).
            await uow.send(CheckRun(event.installation_id, repository, pull.number, pull.head_sha))
        elif event.action == "closed" and pull.head_sha:  # the PRs left on its head: their verdict
            left = CheckRun(event.installation_id, repository, pull.number, pull.head_sha, shared_only=True)
            await uow.send(left)
        old_head = stored[0].head_sha if stored and stored[0].updated_at <= pull.updated_at else None
        if old_head and old_head != pull.head_sha:  # pushed off a commit other PRs may share
            await uow.send(
                CheckRun(event.installation_id, repository, pull.number, old_head, shared_only=True)
            )
        await uow.commit()
    newer = stored[0] if stored and stored[0].updated_at > pull.updated_at else None
    if event.action == "closed" and newer is None and counts:
        # Also every ticket still showing the PR open that its stored links no longer name (an
        # edit in the same second unlinked it: `policies.links.shows_pull_open`). Only a PR whose
        # links count can show a ticket open: an outsider's close costs no scan.
        async with services.store.read() as reads:
            before |= await reads.tickets_showing_pull(repository, pull.number, pull.updated_at)
    told = pull_observations(pull, linked, at_merge, before, newer, mentions)
    async with services.store.read() as reads:
        if pull.head_sha and linked:  # checks that completed before this PR showed its head
            held_checks = await reads.held_for(repository, f"check:{pull.head_sha}")
            told += [(n, check) for check in held_checks for n in sorted(linked)]
    computing = []
    if pull.open and linked and _asks_mergeability(event):
        answer = await mergeability(services, event.installation_id, repository, pull.number, pull.updated_at)
        told += [(n, answer) for n in sorted(linked) if answer is not None]
        computing = [pull.number] if answer is None else []
    source = source_of(event)
    async with services.store.unit() as uow:
        told = await news(uow, repository, told, edit=event.action == "edited")
        merged = await record(uow, services, repository, rules, told, source)
        named = any(isinstance(o, PullRequestObserved) and o.mention for _, o in told)
        if named and pull.open and pull.head_sha:  # a ticket first named by an outsider's PR
            await uow.send(CheckRun(event.installation_id, repository, pull.number, pull.head_sha))
        await uow.commit()
    # SPEC: when a ticket becomes merged, each environment's latest deployment is checked again.
    await recheck_merged(services, repository, rules, merged, source)
    # Right after a push (or a retarget) GitHub answers `mergeable: null`: asked again, as when
    # the base moves.
    reread_later(computing, pull.updated_at, services.clock())


async def sidebar_links(services: Services, installation_id: int, repository: str, number: int) -> set[int]:
    """The issues GitHub says the PR closes (its Development sidebar's links among them).

    A PR GitHub does not know (deleted since) links none; a transient failure propagates, and
    the worker retries the delivery.
    """
    try:
        return await services.github.closing_issues(installation_id, repository, number)
    except Missing:
        return set()


def pull_observations(
    pull: PullRequest,
    linked: set[int],
    at_merge: set[int],
    before: set[int],
    newer: PullRequest | None,
    mentions: set[int] | None = None,
) -> list[Told]:
    """What one PR event tells each ticket; `before` are the tickets the stored PR links.

    A current event also tells the tickets it no longer links. An older event arriving late
    (`newer` is stored) speaks only for the tickets it links, and a ticket it is the first to
    link also learns the newer state, so the final rails do not depend on arrival order.
    `mentions`: tickets the PR names without its links counting (told, never linked).
    """
    named = (mentions or set()) - linked - at_merge

    def told_to(n: int) -> Told:
        return (n, pull.observed(n in linked, linked_at_merge=n in at_merge, mention=n in named))

    if newer is None:
        return [told_to(n) for n in sorted(linked | before | at_merge | named)]
    told = linked | at_merge
    observations: list[Told] = [told_to(n) for n in sorted(told | named)]
    return observations + [(n, newer.observed(False)) for n in sorted(told - before)]


def _asks_mergeability(event: WebhookEvent) -> bool:
    """Whether the PR's mergeability is read after this event: a new head, or a new base (an
    `edited` event whose `changes` name the base: the old base's answer says nothing now)."""
    retargeted = event.action == "edited" and dig(event.payload, "changes", "base") is not None
    return event.action in _NEW_HEAD or retargeted


def _edit_changes_no_check(
    event: WebhookEvent, pull: PullRequest, stored: PullAndTickets | None, linked: set[int], before: set[int]
) -> bool:
    """Whether this is an edit after which the PR's check stays as it is: same head, same base,
    same links (the check of an unlinked PR asks its author's roles: an edit must not cost that
    again). A retarget is judged again, whatever is stored (a base kept before bases were, a
    resync's, a same-second retarget's): what the PR's configuration file proposes is relative
    to its base (`ProposedConfigs`)."""
    if event.action != "edited" or stored is None:
        return False
    if dig(event.payload, "changes", "base") is not None or stored[0].base_ref != pull.base_ref:
        return False
    if not pull.links_count and dig(event.payload, "changes", "body") is not None:
        return False  # an outsider's PR: the tickets its body names (stored nowhere) may have changed
    return stored[0].head_sha == pull.head_sha and linked == before


def _stored(seen: PullAndTickets | None) -> set[int]:
    return set(seen[1]) if seen else set()


def _reads_sidebar(action: str | None, pull: PullRequest, seen: PullAndTickets | None) -> bool:
    """Whether this event reads the Development sidebar: after the actions that can change it,
    except an edit of a fork's open PR whose author holds no role (its sidebar could only add
    mentions, and editing costs its author nothing)."""
    if action not in _READS_SIDEBAR:
        return False
    role_less = seen is not None and seen[0].author_has_role is False
    return not (action == "edited" and not pull.head_in_repository and not pull.merged and role_less)


async def not_named_before(reads: Reads, pull: PullRequest, names: set[int]) -> set[int]:
    """The tickets among `names` that the PR did not name before (no fact about it on the ticket).
    An issue that is not a ticket is left out: whatever the PR's author holds, it moves nothing."""
    unseen = set()
    for number in names:
        ticket = await reads.ticket(TicketKey(pull.repository, number))
        if ticket is not None and ticket.exists and pull.number not in ticket.rails.pull_requests:
            unseen.add(number)
    return unseen


async def news(uow: Reads, repository: str, told: list[Told], *, edit: bool) -> list[Told]:
    """What of `told` would change what a ticket shows (`tells_nothing_new`): a mention already
    shown, or an edit that changes no link, records nothing (no revision, no comment edited)."""
    kept: list[Told] = []
    for number, observation in told:
        if isinstance(observation, PullRequestObserved):
            ticket = await uow.ticket(TicketKey(repository, number))
            if ticket is not None and tells_nothing_new(ticket.rails, observation, edit=edit):
                continue
        kept.append((number, observation))
    return kept


async def with_author_roles(
    services: Services,
    event: WebhookEvent,
    rules: Rules,
    pull: PullRequest,
    names: set[int],
    unseen: set[int],
    seen: PullAndTickets | None,
) -> PullRequest:
    """The PR with whether its author holds a role: asked only for a fork's open PR that names
    a ticket, once per opening, and on an edit only when it names a ticket it did not name
    before (`unseen`: only then can the answer change what is recorded); otherwise as stored."""
    known = seen[0].author_has_role if seen else None
    if pull.head_in_repository or pull.merged or not pull.author:
        return replace(pull, author_has_role=known)
    asks = event.action in _RESOLVES_AUTHOR and (event.action != "edited" or bool(unseen))
    if known is not None and not asks:
        return replace(pull, author_has_role=known)
    if not names:  # it names no ticket: nothing to decide, nothing asked
        return replace(pull, author_has_role=known)
    assert event.installation_id is not None
    held = await services.roles.roles(
        event.installation_id, pull.repository, pull.author, rules, _ANY_ROLE, first_only=True
    )
    return replace(pull, author_has_role=bool(held))
