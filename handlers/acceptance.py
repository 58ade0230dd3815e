"""Acceptance that stays true, at the edge: what an `/accept` binds, read from GitHub when it runs,
and the re-check of an acceptance that the check-run, `/status`, a high-risk label and the hourly
round rely on (SPEC *Acceptance that stays true*).

The verdict is the pure `policies.acceptance.judge`; here the facts it needs are asked of GitHub
as at execution (the reviewer's roles, conditional requests that cost nothing while unchanged;
the issue's labels for a self-verification), and a lapse is recorded once through the one door.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import structlog

from handlers.agents import is_agent
from handlers.ci import ci_of
from handlers.errors import CannotVerify, Missing
from handlers.payloads import dig, dig_str
from handlers.ports import Rules, Services
from policies.acceptance import ROLES_FOR, Standing, Validity, description_digest, judge
from policies.model import Ticket, TicketKey
from policies.notices import AcceptanceLapsed, NoticeContext, invalidated_operation_id
from policies.states import Role, WorkState

log = structlog.get_logger(__name__)

RECHECK_ACTOR = "railyard"
"""The actor recorded on `acceptance_invalidated`: the app itself, holding no role."""


@dataclass(frozen=True)
class AcceptFacts:
    """What an `/accept` binds and is judged by, read when it executes (`Context`'s fields)."""

    ci_state: str | None = None
    ci_checks: tuple[str, ...] = ()
    tree: str | None = None
    description_digest: str | None = None
    reviewer_roles: frozenset[Role] | None = None
    actor_is_agent: bool = False


def labels_of(issue: Any) -> set[str]:
    """The names of an issue's labels."""
    return {name for name in (dig_str(label, "name") for label in dig(issue, "labels") or []) if name}


def digest_of(issue: Any) -> str | None:
    """The description digest of an issue as GitHub answered it (None without an issue)."""
    if issue is None:
        return None
    return description_digest(dig_str(issue, "title"), dig_str(issue, "body"))


async def accept_facts(
    services: Services,
    installation_id: int,
    key: TicketKey,
    issue: Any,
    rules: Rules,
    actor_id: int,
    actor_roles: frozenset[Role],
) -> AcceptFacts:
    """The delivered commit's tree and CI, the description now, and (for a renewal) the roles
    the current acceptance's reviewer holds now."""
    async with services.store.read() as reads:
        ticket = await reads.ticket(key)
    delivery = ticket.current_delivery if ticket is not None else None
    digest = digest_of(issue)
    if ticket is None or delivery is None or delivery.commit is None:
        return AcceptFacts(description_digest=digest)
    github, repository = services.github, key.repository
    tree = delivery.tree
    if tree is None:
        found = await github.commit(installation_id, repository, delivery.commit)
        tree = dig_str(found, "commit", "tree", "sha")
    ci = await ci_of(
        github, installation_id, repository, delivery.commit, rules.required_checks, services.app_id
    )
    reviewer_roles = None
    if ticket.work is WorkState.ACCEPTED and ticket.review is not None:
        reviewer_roles = await _roles_now(services, installation_id, ticket, rules, actor_id, actor_roles)
    return AcceptFacts(ci.state.value, ci.checks, tree, digest, reviewer_roles)


async def _roles_now(
    services: Services,
    installation_id: int,
    ticket: Ticket,
    rules: Rules,
    actor_id: int | None = None,
    actor_roles: frozenset[Role] = frozenset(),
) -> frozenset[Role] | None:
    """The roles the accepting account holds now, of those its decision needed; None when GitHub
    will not say (then the role is not judged this time, and nothing is recorded for it)."""
    review = ticket.review
    assert review is not None
    if rules.error is not None:  # the file cannot be used: who holds its roles cannot be read from it
        log.warning("acceptance_roles_unverified", ticket=str(ticket.key), error="configuration unusable")
        return None
    wanted = ROLES_FOR[review.kind]
    if actor_id is not None and review.reviewer_id == actor_id and actor_roles & wanted:
        # The command's author is the reviewer and was found holding one already. Not finding
        # one there says nothing: the author's roles were asked for this command's row (an
        # override's, say), which may not be the ones the earlier decision needed.
        return actor_roles & wanted
    repository = ticket.key.repository
    try:
        if review.reviewer_id is None:
            return await _any_of(services, installation_id, repository, review.reviewer, rules, wanted)
        # Roles are asked of the account that decided, under the login it has now: the recorded
        # one may have been renamed away and registered by someone else since. A rename while
        # the roles are being asked would judge the old login, so a missing role is confirmed
        # under the login asked again (a second rename in that window is not chased further).
        login = await services.github.login_of(installation_id, review.reviewer_id)
        if await is_agent(services, installation_id, repository, login, review.reviewer_id, False, rules):
            return frozenset()  # an agent now (agents never accept): it could not make this decision
        held = await _any_of(services, installation_id, repository, login, rules, wanted)
        if held & wanted:
            return held
        now_login = await services.github.login_of(installation_id, review.reviewer_id)
        if now_login == login:
            return held
        return await _any_of(services, installation_id, repository, now_login, rules, wanted)
    except Missing:
        return frozenset()  # GitHub has no such account any more: it holds no role
    except CannotVerify as error:
        log.warning("acceptance_roles_unverified", ticket=str(ticket.key), error=str(error))
        return None


async def _any_of(
    services: Services,
    installation_id: int,
    repository: str,
    login: str,
    rules: Rules,
    wanted: frozenset[Role],
) -> frozenset[Role]:
    """The first of `wanted` (in order) `login` holds, each asked on its own: one confirmed is
    enough, whatever GitHub would not say about another (`CannotVerify` only when no role was
    confirmed and one could not be asked)."""
    unknown: CannotVerify | None = None
    for role in sorted(wanted):
        try:
            held = await services.roles.roles(installation_id, repository, login, rules, [role])
        except CannotVerify as error:
            unknown = error
            continue
        if held:
            return held
    if unknown is not None:
        raise unknown
    return frozenset()


async def validity_now(
    services: Services, installation_id: int, ticket: Ticket, rules: Rules, *, require_roles: bool = False
) -> Validity:
    """Judge an accepted ticket's acceptance now (its reviewer's roles asked again; for a
    self-verification, the issue's labels), writing nothing. `require_roles`: roles GitHub will
    not tell raise `CannotVerify` (what relies on the decision now, the gate, never passes on
    them); otherwise they are not judged this time."""
    review = ticket.review
    assert review is not None
    now = datetime.fromtimestamp(services.clock(), UTC)
    if review.invalidated is not None:
        return judge(review, Standing(at=now, expires_after_days=rules.acceptance_expires_after_days))
    key = ticket.key
    high_risk = False
    if review.kind.value == "self_verified" and rules.high_risk_labels:
        try:
            issue = await services.github.issue(installation_id, key.repository, key.number)
            high_risk = bool(labels_of(issue) & set(rules.high_risk_labels))
        except Missing:  # the issue is gone: its labels cannot be judged, the rest still is
            log.warning("acceptance_issue_missing", ticket=str(key))
    roles = await _roles_now(services, installation_id, ticket, rules)
    if roles is None and require_roles:
        raise CannotVerify(f"the roles of @{review.reviewer}, who accepted {key}, cannot be verified now")
    standing = Standing(
        at=now,
        expires_after_days=rules.acceptance_expires_after_days,
        self_verification=rules.self_verification,
        high_risk=high_risk,
        reviewer_roles=roles,
    )
    validity = judge(review, standing)
    return replace(validity, unverified=True) if roles is None and validity.valid else validity


async def recheck(
    services: Services, installation_id: int, key: TicketKey, *, require_roles: bool = False
) -> Validity | None:
    """Judge the ticket's acceptance now and record `acceptance_invalidated` once if it lapsed;
    None when the ticket is not accepted (`require_roles`: as `validity_now`)."""
    async with services.store.read() as reads:
        ticket = await reads.ticket(key)
    if ticket is None or ticket.work is not WorkState.ACCEPTED or ticket.review is None:
        return None
    review = ticket.review
    rules = await services.configs.load(installation_id, key.repository)
    validity = await validity_now(services, installation_id, ticket, rules, require_roles=require_roles)
    if validity.valid or validity.reason is None or validity.recorded:
        return validity
    lapse = AcceptanceLapsed(review.revision, validity.reason.value, validity.expires_at)
    context = NoticeContext(
        actor=RECHECK_ACTOR,
        operation_id=invalidated_operation_id(key.repository, key.number, review.revision),
        at=datetime.fromtimestamp(services.clock(), UTC),
        policy_version=rules.policy_version,
    )
    async with services.store.unit() as uow:
        await uow.execute(key, lapse, context, installation_id=installation_id)
        after = await uow.ticket(key)
        await uow.commit()
    # Recorded only if the ticket's own record says so now (not a refusal, not another's outcome).
    lapsed = after.review if after is not None else None
    recorded = lapsed is not None and lapsed.revision == review.revision and lapsed.invalidated is not None
    log.info("acceptance_invalidated", reason=validity.reason.value, recorded=recorded)
    return Validity(False, validity.reason, validity.expires_at, recorded=recorded)
