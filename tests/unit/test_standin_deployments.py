"""The GitHub stand-in compares commits through their graph, lists deployments and their
statuses, and takes one review per custom deployment protection rule, as api.github.com does."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx

from github_standin import Deployment, RunningStandin, StandinState, Webhooks, running_standin

REPO = "acme/widgets"
A, B, C, D = ("a" * 40, "b" * 40, "c" * 40, "d" * 40)
RULE = f"/repos/{REPO}/actions/runs/{{run}}/deployment_protection_rule"


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[tuple[RunningStandin, httpx.AsyncClient]]:
    """A stand-in with one repository whose history runs A, B, C (and D branching off A)."""
    state = StandinState()
    state.add_installation(7, "acme")
    state.add_repository(REPO)
    state.history.add_line(REPO, A, B, C)
    state.history.add_line(REPO, D, parent=A)
    async with running_standin(state) as standin:
        headers = {"Authorization": f"token {state.issue_token(7)}"}
        async with httpx.AsyncClient(base_url=standin.url, headers=headers, timeout=5) as client:
            yield standin, client


async def test_a_comparison_lists_the_commits_head_has_and_base_does_not_oldest_first() -> None:
    """A...C is ahead by B and C; C...A behind; D...C diverged from A; unknown shas are 404."""
    async with serving() as (_, client):
        ahead = (await client.get(f"/repos/{REPO}/compare/{A}...{C}")).json()
        assert (ahead["status"], ahead["ahead_by"], ahead["total_commits"]) == ("ahead", 2, 2)
        assert [c["sha"] for c in ahead["commits"]] == [B, C]
        behind = (await client.get(f"/repos/{REPO}/compare/{C}...{A}")).json()
        assert (behind["status"], behind["behind_by"], behind["commits"]) == ("behind", 2, [])
        diverged = (await client.get(f"/repos/{REPO}/compare/{D}...{C}")).json()
        assert (diverged["status"], diverged["merge_base_commit"]["sha"]) == ("diverged", A)
        assert (await client.get(f"/repos/{REPO}/compare/{A}...{'9' * 40}")).status_code == 404


async def test_a_paged_comparison_names_the_next_page_in_its_link_header() -> None:
    """per_page=1: one commit a page, the next page in Link, the same total."""
    async with serving() as (_, client):
        first = await client.get(f"/repos/{REPO}/compare/{A}...{C}", params={"per_page": 1})
        assert [c["sha"] for c in first.json()["commits"]] == [B]
        assert 'rel="next"' in first.headers["Link"]
        second = await client.get(f"/repos/{REPO}/compare/{A}...{C}", params={"per_page": 1, "page": 2})
        assert [c["sha"] for c in second.json()["commits"]] == [C]
        assert second.json()["total_commits"] == 2


async def test_deployments_are_listed_newest_first_with_their_statuses() -> None:
    """A deployment a status webhook told of is listed for its environment, its statuses newest first."""
    async with serving() as (standin, client):
        hooks = Webhooks(standin.state, standin.url)
        repository = standin.state.repositories[REPO]
        hooks.deployment_status(repository, Deployment(11, B), "in_progress")
        hooks.deployment_status(repository, Deployment(11, B), "success")
        hooks.deployment_status(repository, Deployment(12, C, environment="staging"), "success")
        listed = (await client.get(f"/repos/{REPO}/deployments", params={"environment": "production"})).json()
        assert [(d["id"], d["sha"]) for d in listed] == [(11, B)]
        statuses = (await client.get(f"/repos/{REPO}/deployments/11/statuses")).json()
        assert [s["state"] for s in statuses] == ["success", "in_progress"]
        assert (await client.get(f"/repos/{REPO}/deployments/99/statuses")).status_code == 404


async def test_a_protection_rule_takes_one_answer_and_refuses_a_second() -> None:
    """204 for the first review; 422 for the next (already answered); 404 for a run without a rule."""
    async with serving() as (standin, client):
        hooks = Webhooks(standin.state, standin.url)
        payload = hooks.deployment_protection_rule(standin.state.repositories[REPO], Deployment(13, C), 555)
        assert payload["deployment_callback_url"].endswith(RULE.format(run=555))
        review = {"environment_name": "production", "state": "approved", "comment": "ok"}
        assert (await client.post(RULE.format(run=555), json=review)).status_code == 204
        assert (await client.post(RULE.format(run=555), json=review)).status_code == 422
        assert standin.state.history.answers(REPO, 555) == [review]
        assert (await client.post(RULE.format(run=556), json=review)).status_code == 404


async def test_a_review_without_an_environment_or_a_valid_state_is_refused() -> None:
    """422 for a body GitHub's description refuses; the rule still waits for its answer."""
    async with serving() as (standin, client):
        hooks = Webhooks(standin.state, standin.url)
        hooks.deployment_protection_rule(standin.state.repositories[REPO], Deployment(14, C), 557)
        assert (await client.post(RULE.format(run=557), json={"state": "approved"})).status_code == 422
        bad = {"environment_name": "production", "state": "maybe"}
        assert (await client.post(RULE.format(run=557), json=bad)).status_code == 422
        other = {"environment_name": "staging", "state": "approved"}
        assert (await client.post(RULE.format(run=557), json=other)).status_code == 422
        assert standin.state.history.answers(REPO, 557) == []
