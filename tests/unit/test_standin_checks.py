"""The GitHub stand-in lists a commit's check runs and suites as api.github.com does, with other
apps' runs, suites held for approval and commits that share a tree."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
from githubkit import GitHub, TokenAuthStrategy

from github_standin import RunningStandin, StandinState, running_standin

REPO = "acme/widgets"
HEAD, OTHER, AMENDED = "a" * 40, "b" * 40, "c" * 40
CI_APP = 15368
RUNS = f"/repos/{REPO}/commits/{{ref}}/check-runs"
SUITES = f"/repos/{REPO}/commits/{{ref}}/check-suites"


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[tuple[RunningStandin, httpx.AsyncClient]]:
    """A stand-in with one repository whose `feature` branch is at HEAD, a CI app, and a token."""
    state = StandinState()
    state.add_installation(7, "acme")
    state.add_repository(REPO, branches={"feature": HEAD}, commits={OTHER, AMENDED})
    state.apps[CI_APP] = "github-actions"
    async with running_standin(state) as standin:
        headers = {"Authorization": f"token {state.issue_token(7)}"}
        async with httpx.AsyncClient(base_url=standin.url, headers=headers, timeout=5) as client:
            yield standin, client


async def test_a_commits_check_runs_are_only_its_own_by_sha_or_branch() -> None:
    """Runs on another commit are never listed; a branch names its head, `heads/` prefix or not."""
    async with serving() as (standin, client):
        standin.state.add_check_run(REPO, "tests", HEAD, conclusion="success", app_id=CI_APP)
        standin.state.add_check_run(REPO, "tests", OTHER, conclusion="failure", app_id=CI_APP)

        for ref in (HEAD, "feature", "heads/feature"):
            listed = (await client.get(RUNS.format(ref=ref))).json()
            assert listed["total_count"] == 1
            assert [(r["head_sha"], r["conclusion"]) for r in listed["check_runs"]] == [(HEAD, "success")]
        assert (await client.get(RUNS.format(ref=OTHER))).json()["check_runs"][0]["conclusion"] == "failure"
        assert (await client.get(RUNS.format(ref="nowhere"))).status_code == 422


async def test_another_apps_run_is_shown_as_that_apps() -> None:
    """A CI app's run carries that app, not railyard's; `app_id` lists one app's runs only."""
    async with serving() as (standin, client):
        standin.state.add_check_run(REPO, "tests", HEAD, conclusion="success", app_id=CI_APP)
        standin.state.add_check_run(REPO, "railyard", HEAD, conclusion="action_required")

        runs = (await client.get(RUNS.format(ref=HEAD))).json()["check_runs"]
        only_ci = (await client.get(RUNS.format(ref=HEAD), params={"app_id": CI_APP})).json()

        assert {r["name"]: r["app"]["slug"] for r in runs} == {
            "tests": "github-actions",
            "railyard": "railyard",
        }
        assert [r["name"] for r in only_ci["check_runs"]] == ["tests"] and only_ci["total_count"] == 1


async def test_check_runs_page_with_a_link_header_and_count_them_all() -> None:
    """`per_page` and `page` page the runs, newest first; `total_count` counts all; Link finds the rest."""
    async with serving() as (standin, client):
        for number in range(5):
            standin.state.add_check_run(REPO, f"job-{number}", HEAD, conclusion="success", app_id=CI_APP)

        first = await client.get(RUNS.format(ref=HEAD), params={"per_page": 2})
        last = await client.get(RUNS.format(ref=HEAD), params={"per_page": 2, "page": 3})

        assert first.json()["total_count"] == 5
        assert [r["name"] for r in first.json()["check_runs"]] == ["job-4", "job-3"]
        assert 'rel="next"' in first.headers["Link"] and "page=2" in first.headers["Link"]
        assert [r["name"] for r in last.json()["check_runs"]] == ["job-0"]
        assert 'rel="next"' not in last.headers["Link"] and 'rel="prev"' in last.headers["Link"]


async def test_check_runs_filter_by_name_status_and_latest_or_all() -> None:
    """`filter=latest` keeps each app's newest run of a name, `all` every run; name and status narrow them."""
    async with serving() as (standin, client):
        state = standin.state
        old = state.add_check_run(REPO, "tests", HEAD, conclusion="failure", app_id=CI_APP)
        new = state.add_check_run(REPO, "tests", HEAD, status="in_progress", app_id=CI_APP)
        ours = state.add_check_run(REPO, "tests", HEAD, conclusion="success")  # same name, another app
        state.add_check_run(REPO, "lint", HEAD, conclusion="success", app_id=CI_APP)

        def ids(answer: httpx.Response) -> list[int]:
            return [r["id"] for r in answer.json()["check_runs"]]

        latest = await client.get(RUNS.format(ref=HEAD), params={"check_name": "tests"})
        every = await client.get(RUNS.format(ref=HEAD), params={"check_name": "tests", "filter": "all"})
        done = await client.get(RUNS.format(ref=HEAD), params={"status": "completed", "filter": "all"})

        assert ids(latest) == [ours.id, new.id]
        assert ids(every) == [ours.id, new.id, old.id]
        assert old.id in ids(done) and new.id not in ids(done) and every.json()["total_count"] == 3


