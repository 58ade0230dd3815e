"""The GitHub stand-in answers as api.github.com does, records calls, and fails on request."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from githubkit import GitHub, TokenAuthStrategy, UnauthAuthStrategy

from github_standin import (
    Fault,
    RunningStandin,
    StandinState,
    fake_jwt,
    git_blob_sha,
    running_standin,
    standin_subprocess,
)

FEATURE_SHA = "f" * 40
COMMENTS = "/repos/acme/widgets/issues/1/comments"


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[tuple[RunningStandin, httpx.AsyncClient]]:
    """A stand-in with one installation, repository, issue and pull, and a client holding a token."""
    state = StandinState()
    state.add_installation(7, "acme")
    state.add_repository("acme/widgets", {"railyard.yml": "hello\n"}, branches={"feature": FEATURE_SHA})
    state.add_issue("acme/widgets", 1, title="Ship it")
    state.add_pull("acme/widgets", 2, head_ref="feature", head_sha=FEATURE_SHA)
    async with running_standin(state) as standin:
        headers = {"Authorization": f"token {state.issue_token(7)}"}
        async with httpx.AsyncClient(base_url=standin.url, headers=headers, timeout=5) as client:
            yield standin, client


def as_app() -> dict[str, str]:
    return {"Authorization": f"Bearer {fake_jwt()}"}


@pytest.mark.asyncio
async def test_the_app_jwt_gets_an_installation_token_valid_for_an_hour() -> None:
    """POST access_tokens with a JWT answers 201 with a token, permissions and a Z expiry an hour on."""
    async with serving() as (standin, client):
        standin.state.set_clock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
        response = await client.post("/app/installations/7/access_tokens", headers=as_app())
        assert response.status_code == 201
        body = response.json()
        assert body["token"].startswith("ghs_") and body["expires_at"] == "2026-11-30T10:00:00Z"
        assert body["permissions"]["issues"] == "write" and body["repository_selection"] == "all"
        fresh = {"Authorization": f"Bearer {body['token']}"}
        assert (await client.get("/repos/acme/widgets", headers=fresh)).status_code == 200


@pytest.mark.asyncio
async def test_only_an_issued_unexpired_token_opens_the_api() -> None:
    """No credential, an unknown token, a JWT or an expired token all get GitHub's 401."""
    async with serving() as (standin, client):
        for headers in ({"Authorization": ""}, {"Authorization": "token ghs_nope"}, as_app()):
            response = await client.get("/repos/acme/widgets", headers=headers)
            assert response.status_code == 401
            assert response.json() == {
                "message": "Bad credentials",
                "documentation_url": "https://docs.github.com/rest",
                "status": "401",
            }
        standin.state.advance(3601)
        assert (await client.get("/repos/acme/widgets")).status_code == 401


@pytest.mark.asyncio
async def test_app_endpoints_want_a_jwt_not_a_token_or_a_malformed_one() -> None:
    """/app answers a JWT-shaped bearer, and 401s installation tokens and non-JWTs."""
    async with serving() as (_, client):
        assert (await client.get("/app", headers=as_app())).json()["slug"] == "railyard"
        assert (await client.get("/app")).status_code == 401
        assert (await client.get("/app", headers={"Authorization": "Bearer a.b.c"})).status_code == 401


@pytest.mark.asyncio
async def test_a_comment_is_created_listed_and_edited_in_githubs_shape() -> None:
    """The app's comment is by railyard[bot] via the app, and an edit moves updated_at only."""
    async with serving() as (standin, client):
        standin.state.set_clock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC), step_seconds=1)
        created = await client.post(COMMENTS, json={"body": "Claimed."})
        assert created.status_code == 201
        comment = created.json()
        assert created.headers["Location"] == comment["url"]
        assert comment["user"]["login"] == "railyard[bot]" and comment["user"]["type"] == "Bot"
        assert comment["performed_via_github_app"]["id"] == 1
        assert comment["performed_via_github_app"]["slug"] == "railyard"
        assert comment["html_url"].endswith(f"/acme/widgets/issues/1#issuecomment-{comment['id']}")
        assert comment["created_at"] == comment["updated_at"] == "2026-11-30T09:00:00Z"
        edited = (
            await client.patch(f"/repos/acme/widgets/issues/comments/{comment['id']}", json={"body": "Done."})
        ).json()
        assert (edited["body"], edited["created_at"], edited["updated_at"]) == (
            "Done.",
            "2026-11-30T09:00:00Z",
            "2026-11-30T09:00:01Z",
        )
        listed = (await client.get(COMMENTS)).json()
        assert [c["body"] for c in listed] == ["Done."]


