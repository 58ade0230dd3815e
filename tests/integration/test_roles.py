"""Roles resolved through the GitHub API (respx): teams, logins, the permission fallback."""

from __future__ import annotations

import httpx
import pytest
import respx

from app.github.client import GitHubClient
from app.github.config import parse_repository_config
from app.github.reads import RolesAdapter
from app.github.roles import CannotVerify, RoleResolver, roles_from_permission
from handlers.ports import RoleEntry
from policies.states import Role
from tests.fakes import GITHUB_API

REPO = "acme/web"
MEMBERSHIP = f"{GITHUB_API}/orgs/acme/teams/{{team}}/memberships/{{login}}"
PERMISSION = f"{GITHUB_API}/repos/{REPO}/collaborators/{{login}}/permission"


def membership(team: str, login: str, state: str | None, status: int = 200) -> None:
    """GitHub's answer for one team membership (None: 404, not a member)."""
    body = {"state": state, "role": "member", "url": "..."} if state else {"message": "Not Found"}
    respx.get(MEMBERSHIP.format(team=team, login=login)).mock(
        return_value=httpx.Response(status if state else 404, json=body)
    )


def permission(login: str, role_name: str, legacy: str) -> None:
    """GitHub's answer for a collaborator's permission."""
    respx.get(PERMISSION.format(login=login)).mock(
        return_value=httpx.Response(
            200, json={"permission": legacy, "role_name": role_name, "user": {"login": login}}
        )
    )


@pytest.mark.parametrize(
    ("role_name", "legacy", "expected"),
    [
        ("admin", "admin", set(Role)),
        ("maintain", "write", set(Role)),
        ("write", "write", {Role.REQUESTER, Role.TASK_OWNER, Role.RUNNER, Role.REVIEWER}),
        ("triage", "read", {Role.REQUESTER}),
        ("read", "read", set()),
    ],
)
async def test_without_a_file_roles_follow_the_repository_permission(
    github: GitHubClient, role_name: str, legacy: str, expected: set[Role]
) -> None:
    """SPEC's fallback, read from role_name (the legacy field folds maintain and triage away)."""
    permission("sam", role_name, legacy)
    roles = await RoleResolver(github, 7, REPO).roles("sam", parse_repository_config(None).roles)
    assert roles == expected


async def test_only_an_active_team_membership_counts(github: GitHubClient) -> None:
    """active grants the role; pending and not-a-member do not."""
    config = parse_repository_config('roles:\n  reviewer: ["@acme/reviewers"]\n')
    membership("reviewers", "rita", "active")
    membership("reviewers", "pat", "pending")
    membership("reviewers", "nora", None)
    for login in ("rita", "pat", "nora"):
        permission(login, "read", "read")
    resolver = RoleResolver(github, 7, REPO)
    assert Role.REVIEWER in await resolver.roles("rita", config.roles)
    assert Role.REVIEWER not in await resolver.roles("pat", config.roles)
    assert Role.REVIEWER not in await resolver.roles("nora", config.roles)


async def test_a_role_listed_as_empty_means_nobody_even_an_admin(github: GitHubClient) -> None:
    """`[]` is nobody; a role the file leaves out falls back to the permission."""
    config = parse_repository_config("roles:\n  release_owner: []\n")
    permission("ada", "admin", "admin")
    roles = await RoleResolver(github, 7, REPO).roles("ada", config.roles)
    assert Role.RELEASE_OWNER not in roles and Role.REPOSITORY_MAINTAINER in roles


async def test_a_bot_named_by_login_holds_the_role(github: GitHubClient) -> None:
    """Logins match case-insensitively, `[bot]` suffix included; no API call needed."""
    config = parse_repository_config(
        'roles:\n  runner: ["Coder-Bot[bot]"]\n  requester: []\n  task_owner: []\n  reviewer: []\n'
        "  repository_maintainer: []\n  release_owner: []\n"
    )
    assert await RoleResolver(github, 7, REPO).roles("coder-bot[bot]", config.roles) == {Role.RUNNER}


async def test_a_403_on_team_membership_is_cannot_verify_not_a_no(github: GitHubClient) -> None:
    """Without the members permission the resolver says so instead of guessing."""
    config = parse_repository_config('roles:\n  reviewer: ["@acme/reviewers"]\n')
    respx.get(MEMBERSHIP.format(team="reviewers", login="rita")).mock(
        return_value=httpx.Response(403, json={"message": "Resource not accessible by integration"})
    )
    permission("rita", "write", "write")
    with pytest.raises(CannotVerify, match="members"):
        await RoleResolver(github, 7, REPO).roles("rita", config.roles)


def test_unknown_permissions_grant_nothing() -> None:
    """A custom repository role railyard does not know is treated as no role."""
    assert roles_from_permission("custom-auditor") == frozenset()


async def test_first_only_stops_asking_once_a_role_is_held(github: GitHubClient) -> None:
    """With `first_only`, a requester's task_owner team is never asked (a 404 GitHub would count)."""
    config = parse_repository_config(
        'roles:\n  requester: ["@acme/product"]\n  task_owner: ["@acme/leads"]\n'
    )
    membership("product", "rachel", "active")
    leads = respx.get(MEMBERSHIP.format(team="leads", login="rachel")).mock(return_value=httpx.Response(404))
    among = (Role.REQUESTER, Role.TASK_OWNER)
    resolver = RoleResolver(github, 7, REPO)
    assert await resolver.roles("rachel", config.roles, among, first_only=True) == {Role.REQUESTER}
    assert not leads.called
    assert await RoleResolver(github, 7, REPO).roles("rachel", config.roles, among) == {Role.REQUESTER}
    assert leads.called