async def test_a_workflow_held_for_approval_is_a_completed_suite_without_runs() -> None:
    """A suite set `action_required` with no runs lists with 0 runs; an app's runs make their own suite."""
    async with serving() as (standin, client):
        state = standin.state
        held = state.add_check_suite(
            REPO, HEAD, app_id=CI_APP, status="completed", conclusion="action_required"
        )
        run = state.add_check_run(REPO, "railyard", HEAD, conclusion="success")
        state.add_check_run(REPO, "railyard", OTHER, conclusion="success")

        listed = (await client.get(SUITES.format(ref=HEAD))).json()
        suites = {s["app"]["slug"]: s for s in listed["check_suites"]}
        ours = (await client.get(RUNS.format(ref=HEAD), params={"app_id": state.app_id})).json()[
            "check_runs"
        ][0]

        assert listed["total_count"] == 2
        assert (
            suites["github-actions"]["id"] == held.id
            and suites["github-actions"]["latest_check_runs_count"] == 0
        )
        assert (suites["github-actions"]["status"], suites["github-actions"]["conclusion"]) == (
            "completed",
            "action_required",
        )
        assert (
            suites["railyard"]["latest_check_runs_count"] == 1
            and suites["railyard"]["conclusion"] == "success"
        )
        assert ours["id"] == run.id and ours["check_suite"]["id"] == suites["railyard"]["id"]
        one_app = (await client.get(SUITES.format(ref=HEAD), params={"app_id": CI_APP})).json()
        assert [s["id"] for s in one_app["check_suites"]] == [held.id]


async def test_a_suite_of_runs_follows_them_and_lets_no_failure_hide() -> None:
    """A derived suite is in progress while a run is, then takes the gravest conclusion of its newest runs."""
    async with serving() as (standin, client):
        state = standin.state
        running = state.add_check_run(REPO, "tests", HEAD, status="in_progress", app_id=CI_APP)
        state.add_check_run(REPO, "lint", HEAD, conclusion="success", app_id=CI_APP)

        async def ci_suite() -> dict[str, object]:
            answer = await client.get(SUITES.format(ref=HEAD), params={"app_id": CI_APP})
            return answer.json()["check_suites"][0]  # type: ignore[no-any-return]

        before = await ci_suite()
        running.status, running.conclusion = "completed", "failure"
        after = await ci_suite()

        assert (before["status"], before["conclusion"]) == ("in_progress", None)
        assert (after["status"], after["conclusion"], after["latest_check_runs_count"]) == (
            "completed",
            "failure",
            2,
        )


async def test_commits_can_share_a_tree_and_otherwise_have_their_own() -> None:
    """A tree set for two commits (an amended message) is what both commits show; others keep their own."""
    async with serving() as (standin, client):
        await client.post("/_standin/state", json={"repositories": []})  # the control API is up
        standin.state.repositories[REPO].trees.update({HEAD: "d" * 40, AMENDED: "d" * 40})

        trees = {
            sha: (await client.get(f"/repos/{REPO}/commits/{sha}")).json()["commit"]["tree"]["sha"]
            for sha in (HEAD, AMENDED, OTHER)
        }

        assert trees[HEAD] == trees[AMENDED] == "d" * 40
        assert trees[OTHER] not in (trees[HEAD], OTHER)


async def test_the_state_control_seeds_other_apps_runs_suites_and_shared_trees() -> None:
    """POST /_standin/state takes apps, check runs, check suites and a repository's trees."""
    state = StandinState()
    state.add_installation(7, "acme")
    async with running_standin(state) as standin:
        async with httpx.AsyncClient(base_url=standin.url, timeout=5) as control:
            tools = {"full_name": "acme/tools", "commits": [HEAD, AMENDED]}
            build = {"repo": "acme/tools", "name": "build", "head_sha": HEAD, "app_id": 99}
            held = {"repo": "acme/tools", "head_sha": AMENDED, "app_id": CI_APP, "status": "completed"}
            seed = {
                "apps": [{"id": 99, "slug": "circle-ci"}],
                "repositories": [tools | {"trees": {AMENDED: "e" * 40, HEAD: "e" * 40}}],
                "check_runs": [build | {"conclusion": "failure"}],
                "check_suites": [held | {"conclusion": "action_required"}],
            }
            assert (await control.post("/_standin/state", json=seed)).status_code == 200
        headers = {"Authorization": f"token {state.issue_token(7)}"}
        async with httpx.AsyncClient(base_url=standin.url, headers=headers, timeout=5) as client:
            run = (await client.get(f"/repos/acme/tools/commits/{HEAD}/check-runs")).json()["check_runs"][0]
            suites = (await client.get(f"/repos/acme/tools/commits/{AMENDED}/check-suites")).json()
            tree = (await client.get(f"/repos/acme/tools/commits/{AMENDED}")).json()["commit"]["tree"]["sha"]

    assert (run["name"], run["conclusion"], run["app"]["slug"]) == ("build", "failure", "circle-ci")
    assert [s["conclusion"] for s in suites["check_suites"]] == ["action_required"]
    assert tree == "e" * 40


async def test_githubkit_parses_the_check_listings() -> None:
    """githubkit validates the check-run and check-suite listings against GitHub's schema."""
    async with serving() as (standin, _):
        state = standin.state
        state.add_check_run(REPO, "tests", HEAD, conclusion="success", app_id=CI_APP)
        state.add_check_suite(REPO, HEAD, app_id=99, status="completed", conclusion="action_required")
        github = GitHub(TokenAuthStrategy(state.issue_token(7)), base_url=standin.url, auto_retry=False)
        rest = github.rest

        runs = (await rest.checks.async_list_for_ref("acme", "widgets", HEAD)).parsed_data
        suites = (await rest.checks.async_list_suites_for_ref("acme", "widgets", "feature")).parsed_data

        assert runs.total_count == 1 and runs.check_runs[0].app is not None
        assert {s.latest_check_runs_count for s in suites.check_suites} == {0, 1}
