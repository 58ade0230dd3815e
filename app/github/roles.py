"""Who holds which role, resolved when a command executes.

Roles named in `.github/railyard.yml` are checked against logins and team memberships (only
an `active` membership counts); a role the file does not name falls back to the actor's
repository permission. `author_association` in a payload grants nothing. When GitHub will
not tell (the app lacks a permission), that is `CannotVerify`: never a silent yes or no.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from app.github.client import GitHubClient, GitHubError, NotFound, PermissionDenied
from handlers.errors import CannotVerify
from policies.model import same_login
from policies.states import Role

__all__ = ["CannotVerify", "RoleResolver", "roles_from_permission"]
ALL_ROLES = frozenset(Role)
_BY_PERMISSION: dict[str, frozenset[Role]] = {
    "admin": ALL_ROLES,
    "maintain": ALL_ROLES,
    "write": frozenset({Role.REQUESTER, Role.TASK_OWNER, Role.RUNNER, Role.REVIEWER}),
    "triage": frozenset({Role.REQUESTER}),
    "read": frozenset(),
    "none": frozenset(),
}


class Named(Protocol):
    """An entry of a role list (the config file's, or the rules handlers see)."""

    @property
    def login(self) -> str | None: ...
    @property
    def org(self) -> str | None: ...
    @property
    def slug(self) -> str | None: ...
    @property
    def is_team(self) -> bool: ...


RoleLists = Mapping[Role, Sequence[Named]]


def roles_from_permission(permission: str) -> frozenset[Role]:
    """SPEC's fallback: admin and maintain hold every role, write four, triage one, read none."""
    return _BY_PERMISSION.get(permission, frozenset())


class RoleResolver:
    """Resolves one actor's roles in one repository; each team and the permission asked once."""

    def __init__(self, github: GitHubClient, installation_id: int, repository: str) -> None:
        self._github = github
        self._installation_id = installation_id
        self._repository = repository
        self._teams: dict[tuple[str, str, str], bool] = {}
        self._permission: dict[str, str] = {}

    async def roles(
        self,
        login: str,
        role_lists: RoleLists,
        among: Iterable[Role] | None = None,
        *,
        first_only: bool = False,
        outsider: bool = False,
        stranger: bool = False,
    ) -> frozenset[Role]:
        """The roles `login` holds now under the role lists in force (of `among`, when only those
        matter; with `first_only`, just the first of `among`, in its order, that it holds).

        `outsider`: the account is likely to hold no role here, so each organization whose teams
        would be asked is asked first whether the account is a member at all: one call answers for
        all of that organization's teams (no team has a member the organization lacks).

        `stranger`: the account was found holding no role here within the last ten minutes
        (`handlers.outsiders`): it is taken to be in none of the role lists' teams, which are not
        asked (logins listed are still compared, the permission still asked where a role falls
        back to it). Its roles are asked in full again once in ten minutes, so a team given to it
        shows then, and its requests in between cost no team read.
        """
        held: set[Role] = set()
        order = (
            list(among) if first_only and among is not None else [r for r in Role if r in set(among or Role)]
        )
        named = [e for r in order for e in role_lists.get(r) or ()]
        if stranger:
            for entry in (e for e in named if e.is_team):
                self._teams[(str(entry.org).casefold(), str(entry.slug).casefold(), login.casefold())] = False
        elif outsider:
            await self._strangers_to_orgs(login, named)
        for role in order:
            entries = role_lists.get(role)
            if entries is None:
                if role in roles_from_permission(await self._permission_of(login)):
                    held.add(role)
            elif await self._named(login, entries):
                held.add(role)
            if held and first_only:
                break
        return frozenset(held)

    async def listed(self, login: str, entries: Sequence[Named]) -> bool:
        """Whether `entries` name `login` (case-insensitively) or a team it is an `active` member of;
        `CannotVerify` when GitHub will not say (logins are compared first, without a call)."""
        return await self._named(login, entries)

    async def _named(self, login: str, entries: Sequence[Named]) -> bool:
        for entry in entries:
            if entry.login is not None and same_login(entry.login, login):
                return True
        for entry in entries:
            if entry.is_team and await self._active_member(str(entry.org), str(entry.slug), login):
                return True
        return False

    async def _strangers_to_orgs(self, login: str, entries: Sequence[Named]) -> None:
        """Mark every team of an organization `login` is no member of as not its team.

        GitHub answers 204 (a member) or 404 (not one) only when the requester counts as a member
        of the organization; otherwise 302 to the public members: then nothing is known, and the
        teams are asked one by one, as without the hint."""
        teams = [(str(e.org), str(e.slug)) for e in entries if e.is_team]
        for org in {org.casefold(): org for org, _ in teams}.values():
            try:
                await self._github.call("check_org_member", self._installation_id, org=org, username=login)
            except NotFound:
                for team_org, slug in teams:
                    if team_org.casefold() == org.casefold():
                        self._teams[(team_org.casefold(), slug.casefold(), login.casefold())] = False
            except PermissionDenied:
                pass  # the teams are asked one by one, and say so if they cannot be read
            except GitHubError as error:
                if error.status != 302:
                    raise

    async def _active_member(self, org: str, slug: str, login: str) -> bool:
        key = (org.casefold(), slug.casefold(), login.casefold())
        if key not in self._teams:
            try:
                membership = await self._github.call(
                    "get_team_membership", self._installation_id, org=org, team_slug=slug, username=login
                )
            except NotFound:
                self._teams[key] = False
            except PermissionDenied as error:
                raise CannotVerify(
                    f"railyard cannot read the members of @{org}/{slug} ({error.message}); "
                    "the app needs the organization members (read) permission"
                ) from error
            else:
                self._teams[key] = isinstance(membership, dict) and membership.get("state") == "active"
        return self._teams[key]

    async def _permission_of(self, login: str) -> str:
        key = login.casefold()
        if key not in self._permission:
            try:
                answer = await self._github.call(
                    "get_permission", self._installation_id, repository=self._repository, username=login
                )
            except NotFound:
                answer = {"permission": "none"}
            except PermissionDenied as error:
                message = f"railyard cannot read @{login}'s permission here ({error.message})"
                raise CannotVerify(message) from error
            role_name = answer.get("role_name") if isinstance(answer, dict) else None
            permission = answer.get("permission") if isinstance(answer, dict) else None
            # role_name says maintain/triage; the legacy `permission` field folds them into write/read.
            self._permission[key] = role_name if role_name in _BY_PERMISSION else str(permission or "none")
        return self._permission[key]
