"""The GitHub stand-in renames and transfers a repository as github.com does: the id stays, the
old name redirects to it until reused, and what belongs to the repository goes with it."""

from __future__ import annotations

import pytest

from tests.unit.test_github_standin import serving


@pytest.mark.asyncio
async def test_a_renamed_repository_keeps_its_id_and_its_old_name_answers_301_until_reused() -> None:
    """As on GitHub: the old name redirects to /repositories/{id} (which answers the repository),
    its issues' paths too; a new repository that takes the name has another id and answers itself."""
    async with serving() as (standin, client):
        old = standin.state.repositories["acme/widgets"]
        standin.state.rename_repository("acme/widgets", "acme/gadgets")
        moved = await client.get("/repos/acme/widgets/issues/1")
        assert moved.status_code == 301
        assert moved.headers["Location"].endswith(f"/repositories/{old.id}/issues/1")
        by_id = await client.get(f"/repositories/{old.id}")
        assert by_id.status_code == 200 and by_id.json()["full_name"] == "acme/gadgets"
        reused = standin.state.add_repository("acme/widgets")
        answer = await client.get("/repos/acme/widgets")
        assert answer.status_code == 200 and answer.json()["id"] == reused.id != old.id


@pytest.mark.asyncio
async def test_a_renamed_repositorys_issue_comments_and_check_runs_go_with_it() -> None:
    """An issue's comments are listed under the new name (and found by id there), its check runs
    are on its commits there, and a PR elsewhere from it names it anew as its head."""
    async with serving() as (standin, client):
        state = standin.state
        written = state.add_comment("acme/widgets", 1, "Before the rename")
        run = state.add_check_run("acme/widgets", "tests", "a" * 40, conclusion="success")
        state.add_repository("acme/upstream")
        from_it = state.add_pull("acme/upstream", 3, head_repo="acme/widgets")
        state.rename_repository("acme/widgets", "acme/gadgets")
        listed = await client.get("/repos/acme/gadgets/issues/1/comments")
        assert listed.status_code == 200 and [c["id"] for c in listed.json()] == [written.id]
        assert (await client.get(f"/repos/acme/gadgets/issues/comments/{written.id}")).status_code == 200
        assert (run.repo, from_it.head_repo) == ("acme/gadgets", "acme/gadgets")