@pytest.mark.asyncio
async def test_comment_listing_pages_with_a_link_header_and_filters_by_since() -> None:
    """per_page and page slice oldest first with rel=next/last links; since keeps later updates."""
    async with serving() as (standin, client):
        standin.state.set_clock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC), step_seconds=60)
        ids = [
            standin.state.add_comment("acme/widgets", 1, f"comment {n}", user="rachel").id for n in range(5)
        ]
        first = await client.get(COMMENTS, params={"per_page": 2})
        assert [c["id"] for c in first.json()] == ids[:2]
        assert (
            'page=2>; rel="next"' in first.headers["Link"] and 'page=3>; rel="last"' in first.headers["Link"]
        )
        last = await client.get(COMMENTS, params={"per_page": 2, "page": 3})
        assert [c["id"] for c in last.json()] == ids[4:] and 'rel="next"' not in last.headers["Link"]
        since = await client.get(COMMENTS, params={"since": "2026-11-30T09:03:00Z"})
        assert [c["id"] for c in since.json()] == ids[3:]
        assert (await client.get("/repos/acme/widgets/issues/99/comments")).status_code == 404


@pytest.mark.asyncio
async def test_a_reaction_is_created_once_then_returned_with_200() -> None:
    """The first reaction is 201, the same content by the same user again is 200 with the same id."""
    async with serving() as (standin, client):
        comment = standin.state.add_comment("acme/widgets", 1, "/claim", user="rachel")
        url = f"/repos/acme/widgets/issues/comments/{comment.id}/reactions"
        first, again = [await client.post(url, json={"content": "eyes"}) for _ in range(2)]
        assert (first.status_code, again.status_code) == (201, 200)
        assert first.json()["id"] == again.json()["id"] and first.json()["user"]["login"] == "railyard[bot]"
        assert (await client.post(url, json={"content": "shrug"})).status_code == 422
        rollup = (await client.get(f"/repos/acme/widgets/issues/comments/{comment.id}")).json()["reactions"]
        assert rollup["eyes"] == rollup["total_count"] == 1


@pytest.mark.asyncio
async def test_contents_at_a_pull_requests_head_show_its_changes() -> None:
    """?ref=<a PR's head sha or branch> answers the file as the PR changes it; a removed file is 404."""
    async with serving() as (standin, client):
        standin.state.repositories["acme/widgets"].pulls[2].files.update({"railyard.yml": "new\n", "x": None})
        standin.state.repositories["acme/widgets"].files["x"] = "old\n"
        for ref in (FEATURE_SHA, "feature"):
            body = (await client.get("/repos/acme/widgets/contents/railyard.yml", params={"ref": ref})).json()
            assert body["content"] == "bmV3Cg==\n" and body["sha"] == git_blob_sha(b"new\n")
        assert (
            await client.get("/repos/acme/widgets/contents/x", params={"ref": FEATURE_SHA})
        ).status_code == 404
        main = (await client.get("/repos/acme/widgets/contents/railyard.yml", params={"ref": "main"})).json()
        assert main["content"] == "aGVsbG8K\n"


@pytest.mark.asyncio
async def test_a_pull_requests_files_are_listed_in_pages_as_github_does() -> None:
    """GET pulls/{n}/files lists each changed file with its status and head blob sha, paged with Link."""
    async with serving() as (standin, client):
        pull = standin.state.repositories["acme/widgets"].pulls[2]
        pull.files.update({"railyard.yml": "new\n", "added.txt": "a\n", "gone.txt": None})
        standin.state.repositories["acme/widgets"].files["gone.txt"] = "bye\n"
        first = await client.get("/repos/acme/widgets/pulls/2/files", params={"per_page": 2})
        assert [(f["filename"], f["status"]) for f in first.json()] == [
            ("added.txt", "added"),
            ("gone.txt", "removed"),
        ]
        assert 'rel="next"' in first.headers["link"]
        [last] = (
            await client.get("/repos/acme/widgets/pulls/2/files", params={"per_page": 2, "page": 2})
        ).json()
        assert (last["filename"], last["status"], last["sha"]) == (
            "railyard.yml",
            "modified",
            git_blob_sha(b"new\n"),
        )
        assert last["contents_url"].endswith(f"/repos/acme/widgets/contents/railyard.yml?ref={FEATURE_SHA}")
        assert (await client.get("/repos/acme/widgets/pulls/9/files")).status_code == 404


