"""Who is an agent (SPEC *Acceptance that stays true*, `acceptance.by`): an account of type
`Bot`, or one `.github/railyard.yml`'s `agents:` names: a team it is an active member of, or a
login, compared without regard to case.

A login is only what the account is called now (SPEC *Identity*). So that an agent listed by
login stays one when it renames, the account id behind a listed login is remembered the first
time that account acts under it (`remember_listed`), per installation, and an account whose id
was remembered for a login `agents:` still lists is an agent whatever its login is now. Taking
the login out of `agents:` takes that away; whoever holds the listed login is an agent too.
"""

from __future__ import annotations

from handlers.ports import Rules, Services, UnitOfWork


def listed_logins(rules: Rules) -> frozenset[str]:
    """The logins (casefolded) `agents:` names itself, its teams aside."""
    return frozenset(e.login.casefold() for e in rules.agents if e.login is not None)


async def is_agent(
    services: Services,
    installation_id: int,
    repository: str,
    login: str,
    account_id: int,
    is_bot: bool,
    rules: Rules,
) -> bool:
    """Whether the account is an agent: a `Bot` account, one `agents:` names by its login now or
    by a login it was seen acting under (one read of the store), or a member of a team it names
    (asked of GitHub as roles are; `CannotVerify` when GitHub will not say)."""
    if is_bot:
        return True
    if not rules.agents:
        return False
    logins = listed_logins(rules)
    if login.casefold() in logins:
        return True
    if logins:
        async with services.store.read() as reads:
            if await reads.agent_logins(installation_id, account_id) & logins:
                return True
    return await services.roles.listed(installation_id, repository, login, rules.agents)


async def remember_listed(
    uow: UnitOfWork, installation_id: int, login: str, account_id: int, rules: Rules, now: float
) -> None:
    """When `agents:` names `login` itself, keep (with the unit) that `account_id` acted under
    it: a rename later does not take the account off the list."""
    if login.casefold() in listed_logins(rules):
        await uow.remember_agent(installation_id, login.casefold(), account_id, now)
