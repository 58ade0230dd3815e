"""The stand-in's organization membership check answers as api.github.com does."""

from __future__ import annotations

import httpx
import pytest

from github_standin import StandinState, running_standin


@pytest.mark.asyncio
async def test_org_membership_is_204_404_or_a_redirect_for_a_requester_outside_the_organization() -> None:
    """The installation's own organization answers 204 for a member and 404 for anyone else;
    another organization answers 302 to its public members, as GitHub answers a non-member."""
    state = StandinState()
    state.add_installation(7, "acme")
    state.add_installation(8, "octo")
    state.org_members.add(("acme", "max"))
    async with running_standin(state) as standin:
        headers = {"Authorization": f"token {state.issue_token(7)}"}
        async with httpx.AsyncClient(base_url=standin.url, headers=headers, timeout=5) as client:
            member, stranger, elsewhere = [
                await client.get(path)
                for path in ("/orgs/acme/members/max", "/orgs/acme/members/nora", "/orgs/octo/members/max")
            ]
    assert (member.status_code, stranger.status_code) == (204, 404)
    assert elsewhere.status_code == 302
    assert elsewhere.headers["Location"].endswith("/orgs/octo/public_members/max")
