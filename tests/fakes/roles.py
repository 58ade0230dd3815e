"""`handlers.ports.Roles`: the roles a test gives each login, or GitHub refusing to say."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from handlers.errors import CannotVerify
from handlers.ports import RoleEntry, Rules
from policies.states import Role


@dataclass
class FakeRoles:
    """Roles per login (case-insensitive, as GitHub logins are); `unverifiable` logins raise.

    `teams` holds each team's active members, by (org, slug): what `listed` asks of a team entry.
    """

    by_login: Mapping[str, frozenset[Role]] = field(default_factory=dict)
    unverifiable: set[str] = field(default_factory=set)
    asked: list[tuple[str, frozenset[Role]]] = field(default_factory=list)
    teams: Mapping[tuple[str, str], set[str]] = field(default_factory=dict)

    async def roles(
        self,
        installation_id: int,
        repository: str,
        login: str,
        rules: Rules,
        among: Iterable[Role],
        *,
        first_only: bool = False,
        outsider: bool = False,
    ) -> frozenset[Role]:
        """The roles given for `login`, of `among` (the first held only, if asked); `CannotVerify`
        for an `unverifiable` login."""
        order = tuple(among)
        self.asked.append((login, frozenset(order)))
        if login.casefold() in {name.casefold() for name in self.unverifiable}:
            raise CannotVerify(f"GitHub did not say whether @{login} is in a team")
        folded = {name.casefold(): roles for name, roles in self.by_login.items()}
        held = folded.get(login.casefold(), frozenset())
        if first_only:
            return frozenset(next(([r] for r in order if r in held), []))
        return held & frozenset(order)

    async def listed(
        self, installation_id: int, repository: str, login: str, entries: tuple[RoleEntry, ...]
    ) -> bool:
        """Whether `entries` name `login` or a team in `teams` it is a member of (case-insensitive);
        `CannotVerify` for an `unverifiable` login once a team must be asked, as GitHub would."""
        folded = login.casefold()
        if any(e.login is not None and e.login.casefold() == folded for e in entries):
            return True
        if not any(e.is_team for e in entries):
            return False
        if folded in {name.casefold() for name in self.unverifiable}:
            raise CannotVerify(f"GitHub did not say whether @{login} is in a team")
        members = {
            (o.casefold(), t.casefold()): {m.casefold() for m in ms} for (o, t), ms in self.teams.items()
        }
        return any(
            folded in members.get((str(e.org).casefold(), str(e.slug).casefold()), set())
            for e in entries
            if e.is_team
        )
