"""The work rail's publish guards (SPEC: "Commands"), and which roles a command is worth resolving."""

from __future__ import annotations

import pytest

from policies.commands import Accept, AcceptMode, Claim, Command, Deliver, Publish, Reopen
from policies.model import Ticket
from policies.refusals import RefusalCode
from policies.states import Role, WorkState
from policies.transitions import roles_in_rows
from tests.unit.work_walk import (
    DESCRIPTION,
    KEY,
    OLIVIA_PUBLISHING,
    context,
    events_of,
    refusal_code,
    run,
    ticket_in,
)

# -- publish -----------------------------------------------------------------------------


@pytest.mark.parametrize("state", [None, WorkState.DRAFT], ids=["no-ticket", "draft"])
@pytest.mark.parametrize("description", ["", "  \n\t "], ids=["empty", "blank"])
def test_publish_needs_a_non_empty_description(state: WorkState | None, description: str) -> None:
    """An issue with an empty body cannot be published."""
    publish = Publish(description=description)
    ticket = ticket_in(state)
    assert refusal_code(ticket, publish, context(OLIVIA_PUBLISHING, 10)) is RefusalCode.MISSING_DESCRIPTION


@pytest.mark.parametrize(
    ("first_assignee", "owner"),
    [("ada", "ada"), (None, "olivia")],
    ids=["first-assignee", "publisher-without-assignee"],
)
def test_publish_makes_the_first_assignee_or_else_the_publisher_the_owner(
    first_assignee: str | None, owner: str
) -> None:
    """The owner is the first assignee at publish time, else the publisher."""
    publish = Publish(description=DESCRIPTION, first_assignee=first_assignee)
    ticket = run(Ticket(KEY), publish, context(OLIVIA_PUBLISHING, 1))
    assert ticket.work is WorkState.OPEN
    assert ticket.owner == owner


def test_publish_records_the_issues_labels_for_the_report() -> None:
    """The labels the issue carries at publish time are kept on `published`, once each and sorted."""
    publish = Publish(description=DESCRIPTION, labels=("bug", "area:upload", "bug"))
    [published] = [
        e
        for e in events_of(Ticket(KEY), publish, context(OLIVIA_PUBLISHING, 1))
        if e.type.value == "published"
    ]
    assert published.data["labels"] == ["area:upload", "bug"]
    [bare] = [
        e
        for e in events_of(Ticket(KEY), Publish(description=DESCRIPTION), context(OLIVIA_PUBLISHING, 1))
        if e.type.value == "published"
    ]
    assert "labels" not in bare.data


@pytest.mark.parametrize(
    ("command", "roles"),
    [
        (Claim(), {Role.RUNNER}),
        (Accept(), {Role.REVIEWER}),
        (Accept(mode=AcceptMode.OVERRIDE, reason="r"), {Role.REPOSITORY_MAINTAINER, Role.RELEASE_OWNER}),
        (Deliver(summary="s", commit="c"), {Role.RUNNER}),  # the claimant relation, backed by runner
        (Reopen(reason="r"), {Role.REVIEWER, Role.REPOSITORY_MAINTAINER}),
    ],
)
def test_only_the_roles_a_commands_rows_allow_are_worth_resolving(command: Command, roles: set[Role]) -> None:
    """Resolving these (and no others) cannot change a decision: no row asks for any other role."""
    assert roles_in_rows(command) == roles
