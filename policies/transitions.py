"""The transition table: SPEC's command table as data.

`decide` enforces it and the README's state diagram is generated from it, so the table,
the guard and the picture cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies.commands import Accept, AcceptMode, Command, CommandName
from policies.states import Qualification, Relation, Role, WorkState


@dataclass(frozen=True)
class Transition:
    """One row: a command (and variant) moves the ticket from any of `sources` to `target`.

    `allowed` lists who may run it, in SPEC's order; the first one the actor holds is the
    role or relation recorded. A source of None means the issue is not yet a ticket.
    `backed_by` is the role a relation needs at execution to give its powers: a claimant
    removed from the runners cannot deliver.
    """

    command: CommandName
    sources: tuple[WorkState | None, ...]
    target: WorkState
    allowed: tuple[Qualification, ...]
    variant: AcceptMode | None = None
    note: str = ""
    backed_by: Role | None = None


W = WorkState
TRANSITIONS: tuple[Transition, ...] = (
    Transition(CommandName.DRAFT, (None,), W.DRAFT, (Role.REQUESTER, Role.TASK_OWNER)),
    Transition(
        CommandName.PUBLISH,
        (None, W.DRAFT),
        W.OPEN,
        (Role.REQUESTER, Role.TASK_OWNER),
        note="needs a description",
    ),
    Transition(CommandName.CLAIM, (W.OPEN,), W.CLAIMED, (Role.RUNNER,), note="new attempt"),
    Transition(
        CommandName.DELIVER,
        (W.CLAIMED,),
        W.DELIVERED,
        (Relation.CLAIMANT,),
        note="summary and an artifact",
        backed_by=Role.RUNNER,
    ),
    Transition(
        CommandName.DELIVER,
        (W.ACCEPTED,),
        W.DELIVERED,
        (Relation.CLAIMANT,),
        note="last claimant, new attempt",
        backed_by=Role.RUNNER,
    ),
    Transition(
        CommandName.ACCEPT,
        (W.DELIVERED,),
        W.ACCEPTED,
        (Role.REVIEWER,),
        variant=AcceptMode.REVIEW,
        note="not the delivery's runner",
    ),
    Transition(
        CommandName.ACCEPT,
        (W.DELIVERED,),
        W.ACCEPTED,
        (Role.REVIEWER,),
        variant=AcceptMode.SELF,
        note="--self: the runner, not high-risk",
    ),
    Transition(
        CommandName.ACCEPT,
        (W.DELIVERED,),
        W.ACCEPTED,
        (Role.REPOSITORY_MAINTAINER, Role.RELEASE_OWNER),
        variant=AcceptMode.OVERRIDE,
        note="--override REASON",
    ),
    Transition(
        CommandName.ACCEPT,
        (W.ACCEPTED,),
        W.ACCEPTED,
        (Role.REVIEWER,),
        variant=AcceptMode.REVIEW,
        note="renews an acceptance that no longer holds",
    ),
    Transition(
        CommandName.ACCEPT,
        (W.ACCEPTED,),
        W.ACCEPTED,
        (Role.REVIEWER,),
        variant=AcceptMode.SELF,
        note="renews, --self: the runner, not high-risk",
    ),
    Transition(
        CommandName.ACCEPT,
        (W.ACCEPTED,),
        W.ACCEPTED,
        (Role.REPOSITORY_MAINTAINER, Role.RELEASE_OWNER),
        variant=AcceptMode.OVERRIDE,
        note="renews, --override REASON",
    ),
    Transition(
        CommandName.SEND_BACK,
        (W.DELIVERED,),
        W.CLAIMED,
        (Role.REVIEWER,),
        note="feedback; same claimant, new attempt",
    ),
    Transition(
        CommandName.REOPEN,
        (W.CLAIMED, W.DELIVERED),
        W.OPEN,
        (Role.REVIEWER, Relation.OWNER, Relation.CLAIMANT),
        note="reason; claim cleared",
    ),
    Transition(
        CommandName.REOPEN,
        (W.ACCEPTED,),
        W.OPEN,
        (Relation.OWNER, Role.REPOSITORY_MAINTAINER),
        note="reason; acceptance stays in history",
    ),
)


def rows_for(command: CommandName, variant: AcceptMode | None = None) -> tuple[Transition, ...]:
    """The rows a command (and, for `/accept`, its variant) can use."""
    return tuple(
        row
        for row in TRANSITIONS
        if row.command == command and (row.variant is None or row.variant == variant)
    )


def roles_in_rows(command: Command) -> frozenset[Role]:
    """The roles that can matter to `command`: those its rows allow (relations aside).

    Resolving only these saves a team-membership lookup per role the command cannot use.
    """
    variant = command.mode if isinstance(command, Accept) else None
    rows = rows_for(command.name, variant)
    allowed = {q for row in rows for q in row.allowed if isinstance(q, Role)}
    return frozenset(allowed | {row.backed_by for row in rows if row.backed_by is not None})


def needs_a_role(command: Command) -> bool:
    """Whether no one without a role can run `command` in any state: each of its rows allows
    only roles, or a relation backed by a role. Then an actor holding none of `roles_in_rows`
    is refused whatever else is true, and nothing more need be asked to say so."""
    variant = command.mode if isinstance(command, Accept) else None
    return all(
        row.backed_by is not None or all(isinstance(q, Role) for q in row.allowed)
        for row in rows_for(command.name, variant)
    )


def deciding_roles(command: Command) -> tuple[Role, ...] | None:
    """The roles, in order, that alone decide who may run `command` in any state, when there is
    such a list: every row of it allows the same roles and no relation. Then the first of them the
    actor holds is all `decide` can use (it records that one), so resolving may stop there."""
    variant = command.mode if isinstance(command, Accept) else None
    rows = rows_for(command.name, variant)
    orders = {row.allowed for row in rows}
    if len(orders) != 1 or any(row.backed_by is not None for row in rows):
        return None
    (order,) = orders
    roles = tuple(q for q in order if isinstance(q, Role))
    return roles if len(roles) == len(order) else None


def mermaid_diagram(transitions: tuple[Transition, ...] = TRANSITIONS) -> str:
    """The work rail as a Mermaid state diagram, one arrow per source of each row."""
    lines = ["stateDiagram-v2"]
    for row in transitions:
        who = ", ".join(who_may(row))
        label = f"/{row.command.value}"
        if row.variant is AcceptMode.SELF:
            label += " --self"
        elif row.variant is AcceptMode.OVERRIDE:
            label += " --override"
        for source in row.sources:
            start = "[*]" if source is None else source.value
            renews = " renews" if source is row.target else ""
            lines.append(f"    {start} --> {row.target.value}: {label}{renews} ({who})")
    return "\n".join(lines) + "\n"


def next_steps(
    state: WorkState | None, *, renewable: bool = False
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """What can happen next from `state`: (command as typed, who may run it), in table order.

    The rows that renew an acceptance count only when it no longer holds (`renewable`).
    """
    steps = []
    for row in TRANSITIONS:
        if state in row.sources and (renewable or row.target not in row.sources):
            label = f"/{row.command.value}"
            if row.variant is AcceptMode.SELF:
                label += " --self"
            elif row.variant is AcceptMode.OVERRIDE:
                label += " --override REASON"
            steps.append((label, who_may(row)))
    return tuple(steps)


def who_may(row: Transition) -> tuple[str, ...]:
    """Who may run a row, as people read it: `claimant holding runner` for a backed relation."""
    return tuple(
        f"{q.value} holding {row.backed_by.value}"
        if row.backed_by is not None and not isinstance(q, Role)
        else q.value
        for q in row.allowed
    )
