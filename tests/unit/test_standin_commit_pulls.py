"""The stand-in's `GET /repos/{o}/{r}/commits/{sha}/pulls` answers as api.github.com does: the
merged pull request that brought the commit (its merge commit or its head), an open one whose
head it is, none for a commit pushed straight to a branch, 422 for a commit the repository does
not have."""

from __future__ import annotations

import httpx
import pytest

from github_standin import StandinState, running_standin

MERGED, PUSHED, OPEN_HEAD = "a" * 40, "b" * 40, "c" * 40


@pytest.mark.asyncio
async def test_the_pull_requests_of_a_commit() -> None:
    state = StandinState()
    state.add_installation(7, "acme")
    state.add_repository("acme/widgets", {}, branches={"main": PUSHED, "feature": OPEN_HEAD})
    state.add_pull("acme/widgets", 2, state="closed", merged=True, merge_commit_sha=MERGED)
    state.add_pull("acme/widgets", 3, head_ref="feature", head_sha=OPEN_HEAD)
    async with running_standin(state) as standin:
        headers = {"Authorization": f"token {state.issue_token(7)}"}
        async with httpx.AsyncClient(base_url=standin.url, headers=headers, timeout=5) as client:
            merged = await client.get(f"/repos/acme/widgets/commits/{MERGED}/pulls")
            assert merged.status_code == 200
            assert [(p["number"], p["merged_at"] is not None) for p in merged.json()] == [(2, True)]
            opened = (await client.get(f"/repos/acme/widgets/commits/{OPEN_HEAD}/pulls")).json()
            assert [(p["number"], p["state"], p["merged_at"]) for p in opened] == [(3, "open", None)]
            assert (await client.get(f"/repos/acme/widgets/commits/{PUSHED}/pulls")).json() == []
            unknown = await client.get(f"/repos/acme/widgets/commits/{'d' * 40}/pulls")
            assert unknown.status_code == 422
            assert unknown.json()["message"].startswith("No commit found for SHA")
