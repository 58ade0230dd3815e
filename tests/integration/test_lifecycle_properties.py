"""Random commands by random actors, mixed with repository and deployment inputs, through
the service on a real database; the invariants SPEC relies on hold after every step."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from app.store.codec import ticket_to_data
from app.store.database import Database
from app.store.tickets import TicketService
from handlers.ports import Outcome
from policies.commands import (
    Accept,
    AcceptMode,
    Claim,
    Command,
    Context,
    Deliver,
    Draft,
    Publish,
    Reopen,
    SendBack,
)
from policies.engine import apply
from policies.model import Actor, Ticket, TicketKey, same_login
from policies.rails import (
    BranchObserved,
    CheckObserved,
    DeploymentObserved,
    MergeabilityObserved,
    Observation,
    ObservationContext,
    PullRequestObserved,
)
from policies.states import Role, SelfVerification
from tests.fakes import START, Comments

# Written out independently of policies.transitions: (state before, command) -> state after.
LEGAL = {
    (None, "draft"): "draft",
    (None, "publish"): "open",
    ("draft", "publish"): "open",
    ("open", "claim"): "claimed",
    ("claimed", "deliver"): "delivered",
    ("accepted", "deliver"): "delivered",
    ("delivered", "accept"): "accepted",
    ("delivered", "send-back"): "claimed",
    ("claimed", "reopen"): "open",
    ("delivered", "reopen"): "open",
    ("accepted", "reopen"): "open",
}

ACTORS = [
    Actor("olivia", frozenset({Role.REQUESTER, Role.TASK_OWNER})),
    Actor("rita", frozenset({Role.REVIEWER})),
    Actor("ray", frozenset({Role.REVIEWER, Role.RUNNER})),
    Actor("coder-bot[bot]", frozenset({Role.RUNNER})),
    Actor("cara", frozenset({Role.RUNNER})),
    Actor("max", frozenset({Role.REPOSITORY_MAINTAINER})),
    Actor("rel", frozenset({Role.RELEASE_OWNER})),
    Actor("nora"),
]
SHAS = ["a" * 40, "b" * 40, "c" * 40]
TEXT = st.sampled_from(["", "  ", "Looks good", "Fix the tests\nplease"])

commands = st.one_of(
    st.just(Draft()),
    st.builds(
        Publish,
        description=TEXT,
        first_assignee=st.sampled_from([None, "cara", "nora"]),
        no_code=st.booleans(),
    ),
    st.builds(
        Claim,
        check_in_minutes=st.sampled_from([None, 30, 0]),
        branch=st.sampled_from([None, "agent/1-x"]),
    ),
    st.builds(
        Deliver,
        summary=TEXT,
        branch=st.sampled_from([None, "agent/1-x"]),
        commit=st.sampled_from([None, *SHAS]),
        artifacts=st.sampled_from([(), ("https://example.com/report",)]),
    ),
    st.builds(Accept, mode=st.sampled_from(list(AcceptMode)), reason=TEXT),
    st.builds(SendBack, feedback=TEXT),
    st.builds(Reopen, reason=TEXT),
)

times = st.integers(min_value=0, max_value=5).map(lambda m: START + timedelta(minutes=m))
observations = st.one_of(
    st.builds(
        BranchObserved, branch=st.just("agent/1-x"), sha=st.sampled_from([None, *SHAS]), observed_at=times
    ),
    st.builds(
        PullRequestObserved,
        number=st.sampled_from([7, 8]),
        url=st.just("https://github.com/acme/props/pull/7"),
        linked=st.booleans(),
        open=st.booleans(),
        merged=st.booleans(),
        head_sha=st.sampled_from(SHAS),
        head_ref=st.just("agent/1-x"),
        merge_commit=st.sampled_from([None, "d" * 40]),
        updated_at=times,
    ),
    st.builds(
        CheckObserved,
        head_sha=st.sampled_from(SHAS),
        name=st.sampled_from(["ci", "railyard"]),
        conclusion=st.sampled_from([None, "success", "failure"]),
        check_id=st.integers(1, 4),
        completed_at=times,
    ),
    st.builds(
        MergeabilityObserved,
        number=st.sampled_from([7, 8]),
        head_sha=st.sampled_from(SHAS),
        mergeable=st.sampled_from([None, True, False]),
        observed_at=times,
    ),
    st.builds(
        DeploymentObserved,
        deployment_id=st.integers(1, 4),
        environment=st.sampled_from(["production", "staging"]),
        sha=st.sampled_from(SHAS),
        contains_merge=st.sampled_from([None, True, False]),
        status=st.sampled_from([None, "in_progress", "success", "failure", "inactive"]),
        status_id=st.integers(0, 4),
    ),
)

_numbers = itertools.count(1)


def work_side(ticket: Ticket | None) -> object:
    """Everything on a ticket that only commands may change."""
    if ticket is None:
        return None
    return (ticket.work, ticket.owner, ticket.claimant, ticket.attempt, ticket.last_delivery, ticket.review)


class TicketLifecycle(RuleBasedStateMachine):
    """One ticket per example, driven through the service."""

    def __init__(self, database: Database) -> None:
        super().__init__()
        self.service = TicketService(database)
        self.key = TicketKey("acme/props", next(_numbers))
        self.comments = Comments()
        self.operations: list[tuple[Command | Observation, Context | ObservationContext, Outcome]] = []
        self.highest_attempt = 0

    @rule(
        actor=st.sampled_from(ACTORS),
        command=commands,
        old_comment=st.booleans(),
        high_risk=st.booleans(),
        self_verification=st.sampled_from(list(SelfVerification)),
    )
    def run_command(
        self,
        actor: Actor,
        command: Command,
        old_comment: bool,
        high_risk: bool,
        self_verification: SelfVerification,
    ) -> None:
        """Only legal transitions happen, by someone holding the role or relation recorded."""
        context = self.comments.context(actor, high_risk=high_risk, self_verification=self_verification)
        if old_comment:  # a comment written long ago and executed now
            context = replace(context, comment_at=START)
        before = self.service.load(self.key)
        outcome = self.service.execute(self.key, command, context)
        after = self.service.load(self.key)
        self.operations.append((command, context, outcome))
        if not outcome.applied:
            assert outcome.refusal is not None
            assert before == after
            return
        assert after is not None
        move = (before.work.value if before and before.work else None, command.name.value)
        assert move in LEGAL, f"illegal move {move}"
        assert after.work is not None and after.work.value == LEGAL[move]
        self._check_role(before, actor, outcome.events[-1].role)

    def _check_role(self, before: Ticket | None, actor: Actor, role: str | None) -> None:
        if role == "owner":
            assert before is not None and same_login(actor.login, before.owner)
        elif role == "claimant":
            assert before is not None and same_login(actor.login, before.claimant)
        else:
            assert role is not None and Role(role) in actor.roles

    @rule(observation=observations)
    def observe(self, observation: Observation) -> None:
        """Repository and deployment inputs never change WorkState or anything work-side."""
        before = self.service.load(self.key)
        context = ObservationContext("github", f"delivery-{next(_numbers)}", self.comments.clock())
        outcome = self.service.execute(self.key, observation, context)
        self.operations.append((observation, context, outcome))
        assert work_side(self.service.load(self.key)) == work_side(before)

    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        """A replayed operation id changes nothing and returns the original outcome."""
        if not self.operations:
            return
        change, context, original = data.draw(st.sampled_from(self.operations))
        stored = bool(original.events) or (
            isinstance(context, Context) and original.refusal is not None and not original.refusal.transient
        )
        if not stored:
            return  # nothing was stored under that id (an observation that changed nothing)
        before = self.service.load(self.key)
        again = self.service.execute(self.key, change, context)
        assert self.service.load(self.key) == before
        assert again.replayed
        assert again.events == original.events
        assert again.refusal == original.refusal

    @invariant()
    def revision_rises_by_one_per_event(self) -> None:
        """The revision is the number of events, numbered 1..n without gaps."""
        ticket = self.service.load(self.key)
        history = self.service.history(self.key)
        assert [r.revision for r in history] == list(range(1, len(history) + 1))
        assert (ticket.revision if ticket else 0) == len(history)

    @invariant()
    def the_event_log_rebuilds_the_ticket(self) -> None:
        """Folding the stored events from nothing gives the stored ticket."""
        ticket = self.service.load(self.key)
        if ticket is None:
            return
        rebuilt = Ticket(self.key)
        for recorded in self.service.history(self.key):
            rebuilt = apply(rebuilt, recorded.event)
        assert ticket_to_data(rebuilt) == ticket_to_data(ticket)
        assert rebuilt.revision == ticket.revision

    @invariant()
    def every_acceptance_records_its_review(self) -> None:
        """An accepted ticket says who accepted and whether independent, self-verified or override."""
        ticket = self.service.load(self.key)
        if ticket is None or ticket.work is None or ticket.work.value != "accepted":
            return
        review, delivery = ticket.review, ticket.last_delivery
        assert review is not None and delivery is not None and review.reviewer
        if review.kind.value == "independent":
            assert not same_login(review.reviewer, delivery.runner)
        if review.kind.value == "self_verified":
            assert same_login(review.reviewer, delivery.runner)

    @invariant()
    def attempt_numbers_only_rise(self) -> None:
        """No attempt number is ever reused."""
        ticket = self.service.load(self.key)
        attempt = ticket.attempt if ticket else 0
        assert attempt >= self.highest_attempt
        self.highest_attempt = attempt


def test_ticket_lifecycle_invariants_hold_for_random_histories(database: Database) -> None:
    """Hypothesis drives random commands, observations and replays against the real database."""
    run_state_machine_as_test(
        lambda: TicketLifecycle(database),
        settings=settings(
            max_examples=60,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        ),
    )
