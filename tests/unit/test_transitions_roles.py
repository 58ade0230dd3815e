"""`deciding_roles`: when one ordered list of roles decides a command in every state, resolving
may stop at the first role held; never for commands whose rows differ or that need a relation."""

from __future__ import annotations

from policies.commands import Accept, AcceptMode, Claim, Deliver, Draft, Publish, Reopen, SendBack
from policies.states import Role
from policies.transitions import deciding_roles, roles_in_rows


def test_commands_decided_by_one_ordered_list_of_roles_name_it() -> None:
    """`/publish`, `/draft`: requester then task_owner; `--override`: maintainer then release owner."""
    assert deciding_roles(Publish()) == (Role.REQUESTER, Role.TASK_OWNER)
    assert deciding_roles(Draft()) == (Role.REQUESTER, Role.TASK_OWNER)
    assert deciding_roles(Claim()) == (Role.RUNNER,)
    assert deciding_roles(SendBack("x")) == (Role.REVIEWER,)
    assert deciding_roles(Accept(mode=AcceptMode.OVERRIDE, reason="x")) == (
        Role.REPOSITORY_MAINTAINER,
        Role.RELEASE_OWNER,
    )


def test_commands_whose_rows_differ_or_need_a_relation_resolve_every_role() -> None:
    """`/reopen` (its rows allow other people by state), `/deliver` (the claimant, backed by runner)."""
    assert deciding_roles(Reopen("x")) is None
    assert deciding_roles(Deliver()) is None
    assert roles_in_rows(Reopen("x")) == {Role.REVIEWER, Role.REPOSITORY_MAINTAINER}