@pytest.mark.asyncio
async def test_contents_come_base64_encoded_with_the_git_blob_sha() -> None:
    """A file's sha is git's blob id; ?ref must name the default branch or its head; missing is 404."""
    assert git_blob_sha(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    async with serving() as (_, client):
        body = (await client.get("/repos/acme/widgets/contents/railyard.yml", params={"ref": "main"})).json()
        assert (body["type"], body["encoding"], body["content"]) == ("file", "base64", "aGVsbG8K\n")
        assert body["sha"] == "ce013625030ba8dba906f756967f9e9ca394464a" and body["size"] == 6
        missing = await client.get("/repos/acme/widgets/contents/nope.yml")
        assert missing.status_code == 404 and missing.json()["message"] == "Not Found"
        assert (await client.get("/repos/acme/widgets/contents/railyard.yml?ref=nope")).status_code == 404
        assert (await client.get("/repos/other/widgets/contents/railyard.yml")).status_code == 404


@pytest.mark.asyncio
async def test_team_membership_is_active_pending_or_not_found() -> None:
    """Seeded memberships answer 200 with their state; anyone else is 404."""
    async with serving() as (standin, client):
        standin.state.team_memberships[("acme", "runners", "coder-bot")] = "active"
        standin.state.team_memberships[("acme", "runners", "newbie")] = "pending"
        url = "/orgs/acme/teams/runners/memberships/{}"
        active, pending, stranger = [
            await client.get(url.format(login)) for login in ("coder-bot", "newbie", "nora")
        ]
        assert (active.json()["state"], active.json()["role"]) == ("active", "member")
        assert pending.json()["state"] == "pending" and stranger.status_code == 404


@pytest.mark.asyncio
async def test_collaborator_permission_gives_the_role_and_the_legacy_permission() -> None:
    """maintain reads as write in `permission` and keeps its name in `role_name`."""
    async with serving() as (standin, client):
        standin.state.permissions[("acme/widgets", "max")] = "maintain"
        body = (await client.get("/repos/acme/widgets/collaborators/max/permission")).json()
        assert (body["permission"], body["role_name"], body["user"]["login"]) == ("write", "maintain", "max")
        stranger = (await client.get("/repos/acme/widgets/collaborators/nora/permission")).json()
        assert stranger["permission"] == "read"  # the repository is public


@pytest.mark.asyncio
async def test_check_runs_complete_with_a_conclusion_and_list_the_newest_per_name() -> None:
    """A conclusion completes the run; the list for a branch shows only the newest run of each name."""
    async with serving() as (_, client):
        create = {"name": "railyard", "head_sha": FEATURE_SHA, "output": {"title": "Claimed", "summary": "s"}}
        old, new = [
            (await client.post("/repos/acme/widgets/check-runs", json=create)).json() for _ in range(2)
        ]
        assert new["status"] == "queued" and new["output"]["title"] == "Claimed"
        done = await client.patch(
            f"/repos/acme/widgets/check-runs/{new['id']}", json={"conclusion": "success"}
        )
        assert (done.json()["status"], done.json()["conclusion"]) == ("completed", "success")
        listed = (await client.get("/repos/acme/widgets/commits/feature/check-runs")).json()
        assert listed["total_count"] == 1 and listed["check_runs"][0]["id"] == new["id"] != old["id"]


@pytest.mark.asyncio
async def test_compare_reports_the_seeded_status_and_branches_their_head() -> None:
    """compare answers the seeded status with ahead_by/behind_by; an unknown branch is 404."""
    async with serving() as (standin, client):
        standin.state.repositories["acme/widgets"].compare[("main", "feature")] = "diverged"
        body = (await client.get("/repos/acme/widgets/compare/main...feature")).json()
        assert (body["status"], body["ahead_by"], body["behind_by"]) == ("diverged", 1, 1)
        branch = (await client.get("/repos/acme/widgets/branches/feature")).json()
        assert branch["commit"]["sha"] == FEATURE_SHA and branch["protected"] is False
        assert (await client.get("/repos/acme/widgets/branches/nope")).json()["message"] == "Branch not found"


@pytest.mark.asyncio
async def test_responses_carry_rate_limit_headers_counting_down_per_installation() -> None:
    """Each answer has GitHub's headers; remaining falls per installation, and at 0 GitHub says 403."""
    async with serving() as (standin, client):
        standin.state.rate_limit = 3
        first, second = [await client.get("/repos/acme/widgets") for _ in range(2)]
        assert first.headers["content-type"] == "application/json; charset=utf-8"
        assert first.headers["x-ratelimit-resource"] == "core" and first.headers["x-github-request-id"]
        assert [r.headers["x-ratelimit-remaining"] for r in (first, second)] == ["2", "1"]
        assert second.headers["x-ratelimit-used"] == "2" and int(second.headers["x-ratelimit-reset"]) > 0
        await client.get("/repos/acme/widgets")
        exhausted = await client.get("/repos/acme/widgets")
        assert exhausted.status_code == 403 and exhausted.headers["x-ratelimit-remaining"] == "0"
        assert exhausted.json()["message"].startswith("API rate limit exceeded for installation ID 7")


@pytest.mark.asyncio
async def test_server_errors_are_injected_in_order_and_then_requests_succeed() -> None:
    """Each fault answers one matching request, in order; other paths are untouched."""
    async with serving() as (standin, client):
        standin.state.inject("GET", r"^/repos/acme/widgets$", Fault(status=500), Fault(status=502))
        assert (await client.get("/repos/acme/widgets/issues/1")).status_code == 200
        statuses = [(await client.get("/repos/acme/widgets")).status_code for _ in range(3)]
        assert statuses == [500, 502, 200]


@pytest.mark.asyncio
async def test_secondary_rate_limits_answer_githubs_message_and_retry_after() -> None:
    """A 403 secondary limit and a 429 both carry GitHub's message and a Retry-After header."""
    async with serving() as (standin, client):
        standin.state.inject(
            "POST",
            "/comments$",
            Fault(status=403, secondary_rate_limit=True, retry_after=2),
            Fault(429, retry_after=5),
        )
        for status, retry_after in ((403, "2"), (429, "5")):
            response = await client.post(COMMENTS, json={"body": "x"})
            assert (response.status_code, response.headers["Retry-After"]) == (status, retry_after)
            assert response.json()["message"].startswith("You have exceeded a secondary rate limit")
            assert response.json()["documentation_url"].endswith("#about-secondary-rate-limits")
        assert standin.state.comments == {}


@pytest.mark.asyncio
async def test_a_primary_rate_limit_fault_reports_nothing_remaining() -> None:
    """The injected primary limit is a 403 with x-ratelimit-remaining 0 and a reset time."""
    async with serving() as (standin, client):
        standin.state.inject("*", "/issues/", Fault(status=403, primary_rate_limit=True))
        response = await client.get("/repos/acme/widgets/issues/1")
        assert (response.status_code, response.headers["x-ratelimit-remaining"]) == (403, "0")
        assert int(response.headers["x-ratelimit-reset"]) > 0


@pytest.mark.asyncio
async def test_apply_then_fail_creates_the_comment_but_answers_502() -> None:
    """The ambiguous failure: GitHub made the comment, the client only saw a 502."""
    async with serving() as (standin, client):
        standin.state.inject("POST", "/comments$", Fault(apply_then_fail=True, status=502))
        response = await client.post(COMMENTS, json={"body": "Claimed."})
        assert response.status_code == 502
        assert [c.body for c in standin.state.comments.values()] == ["Claimed."]
        assert [c["body"] for c in (await client.get(COMMENTS)).json()] == ["Claimed."]


@pytest.mark.asyncio
async def test_apply_then_timeout_creates_the_comment_while_the_client_gives_up() -> None:
    """The comment exists although the client timed out waiting for the answer."""
    async with serving() as (standin, client):
        standin.state.inject("POST", "/comments$", Fault(apply_then_timeout=True, delay=2))
        with pytest.raises(httpx.ReadTimeout):
            await client.post(COMMENTS, json={"body": "Claimed."}, timeout=0.3)
        assert [c.body for c in standin.state.comments.values()] == ["Claimed."]


@pytest.mark.asyncio
async def test_every_call_is_recorded_with_its_auth_kind_and_answer() -> None:
    """calls_to finds calls by method and path prefix, with body, query, auth and status."""
    async with serving() as (standin, client):
        await client.post(COMMENTS, json={"body": "hi"})
        await client.get(COMMENTS, params={"per_page": "5"})
        await client.get("/app", headers=as_app())
        await client.get("/nowhere")
        (post,) = standin.state.calls_to("POST", "/repos/acme/widgets/issues/")
        assert (post.body, post.auth, post.installation_id, post.status) == (
            {"body": "hi"},
            "installation",
            7,
            201,
        )
        (listing,) = standin.state.calls_to("get", COMMENTS)
        assert listing.query == {"per_page": "5"}
        assert [(c.path, c.auth, c.status) for c in standin.state.calls[2:]] == [
            ("/app", "jwt", 200),
            ("/nowhere", "installation", 404),
        ]


@pytest.mark.asyncio
async def test_hook_deliveries_page_by_cursor_and_redelivery_is_recorded() -> None:
    """Deliveries come newest first with a cursor Link; a redelivery is 202 and recorded."""
    async with serving() as (standin, client):
        ids = [
            standin.state.add_delivery("issue_comment", action="created", installation_id=7).id
            for _ in range(3)
        ]
        first = await client.get("/app/hook/deliveries", params={"per_page": 2}, headers=as_app())
        assert [d["id"] for d in first.json()] == ids[:0:-1]
        assert f"cursor=v1_{ids[1]}" in first.headers["Link"]
        rest = await client.get(
            "/app/hook/deliveries", params={"per_page": 2, "cursor": f"v1_{ids[1]}"}, headers=as_app()
        )
        assert [d["id"] for d in rest.json()] == ids[:1] and "Link" not in rest.headers
        redelivered = await client.post(f"/app/hook/deliveries/{ids[0]}/attempts", headers=as_app())
        assert redelivered.status_code == 202 and standin.state.redelivery_attempts == [ids[0]]
        assert (
            standin.state.deliveries[-1].redelivery
            and standin.state.deliveries[-1].guid == standin.state.deliveries[0].guid
        )


@pytest.mark.asyncio
async def test_githubkit_parses_every_answer() -> None:
    """githubkit, railyard's client, validates each response against GitHub's schema without complaint."""
    async with serving() as (standin, _):
        state = standin.state
        state.add_delivery("issues", action="opened")
        state.team_memberships[("acme", "runners", "coder-bot")] = "active"
        state.repositories["acme/widgets"].pulls[2].files["railyard.yml"] = "changed\n"
        state.repositories["acme/widgets"].compare[("main", "feature")] = "ahead"
        comment_id = state.add_comment("acme/widgets", 1, "/claim", user="rachel").id
        as_the_app = GitHub(UnauthAuthStrategy(), base_url=standin.url, auto_retry=False)
        app = as_the_app.rest.apps
        jwt = as_app()
        token = (await app.async_create_installation_access_token(7, headers=jwt)).parsed_data.token
        parsed = [
            (await app.async_get_authenticated(headers=jwt)).parsed_data,
            (await app.async_get_repo_installation("acme", "widgets", headers=jwt)).parsed_data,
            (await app.async_list_webhook_deliveries(headers=jwt)).parsed_data,
        ]
        as_the_installation = GitHub(TokenAuthStrategy(token), base_url=standin.url, auto_retry=False)
        rest = as_the_installation.rest
        created = (await rest.issues.async_create_comment("acme", "widgets", 1, body="Claimed.")).parsed_data
        run = (
            await rest.checks.async_create("acme", "widgets", name="railyard", head_sha=FEATURE_SHA)
        ).parsed_data
        parsed += [
            (await rest.repos.async_get("acme", "widgets")).parsed_data,
            (await rest.repos.async_get_content("acme", "widgets", "railyard.yml")).parsed_data,
            (await rest.issues.async_get("acme", "widgets", 2)).parsed_data,
            (await rest.issues.async_list_comments("acme", "widgets", 1)).parsed_data,
            (await rest.issues.async_update_comment("acme", "widgets", created.id, body="Done.")).parsed_data,
            (await rest.issues.async_add_assignees("acme", "widgets", 1, assignees=["rita"])).parsed_data,
            (await rest.issues.async_remove_assignees("acme", "widgets", 1, assignees=["rita"])).parsed_data,
            (
                await rest.reactions.async_create_for_issue_comment(
                    "acme", "widgets", comment_id, content="eyes"
                )
            ).parsed_data,
            (await rest.checks.async_update("acme", "widgets", run.id, conclusion="success")).parsed_data,
            (await rest.checks.async_list_for_ref("acme", "widgets", "feature")).parsed_data,
            (
                await rest.teams.async_get_membership_for_user_in_org("acme", "runners", "coder-bot")
            ).parsed_data,
            (await rest.repos.async_get_collaborator_permission_level("acme", "widgets", "max")).parsed_data,
            (await rest.repos.async_get_branch("acme", "widgets", "main")).parsed_data,
            (await rest.pulls.async_get("acme", "widgets", 2)).parsed_data,
            (await rest.pulls.async_list_files("acme", "widgets", 2)).parsed_data,
            (await rest.repos.async_compare_commits("acme", "widgets", "main...feature")).parsed_data,
        ]
        assert (
            created.performed_via_github_app is not None
            and created.performed_via_github_app.slug == "railyard"
        )
        assert all(item is not None for item in parsed)


@pytest.mark.process
def test_the_subprocess_writes_its_port_file_answers_and_stops_on_sigterm(tmp_path: Path) -> None:
    """The module listens on loopback, is seeded over /_standin/, and exits 0 on SIGTERM."""
    port_file = tmp_path / "standin.port"
    seed = {"installations": [{"id": 7, "account": "acme"}], "repositories": [{"full_name": "acme/widgets"}]}
    with standin_subprocess(port_file) as standin:
        assert int(port_file.read_text()) > 0
        assert standin.seed(seed)["issues"] == {"acme/widgets": []}
        standin.inject("GET", "^/app$", Fault(status=502))
        assert httpx.get(f"{standin.url}/app", headers=as_app()).status_code == 502
        assert httpx.get(f"{standin.url}/app", headers=as_app()).json()["slug"] == "railyard"
        assert [call["status"] for call in standin.calls()] == [502, 200]
        standin.process.send_signal(signal.SIGTERM)
        assert standin.process.wait(timeout=10) == 0


def test_the_clock_can_be_frozen_and_advanced() -> None:
    """set_clock freezes time, stamp steps it, and advance moves it on."""
    state = StandinState()
    start = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    state.set_clock(start, step_seconds=1)
    assert [state.stamp(), state.stamp(), state.now()] == [
        start,
        start + timedelta(seconds=1),
        start + timedelta(seconds=2),
    ]
    state.advance(60)
    assert state.now() == start + timedelta(seconds=62)


@pytest.mark.process
def test_the_subprocess_watches_its_retry_afters_and_the_calls_made_through_them(tmp_path: Path) -> None:
    """Over /_standin/limits a subprocess's LimitWatch is turned on and read: the Retry-After it
    answered, and a call that came in before it ran out."""
    with standin_subprocess(tmp_path / "standin.port") as standin:
        assert standin.limits() == {"limits": [], "ignored": []}
        standin.watch_limits(grace=0.0)
        standin.inject("GET", "^/app$", Fault(status=403, secondary_rate_limit=True, retry_after=600))
        assert httpx.get(f"{standin.url}/app", headers=as_app()).status_code == 403
        assert httpx.get(f"{standin.url}/app", headers=as_app()).status_code == 200
        watched = standin.limits()
        assert [installation for installation, _, _ in watched["limits"]] == [None]
        assert [(method, path) for _, method, path, _, _ in watched["ignored"]] == [("GET", "/app")]
