"""The stand-in's `GET /repos/{o}/{r}/commits/{sha}/pulls` answers as api.github.com does: for a
commit on the default branch the merged pull request that brought it (its merge commit or its
head), none for one pushed straight to it; for a commit off the default branch only an open pull
request whose head it is (a release branch's merge: none); 422 for a commit it does not have."""

from __future__ import annotations

import httpx
import pytest

from github_standin import StandinState, running_standin

MERGED, PUSHED, OPEN_HEAD, RELEASED = "a" * 40, "b" * 40, "c" * 40, "e" * 40


@pytest.mark.asyncio
async def test_the_pull_requests_of_a_commit() -> None:
    state = StandinState()
    state.add_installation(7, "acme")
    branches = {"main": PUSHED, "feature": OPEN_HEAD, "release": RELEASED}
    state.add_repository("acme/widgets", {}, branches=branches)
    state.history.add_line("acme/widgets", MERGED, PUSHED)  # main: MERGED, then PUSHED on top
    state.add_pull("acme/widgets", 2, state="closed", merged=True, merge_commit_sha=MERGED)
    released = {"state": "closed", "merged": True, "merge_commit_sha": RELEASED, "base_ref": "release"}
    state.add_pull("acme/widgets", 4, **released)
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
            assert (await client.get(f"/repos/acme/widgets/commits/{RELEASED}/pulls")).json() == []
            unknown = await client.get(f"/repos/acme/widgets/commits/{'d' * 40}/pulls")
            assert unknown.status_code == 422
            assert unknown.json()["message"].startswith("No commit found for SHA")
