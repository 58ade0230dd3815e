"""What a command by an account without a role may cost, whichever way it comes (a comment, the
API): the budgets are spent before the author's roles are asked of GitHub (SPEC *Answers that
cannot be forged or jammed*).

Every command that needs its author's roles first reserves one of the account's
`limits.outsider_requests_per_hour` in the repository (a conditional upsert: concurrent commands
by one account cannot each get a role check past its share), given back once the account is
found holding a role. An account found holding no role is marked for the hour: its later
commands also spend, with every such account, ten times that share, checked before its roles
are asked only once it is known role-less, so strangers spending the shared budget never refuse
a caller who holds a role. Its roles are asked in full again once every ten minutes (a share of
its own, whatever strangers spent), so one that has been given a role since is heard within
minutes, not after the hour; in between they are asked without a team read (it is taken to be in
none of the role lists' teams), so its requests cost the installation no call per team.
"""

from __future__ import annotations

from dataclasses import dataclass

from handlers.ports import Budgets
from policies.budgets import Budget, Repository, outsider_budgets, role_holder_budget, roles_again_budget


@dataclass(frozen=True)
class Admission:
    """`known`: found without a role here this hour; `over`: the budget spent (then nothing runs);
    `shared`: it spent one of all role-less accounts' requests (given back if it holds a role)."""

    known: bool
    over: Budget | None = None
    retry_after: int = 0
    shared: bool = False
    in_full: bool = False  # a known one's roles asked in full again (once in ten minutes)

    @property
    def outsider(self) -> bool:
        """Whether its roles are asked as a stranger's: no team read (`RoleResolver.roles`)."""
        return self.known and not self.in_full


async def admit(budgets: Budgets, account_id: int, repository: Repository, limit: int) -> Admission:
    """Reserve one role-less request of the account before its roles are asked (`repository`: its
    GitHub id, so a rename or transfer restarts no budget; `policies.budgets.Repository`)."""
    mine, everyone, roleless = outsider_budgets(repository, limit)
    retry, marked = await budgets.spend_and_count(account_id, mine, roleless)
    if retry is not None:
        return Admission(False, mine, retry)
    if marked == 0:
        return Admission(False)
    again = await budgets.spend(account_id, roles_again_budget(repository))
    retry = await budgets.spend(0, everyone)
    if retry is None:
        return Admission(True, shared=True, in_full=again is None)
    if again is not None:  # nothing asked: its own share is not spent waiting
        await budgets.refund(account_id, mine)
        return Admission(True, everyone, min(retry, again))
    return Admission(True, in_full=True)


async def settle(
    budgets: Budgets,
    account_id: int,
    repository: Repository,
    limit: int,
    admission: Admission,
    roleless: bool | None,
    *,
    asked: bool = False,
) -> None:
    """After the command: `roleless` True when the role check found no role (marked for the hour,
    and the shared budget spent if it was not already), False when it holds one, None when its
    roles were never asked (both give the reservation back, unless GitHub was `asked` something
    else for it, such as the pull request a comment was written on: that request is spent)."""
    mine, everyone, marker = outsider_budgets(repository, limit)
    if roleless:
        if not admission.known:  # marked once (a known one is marked already)
            await budgets.spend(account_id, marker)
            await budgets.spend(0, everyone)
            await budgets.spend(account_id, roles_again_budget(repository))  # asked in full: now
        return
    if roleless is None and asked:
        return
    await budgets.refund(account_id, mine)
    if admission.shared:
        await budgets.refund(0, everyone)
    if roleless is False:
        await budgets.spend(account_id, role_holder_budget(repository))  # seen holding one this hour
        if admission.known:  # found holding a role since: no stranger any more
            await budgets.refund(account_id, marker)
