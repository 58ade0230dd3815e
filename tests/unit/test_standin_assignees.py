"""The GitHub stand-in's assignee and user-by-id endpoints answer as api.github.com does."""

from __future__ import annotations

import httpx
import pytest

from github_standin import StandinState, running_standin


@pytest.mark.asyncio
async def test_assignees_are_removed_with_200_and_the_issue_as_github_does() -> None:
    """DELETE assignees answers 200 with the issue, skips a login not assigned, 404s an unknown
    issue and needs `issues: write`."""
    state = StandinState()
    state.add_installation(7, "acme")
    state.add_repository("acme/widgets", {})
    state.add_issue("acme/widgets", 1, title="Ship it")
    headers = {"Authorization": f"token {state.issue_token(7)}"}
    async with (
        running_standin(state) as standin,
        httpx.AsyncClient(base_url=standin.url, headers=headers, timeout=5) as client,
    ):
        standin.state.repositories["acme/widgets"].issues[1].assignees[:] = ["rita", "cody"]
        url = "/repos/acme/widgets/issues/1/assignees"
        removed = await client.request("DELETE", url, json={"assignees": ["cody", "nobody"]})
        assert removed.status_code == 200
        assert [a["login"] for a in removed.json()["assignees"]] == ["rita"]
        assert standin.state.repositories["acme/widgets"].issues[1].assignees == ["rita"]
        again = await client.request("DELETE", url, json={"assignees": ["cody"]})
        assert (again.status_code, again.json()["number"]) == (200, 1)
        missing = "/repos/acme/widgets/issues/99/assignees"
        assert (await client.request("DELETE", missing, json={"assignees": ["rita"]})).status_code == 404
        standin.state.installations[7].permissions["issues"] = "read"
        refused = await client.request("DELETE", url, json={"assignees": ["rita"]})
        assert refused.status_code == 403
        assert standin.state.repositories["acme/widgets"].issues[1].assignees == ["rita"]


@pytest.mark.asyncio
async def test_an_account_is_found_by_its_id_under_the_login_it_has_now() -> None:
    """GET /user/{id} answers the account renamed since with its new login, 404s an unknown id."""
    state = StandinState()
    state.add_installation(7, "acme")
    rita = state.user_id("rita")
    state.rename_user("rita", "rita2")
    state.register_user("rita")
    headers = {"Authorization": f"token {state.issue_token(7)}"}
    async with (
        running_standin(state) as standin,
        httpx.AsyncClient(base_url=standin.url, headers=headers, timeout=5) as client,
    ):
        found = await client.get(f"/user/{rita}")
        assert (found.status_code, found.json()["login"], found.json()["id"]) == (200, "rita2", rita)
        assert (await client.get("/user/424242424")).status_code == 404