ORG_MEMBER = f"{GITHUB_API}/orgs/acme/members/{{login}}"
TEAMS = "roles:\n  requester: ['@acme/product']\n  task_owner: ['@acme/leads', '@acme/other']\n"


async def test_an_outsider_not_in_the_organization_costs_one_call_for_all_its_teams(
    github: GitHubClient,
) -> None:
    """Asked as a known outsider, a stranger to the organization is answered by one call, no team asked."""
    respx.get(ORG_MEMBER.format(login="mallory")).mock(return_value=httpx.Response(404, json={}))
    teams = respx.get(url__regex=r".*/teams/.*/memberships/mallory$")
    roles = parse_repository_config(TEAMS).roles
    resolver = RoleResolver(github, 7, REPO)
    held = await resolver.roles("mallory", roles, [Role.REQUESTER, Role.TASK_OWNER], outsider=True)
    assert held == frozenset() and not teams.called


async def test_an_outsider_hint_never_hides_a_role_the_account_holds_now(github: GitHubClient) -> None:
    """An account since added to a team is found: the organization says member, and the teams are asked."""
    respx.get(ORG_MEMBER.format(login="nora")).mock(return_value=httpx.Response(204))
    membership("product", "nora", None)
    membership("leads", "nora", "active")
    roles = parse_repository_config(TEAMS).roles
    resolver = RoleResolver(github, 7, REPO)
    held = await resolver.roles("nora", roles, [Role.REQUESTER, Role.TASK_OWNER], outsider=True)
    assert held == frozenset({Role.TASK_OWNER})


async def test_an_outsider_hint_the_organization_will_not_answer_asks_the_teams(github: GitHubClient) -> None:
    """GitHub's 302 (requester outside the organization) says nothing: the teams are asked, the role found."""
    public = f"{GITHUB_API}/orgs/acme/public_members/nora"
    respx.get(ORG_MEMBER.format(login="nora")).mock(
        return_value=httpx.Response(302, headers={"Location": public})
    )
    membership("product", "nora", None)
    membership("leads", "nora", "active")
    roles = parse_repository_config(TEAMS).roles
    resolver = RoleResolver(github, 7, REPO)
    held = await resolver.roles("nora", roles, [Role.REQUESTER, Role.TASK_OWNER], outsider=True)
    assert held == frozenset({Role.TASK_OWNER})


# -- lists of accounts outside the roles (`agents`) ------------------------------------------


AGENTS = (RoleEntry(login="Coder-Bot"), RoleEntry(org="acme", slug="agents"))


async def test_an_account_named_in_a_list_is_listed_without_asking_github(github: GitHubClient) -> None:
    """A login in the list counts whatever its case, and no team is asked about it."""
    teams = respx.get(url__regex=r".*/teams/.*/memberships/.*$")

    assert await RolesAdapter(github).listed(7, REPO, "coder-bot", AGENTS)
    assert not teams.called


async def test_only_an_active_member_of_a_listed_team_is_listed(github: GitHubClient) -> None:
    """An active member of a listed team is listed; a pending member and a stranger are not."""
    membership("agents", "agent-smith", "active")
    membership("agents", "pat", "pending")
    membership("agents", "nora", None)
    adapter = RolesAdapter(github)

    assert await adapter.listed(7, REPO, "agent-smith", AGENTS)
    assert not await adapter.listed(7, REPO, "pat", AGENTS)
    assert not await adapter.listed(7, REPO, "nora", AGENTS)
    assert not await adapter.listed(7, REPO, "nora", ())


async def test_a_listed_team_github_will_not_show_is_cannot_verify_not_a_no(github: GitHubClient) -> None:
    """Without the members permission, whether an account is a listed agent is not guessed."""
    respx.get(MEMBERSHIP.format(team="agents", login="rita")).mock(
        return_value=httpx.Response(403, json={"message": "Resource not accessible by integration"})
    )

    with pytest.raises(CannotVerify, match="members"):
        await RolesAdapter(github).listed(7, REPO, "rita", AGENTS)


STRANGER_TEAMS = TEAMS.replace("['@acme/product']", "['@acme/product', 'nora']")


async def test_an_account_asked_as_a_stranger_costs_no_team_read(github: GitHubClient) -> None:
    """Asked as a known role-less account (its roles asked in full within ten minutes), an
    account is taken to be in none of the teams, which are not asked, whether it is a member of
    the organization or not: its requests cost no call per team (SPEC: at most one call a
    request). A login the list names still counts."""
    teams = respx.get(url__regex=r".*/teams/.*/memberships/.*$")
    members = respx.get(url__regex=r".*/orgs/acme/members/.*$")
    roles = parse_repository_config(STRANGER_TEAMS).roles
    among = [Role.REQUESTER, Role.TASK_OWNER]
    assert await RoleResolver(github, 7, REPO).roles("mallory", roles, among, stranger=True) == frozenset()
    assert await RoleResolver(github, 7, REPO).roles("nora", roles, among, stranger=True) == {Role.REQUESTER}
    assert not teams.called and not members.called
