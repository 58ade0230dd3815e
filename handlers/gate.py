"""`deployment_protection_rule`: railyard as a custom deployment protection rule (SPEC
*Deployment gate*).

For an environment in `deployments.gate`, the deployment's range runs from the environment's
last successful deployment (railyard's own record of the deployment rail, else GitHub's
deployments) of a commit the gate approved there, or started one of its ranges from
(`handlers.gate_base`; before it answered any, of any commit) to the deployment's sha: one
compare. Every answer, approval or rejection (unjudged ones too), is kept (`gate_approvals`),
with the commit its range started from, in the transaction that enqueues it. The tickets it
brings are those whose merge commit is in that range; each acceptance is judged now (roles
asked again, as the hourly re-check does). The decision is recorded on each ticket
(`deployment_gated`) and answered to GitHub through the outbox, once. An environment that is
not gated gets no answer at all. Without a range (no earlier success known), each recorded
merge the sha contains is asked one by one, the pull requests that belong to no ticket
included when `deployments.unticketed` is `reject`.

Gate requests have no ordering key, so one can run before a `pull_request.closed` delivery of
the repository is processed: while one is stored and pending, the request waits (a
`TransientError`, retried later) rather than be judged without the merge it may bring. Not
for ever: once every such delivery has failed `MERGE_WAIT_TRIES` runs (its own, or those of the
delivery of its pull request it waits behind), the request is rejected unjudged, saying why
(nothing recorded on a ticket), where the worker's retries would otherwise run out and leave
GitHub with no answer (`app.store.gate_reads.merge_runs`). A close that gave up (`failed`) is
not waited for: the merge it would have recorded is not judged until it is redelivered.
A request answered already (its answer in the outbox: run again after a crash, or redelivered
by hand) is not judged again: what the tickets record stays what GitHub was told.

A file in force that cannot be used (the repository's, or the one it starts from) puts the
defaults in force, which gate nothing: a request then is rejected unjudged, saying so, rather
than judged under defaults or left waiting unanswered (GitHub asks only where the rule is on).

The answer goes to the run named by the payload's `deployment_callback_url`, on the API the app
is configured with: only the run id is read from that URL (and only when it names this same
repository), never its host.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import structlog

from handlers.acceptance import RECHECK_ACTOR, recheck, validity_now
from handlers.answers import DeploymentReview
from handlers.errors import CannotVerify, Missing, TransientError
from handlers.gate_base import last_success, repository_id_of
from handlers.gate_ports import GateAnswer
from handlers.gate_request import ProtectionRequest, request_from
from handlers.payloads import dig_str
from handlers.ports import MergedTicket, PullAndTickets, PullRequest, Reads, Rules, Services
from handlers.routing import Router, WebhookEvent
from policies.acceptance import holds_at
from policies.gate import GateDecision, TicketInRange, Unticketed, decide_gate, gated_operation_id
from policies.model import Ticket, TicketKey
from policies.notices import DeploymentGated, NoticeContext
from policies.states import WorkState

log = structlog.get_logger(__name__)
router = Router()

MERGE_WAIT_TRIES = 8
"""Failed runs of a `pull_request.closed` (or of the delivery of its pull request it waits
behind) after which a gate request stops waiting for it: with the worker's backoff, the ninth
run starts about four minutes after the first on average (two at the fifth percentile)."""


@dataclass(frozen=True)
class GateFindings:
    """The decision on a deployment and what it was judged over."""

    decision: GateDecision
    base: str | None  # the environment's last successful deployment's sha; None: none known


async def brought(
    services: Services, installation_id: int, repository: str, base: str | None, sha: str
) -> tuple[list[MergedTicket], set[str] | None]:
    """The merged tickets the deployment brings, and the commits of its range (None without a
    base: then each merged ticket the sha contains, asked one by one); `Missing` when GitHub
    knows no commit `sha`."""
    async with services.store.read() as reads:
        merged = await reads.merged_tickets(repository)
    if base is not None and base != sha:
        try:
            commits = set(await services.github.compare_commits(installation_id, repository, base, sha))
            return [ticket for ticket in merged if ticket.merge_commit in commits], commits
        except Missing:
            # force-pushed away, or a range GitHub cannot list whole: judge without a base
            log.warning("gate_base_unknown", base=base)
    if base == sha:
        return [], set()
    # Without a range every containment would answer "no" for a commit GitHub does not know
    # (the sha of a payload is otherwise not checked): `Missing` then, never "brings nothing".
    await services.github.commit(installation_id, repository, sha)
    contained = [
        ticket
        for ticket in merged
        if await services.ancestry.contains_ticket(installation_id, repository, ticket, sha)
    ]
    return contained, None


async def merged_heads(
    services: Services, installation_id: int, ticket: Ticket, sha: str, commits: set[str] | None
) -> list[str | None]:
    """The heads of the ticket's pull requests whose merge the deployment brings: each merged
    while linking it whose merge commit is in the range (`commits`; without a range, each the
    deployed sha contains). A later PR linking an accepted ticket brings code of its own."""
    merged = sorted(p.number for p in ticket.rails.pull_requests.values() if p.merged_while_linked)
    heads: list[str | None] = []
    for number in merged:
        pull = ticket.rails.pull_requests[number]
        if commits is not None:
            brings = pull.merge_commit is not None and pull.merge_commit in commits
        else:  # each merge asked (compares cached): PRs merge in any order of their numbers
            brings = pull.merge_commit is not None and await services.ancestry.contains(
                installation_id, ticket.key.repository, pull.merge_commit, sha
            )
        if brings:
            heads.append(pull.head_sha)
    return heads


async def merged_as_accepted(
    services: Services, installation_id: int, ticket: Ticket, heads: list[str | None]
) -> bool:
    """Whether each of `heads` (of the PRs that merged the ticket's code) is the accepted
    commit, or a commit with its tree (asked of GitHub only when the shas differ)."""
    review = ticket.review
    if review is None or not heads:
        return False  # nothing the ticket merged is known to be in the deployment: not shown to be accepted
    for head in heads:
        if head is None:
            return False
        if (review.commit or "").casefold() == head.casefold():
            continue
        try:
            found = await services.github.commit(installation_id, ticket.key.repository, head)
        except Missing:
            return False  # the merged head is gone: what merged cannot be shown to be what was accepted
        if not holds_at(review, head, dig_str(found, "commit", "tree", "sha")):
            return False
    return True


async def sort_merges(
    reads: Reads, repository: str, pulls: list[PullAndTickets]
) -> tuple[set[int], list[PullRequest]]:
    """The tickets merged pull requests bring, and the pull requests that belong to no ticket."""
    numbers: set[int] = set()
    loose: list[PullRequest] = []
    for pull, linked in pulls:
        # A PR of a ticket brings it (a later PR of an accepted ticket too); one that names only
        # issues that are no tickets belongs to no ticket.
        found = [await reads.ticket(TicketKey(repository, number)) for number in sorted(linked)]
        real = {ticket.key.number for ticket in found if ticket is not None and ticket.exists}
        numbers |= real
        if not real:
            loose.append(pull)
    return numbers, loose


UNMERGED_LOOKUPS = 100
"""Commits of a range asked one by one which pull request merged them, at most; past that the
rest count as merged by none (held back under `unticketed: reject`, never let through unasked)."""


async def unmerged_commits(
    services: Services,
    installation_id: int,
    repository: str,
    commits: set[str],
    in_range: list[PullAndTickets],
) -> list[str]:
    """The range's commits that no recorded pull request merged, for `unticketed: reject`. A
    recorded merge commit is one; any other commit (a merged branch's own commits, a rebase's, a
    push straight to the branch) is asked which merged pull requests brought it, and counts when
    one of them is a recorded merge in the range. A direct push, or a merge railyard did not
    record, is listed."""
    numbers = {pull.number for pull, _ in in_range}
    merge_commits = {pull.merge_commit for pull, _ in in_range if pull.merge_commit}
    asked = sorted(commits - merge_commits)
    unmerged = asked[UNMERGED_LOOKUPS:]
    for sha in asked[:UNMERGED_LOOKUPS]:
        brought_by = await services.github.merged_pulls_of_commit(installation_id, repository, sha)
        if not numbers.intersection(brought_by):
            unmerged.append(sha)
    return sorted(unmerged)


async def contained_unticketed(
    services: Services, installation_id: int, repository: str, sha: str
) -> list[int]:
    """Without a range: the recorded merged pull requests that belong to no ticket and whose
    merge commit `sha` contains (asked one by one, as the tickets are)."""
    async with services.store.read() as reads:
        _, loose = await sort_merges(reads, repository, await reads.pulls_merged_as(repository, None))
    return [
        pull.number
        for pull in loose
        if pull.merge_commit is not None
        and await services.ancestry.contains(installation_id, repository, pull.merge_commit, sha)
    ]


async def judge_gate(
    services: Services,
    installation_id: int,
    repository: str,
    environment: str,
    sha: str,
    rules: Rules,
    *,
    deployment_id: int | None = None,
    repository_id: int | None = None,
    record: bool = True,
) -> GateFindings:
    """The gate's decision on deploying `sha` to `environment`, its range starting at the newest
    success the gate may trust (`handlers.gate_base`; `repository_id` found by name when not
    given). `record`: an acceptance found lapsed is recorded (`acceptance_invalidated`) as every
    re-check does; without it (the CLI's dry run) nothing is written."""
    if rules.error is not None:  # defaults are in force, never what the file requires
        return GateFindings(decide_gate([], [], Unticketed(rules.unticketed), config_unusable=True), None)
    repository_id = await repository_id_of(services, repository, repository_id)
    base = await last_success(
        services, installation_id, repository, environment, deployment_id, repository_id
    )
    try:
        tickets, commits = await brought(services, installation_id, repository, base, sha)
    except Missing:
        log.warning("gate_commit_unknown", sha=sha)
        return GateFindings(decide_gate([], [], Unticketed(rules.unticketed), commit_known=False), base)
    numbers = {merged.number for merged in tickets}
    unticketed: list[int] = []
    unmerged: list[str] = []
    if commits:
        async with services.store.read() as reads:
            in_range = await reads.pulls_merged_as(repository, commits)
            real, loose = await sort_merges(reads, repository, in_range)
        numbers |= real
        unticketed = [pull.number for pull in loose]
        if Unticketed(rules.unticketed) is Unticketed.REJECT:
            unmerged = await unmerged_commits(services, installation_id, repository, commits, in_range)
    elif commits is None and Unticketed(rules.unticketed) is Unticketed.REJECT:
        unticketed = await contained_unticketed(services, installation_id, repository, sha)
    judged: list[TicketInRange] = []
    for number in sorted(numbers):
        key = TicketKey(repository, number)
        async with services.store.read() as reads:
            ticket = await reads.ticket(key)
        if ticket is None or ticket.work is not WorkState.ACCEPTED or ticket.review is None:
            judged.append(TicketInRange(number, None))
            continue
        try:
            if record:
                validity = await recheck(services, installation_id, key, require_roles=True)
            else:
                validity = await validity_now(services, installation_id, ticket, rules, require_roles=True)
        except CannotVerify as error:  # never approved on a role GitHub will not confirm
            log.warning("gate_roles_unverified", ticket=str(key), error=str(error))
            judged.append(TicketInRange(number, None, roles_verified=False))
            continue
        heads = await merged_heads(services, installation_id, ticket, sha, commits)
        same = await merged_as_accepted(services, installation_id, ticket, heads)
        judged.append(TicketInRange(number, validity, ticket.review.ci, same))
    decision = decide_gate(judged, unticketed, Unticketed(rules.unticketed), unmerged=unmerged)
    return GateFindings(decision, base)


def answer_of(
    request: ProtectionRequest, repository_id: int, findings: GateFindings, at: float
) -> GateAnswer:
    """What the gate keeps of answering `request`: approved, a later range may start at its sha;
    either way, at the commit its range started from (`handlers.gate_base`)."""
    return GateAnswer(
        repository_id, request.environment.casefold(), request.sha.lower(), request.run_id,
        request.request, request.deployment_id, findings.decision.approved, at,
        findings.base.lower() if findings.base else None,
    )  # fmt: skip


def gated(environment: str, rules: Rules) -> bool:
    """Whether `deployments.gate` names the environment (GitHub's names ignore case)."""
    return environment.casefold() in {name.casefold() for name in rules.gate}


def answerable(environment: str, rules: Rules) -> bool:
    """Whether a request for `environment` is answered: it is gated, or the file that would say
    so cannot be used (GitHub asks only where the rule is enabled: it is rejected, saying why,
    rather than left waiting unanswered until the file is fixed)."""
    return rules.error is not None or gated(environment, rules)


GIVE_UP_AFTER = 20 * 60.0
"""Seconds after a gate request arrived past which judging that still fails rejects it unjudged:
the worker retries a failing delivery for half an hour at least, then gives up, and GitHub would
be left waiting on the rule. Fail closed, and answer."""


async def _judged_or_refused(
    event: WebhookEvent,
    services: Services,
    request: ProtectionRequest,
    rules: Rules,
    repository_id: int | None,
) -> GateFindings:
    """`judge_gate`'s findings; a rejection unjudged when judging still fails `GIVE_UP_AFTER`
    after the request arrived: GitHub down, a read refused (a 403), the database away. Until
    then every failure is retried (as `TransientError`, which the worker backs off on)."""
    assert event.installation_id is not None
    try:
        return await judge_gate(
            services, event.installation_id, request.repository, request.environment, request.sha, rules,
            deployment_id=request.deployment_id, repository_id=repository_id,
        )  # fmt: skip
    except Exception as error:  # a gate that cannot judge retries a while, then rejects and says so
        _retried_until_given_up(event, services, error, "judging")
    return GateFindings(decide_gate([], [], Unticketed(rules.unticketed), unjudged=True), None)


def _retried_until_given_up(event: WebhookEvent, services: Services, error: Exception, what: str) -> None:
    """Raise `TransientError` (the worker backs off and runs the request again) until
    `GIVE_UP_AFTER` after the request arrived; past it, say so and return: it is rejected unjudged."""
    waited = None if event.received_at is None else services.clock() - event.received_at
    if waited is None or waited < GIVE_UP_AFTER:
        if isinstance(error, TransientError):
            raise error
        raise TransientError(f"{what} failed ({type(error).__name__}): tried again") from error
    log.warning(
        f"gate request rejected: {what} kept failing", minutes=round(waited / 60), error=str(error)[:200]
    )


async def _rules(
    event: WebhookEvent, services: Services, installation: int, repository: str, *, fresh: bool
) -> Rules | None:
    """The repository's `.github/railyard.yml` (read now when `fresh`); None once reading it still
    fails `GIVE_UP_AFTER` after the request arrived (until then a failure is retried): the request
    is then rejected unjudged, so GitHub is never left without an answer."""
    try:
        if fresh:
            return await services.configs.load(installation, repository, fresh=True)
        return await services.configs.load(installation, repository)
    except Exception as error:
        _retried_until_given_up(event, services, error, "reading .github/railyard.yml")
        return None


def _unjudged(decision: GateDecision) -> bool:
    """Whether the deployment was rejected without being judged (the file unusable, a merge not
    recorded, judging failing): no range was looked at."""
    return decision.config_unusable or decision.merges_unrecorded or decision.unjudged


async def _base_if_known(
    services: Services, installation: int, request: ProtectionRequest, repository_id: int
) -> str | None:
    """Where the range would have started, for an answer given unjudged: kept as its base, so the
    bootstrap ends on the success that was trusted then, not on a success posted later by hand
    (`handlers.gate_base`). None when none is known, or GitHub cannot say now (the answer goes out
    all the same; the bootstrap then lasts)."""
    try:
        return await last_success(
            services, installation, request.repository, request.environment,
            request.deployment_id, repository_id,
        )  # fmt: skip
    except Exception as error:  # the rejection is answered whatever this read does
        log.warning("gate: no base kept for an unjudged answer", error=str(error)[:200])
        return None


@router.register("deployment_protection_rule", "requested")
async def on_protection_rule(event: WebhookEvent, services: Services) -> None:
    """Judge a deployment to a gated environment; record the decision on each ticket it brings
    and answer GitHub once, through the outbox. An ungated environment: nothing at all. While a
    pull request's closing waits to be processed, nothing is judged: the request is retried."""
    request = request_from(event)
    if request is None or event.installation_id is None:
        return
    installation, repository = event.installation_id, request.repository
    rules = await _rules(event, services, installation, repository, fresh=False)
    read_now = False
    if rules is not None and not answerable(request.environment, rules):
        # GitHub asks only where railyard is a rule of the environment: a file read a minute ago
        # may predate the environment's line in `deployments.gate`. Read it now before dropping
        # the request, which GitHub would otherwise wait on until the rule times out.
        rules, read_now = await _rules(event, services, installation, repository, fresh=True), True
        if rules is not None and not answerable(request.environment, rules):
            return
    async with services.store.read() as reads:
        # Its closes by GitHub's id: one stored under an older name is waited for too, and its
        # answer by GitHub's id too: one answered before a rename is answered after it.
        answered, merge_runs = await reads.gate_backlog(
            repository, request.answer_key(), request.repository_id, request.answered_as()
        )
    if answered:
        return  # run again (a crash after its commit, a redelivery by hand): its answer is recorded
    if (
        rules is not None and not read_now
    ):  # a decision relies on the file (roles, expiry, the gate): read now
        rules = await _rules(event, services, installation, repository, fresh=True)
        if rules is not None and not answerable(request.environment, rules):
            return
    if merge_runs is not None and merge_runs <= MERGE_WAIT_TRIES:
        # What the deployment brings is read from the merges recorded; one stored but not yet
        # processed may be in it (gate requests have no order): judge once it is recorded.
        raise TransientError(f"a pull request of {repository} closed and is not processed yet")
    repository_id = await repository_id_of(services, repository, request.repository_id)
    if rules is None:  # the file could not be read for GIVE_UP_AFTER: rejected unjudged, answered
        findings = GateFindings(decide_gate([], [], Unticketed.REJECT, unjudged=True), None)
    elif merge_runs is not None:
        log.warning("gate request rejected: a merge is not processed", merge_runs=merge_runs)
        findings = GateFindings(
            decide_gate([], [], Unticketed(rules.unticketed), merges_unrecorded=True), None
        )
    else:
        findings = await _judged_or_refused(event, services, request, rules, repository_id)
    if repository_id is not None and _unjudged(findings.decision):
        base = await _base_if_known(services, installation, request, repository_id)
        findings = GateFindings(findings.decision, base)
    decision, now = findings.decision, datetime.fromtimestamp(services.clock(), UTC)
    policy_version = rules.policy_version if rules is not None else ""
    async with services.store.unit() as uow:
        for verdict in decision.tickets:
            notice = DeploymentGated(
                request.environment, request.sha, decision.state.value,
                verdict.blocker.value if verdict.blocker else None, request.deployment_id, request.run_id,
            )  # fmt: skip
            operation = gated_operation_id(repository, verdict.number, request.environment, request.request)
            context = NoticeContext(RECHECK_ACTOR, operation, now, policy_version)
            await uow.execute(
                TicketKey(repository, verdict.number), notice, context, installation_id=installation
            )
        if repository_id is not None:  # kept with the answer, rejections too: one commit
            answer = answer_of(request, repository_id, findings, now.timestamp())
            await uow.record_gate_answer(answer)
        key = request.answer_key()
        await uow.send(
            DeploymentReview(installation, repository, request.run_id, request.environment, decision, key)
        )
        await uow.commit()
    log.info("deployment_gated", state=decision.state.value, tickets=len(decision.tickets))
