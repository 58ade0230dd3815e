"""The HTTP API end to end (SPEC *Agent interface*): the real server, GitHub the stand-in, each
caller with their own GitHub user token, checked with GitHub on every call."""

from __future__ import annotations

import asyncio
import base64
import uuid
from pathlib import Path
from typing import Any

from app.store.database import Database
from app.store.tickets import TicketService
from app.web.api_routes import AGENT_API
from github_standin import Fault, running_standin
from policies.budgets import Budget
from policies.model import TicketKey
from support.windows import clear_of_a_window_end
from support.world import REPO, World, standin_state
from tests.fakes import app_settings, running_server

TICKETS = f"/api/v1/repos/{REPO}/tickets"


def token(world: World, login: str) -> str:
    """A live user token of `login` on the stand-in (as the OAuth flow or a PAT gives one)."""
    return world.github.oauth.issue_token(login, world.github.now()).token


async def call(
    world: World,
    login_or_token: str | None,
    method: str,
    path: str,
    body: Any = None,
    key: str | None = None,
    raw: bytes | None = None,
) -> tuple[int, Any, dict[str, str]]:
    """One API request; the status, the JSON answer and the headers."""
    headers = {}
    if login_or_token is not None:
        credential = login_or_token if login_or_token.startswith("gh") else token(world, login_or_token)
        headers["Authorization"] = f"Bearer {credential}"
    if key is not None:
        headers["Idempotency-Key"] = key
    kwargs: dict[str, Any] = {"data": raw} if raw is not None else {"json": body} if body is not None else {}
    async with world.server.client.request(method, path, headers=headers, **kwargs) as response:
        return response.status, await response.json(), dict(response.headers)


async def command(
    world: World, login: str, text: str, number: int = 12, key: str | None = None, **body: Any
) -> tuple[int, Any, dict[str, str]]:
    """POST a command as `login` (a fresh key unless one is given)."""
    path = f"{TICKETS}/{number}/commands"
    return await call(world, login, "POST", path, {"command": text, **body}, key or uuid.uuid4().hex)


def events(world: World, number: int = 12) -> list[Any]:
    return [r.event for r in TicketService(world.database).history(TicketKey(REPO, number))]


async def delivered(world: World) -> None:
    """#12 published, claimed by cody and delivered, all through the API."""
    assert (await command(world, "rachel", "/publish"))[0] == 200
    assert (await command(world, "cody", "/claim"))[0] == 200
    status, answer, _ = await command(world, "cody", "/deliver branch=agent/12-fix\nUploads resume now.")
    assert status == 200, answer


async def test_the_api_needs_a_token_github_accepts_and_a_revoked_one_fails_at_once(world: World) -> None:
    """No token, a made-up one and a revoked one are 401; a live one reads."""
    await world.say("rachel", "/publish")
    assert (await call(world, None, "GET", f"{TICKETS}/12"))[0] == 401
    assert (await call(world, "ghu_madeup", "GET", f"{TICKETS}/12"))[0] == 401
    live = token(world, "cody")
    assert (await call(world, live, "GET", f"{TICKETS}/12"))[0] == 200
    del world.github.oauth.tokens[live]  # revoked on GitHub
    status, answer, headers = await call(world, live, "GET", f"{TICKETS}/12")
    assert status == 401 and answer["error"]["code"] == "bad_token"
    assert headers["WWW-Authenticate"].startswith("Bearer")


async def test_reads_and_lists_tickets_as_status_objects(world: World) -> None:
    """GET a ticket is its `status --json` object; the list holds it; an issue that is no ticket is 404."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    status, ticket, _ = await call(world, "rita", "GET", f"{TICKETS}/12")
    assert status == 200
    assert ticket["ticket"] == f"{REPO}#12" and ticket["work"] == "claimed" and ticket["claimant"] == "cody"
    assert ticket["revision"] == world.ticket().revision
    status, listed, _ = await call(world, "rita", "GET", TICKETS)
    assert status == 200 and [t["ticket"] for t in listed["tickets"]] == [f"{REPO}#12"]
    assert (await call(world, "rita", "GET", TICKETS + "?work=open"))[1]["tickets"] == []
    assert (await call(world, "rita", "GET", TICKETS + "?work=finished"))[0] == 400
    status, answer, _ = await call(world, "rita", "GET", f"{TICKETS}/40")
    assert status == 404 and answer["error"]["code"] == "not_a_ticket"


async def test_a_claim_is_idempotent_one_event_and_the_replay_flagged(world: World) -> None:
    """The same key and body twice: one `claimed` event recorded via api, the same answer replayed."""
    await world.say("rachel", "/publish")
    first = await command(world, "cody", "/claim", key="claim-12")
    again = await command(world, "cody", "/claim", key="claim-12")
    assert first[0] == again[0] == 200
    assert first[1] == again[1] and first[1]["applied"] is True
    assert first[2]["Idempotent-Replayed"] == "false" and again[2]["Idempotent-Replayed"] == "true"
    claims = [e for e in events(world) if e.type.value == "claimed"]
    assert len(claims) == 1 and claims[0].data["via"] == "api"
    assert claims[0].operation_id.startswith("api:") and claims[0].actor_id == world.github.user_id("cody")
    [claimed] = [e for e in first[1]["events"] if e["type"] == "claimed"]
    assert claimed["metadata"]["via"] == "api" and claimed["revision"] == world.ticket().revision


async def test_a_reused_key_with_another_body_is_422_and_changes_nothing(world: World) -> None:
    """A key that answered `/claim` cannot be used for another command."""
    await world.say("rachel", "/publish")
    assert (await command(world, "cody", "/claim", key="k1"))[0] == 200
    revision = world.ticket().revision
    status, answer, _ = await command(world, "cody", "/reopen giving it up", key="k1")
    assert status == 422 and answer["error"]["code"] == "idempotency_key_reused"
    assert world.ticket().revision == revision and world.ticket().work.value == "claimed"


async def test_a_lost_race_is_409(world: World) -> None:
    """Two runners claim at once with their own keys: one claim applies, the other is 409 wrong state."""
    world.github.team_memberships[("acme", "agents", "cora")] = "active"
    await world.say("rachel", "/publish")
    answers = await asyncio.gather(command(world, "cody", "/claim"), command(world, "cora", "/claim"))
    assert sorted(status for status, _, _ in answers) == [200, 409]
    [(_, lost, _)] = [a for a in answers if a[0] == 409]
    assert lost["applied"] is False and lost["refusal"]["code"] == "wrong_state"
    assert lost["status"]["work"] == "claimed"
    assert len([e for e in events(world) if e.type.value == "claimed"]) == 1


async def test_a_stale_expected_revision_is_409_naming_the_current_one_which_applies(world: World) -> None:
    """`expected_revision` behind the ticket is refused with the current revision; that one applies."""
    await world.say("rachel", "/publish")
    now = world.ticket().revision
    status, answer, _ = await command(world, "cody", "/claim", expected_revision=now - 1)
    assert status == 409 and answer["refusal"]["code"] == "stale_revision"
    assert answer["refusal"]["current_revision"] == now and world.ticket().work.value == "open"
    status, answer, _ = await command(world, "cody", "/claim", expected_revision=now)
    assert status == 200 and answer["status"]["work"] == "claimed"


async def test_an_outsider_and_a_runner_accepting_their_own_delivery_are_403(world: World) -> None:
    """Roles are checked as for comments: no role is 403, and so is accepting one's own delivery."""
    await delivered(world)
    revision = world.ticket().revision
    status, answer, _ = await command(world, "mallory", "/accept")
    assert status == 403 and answer["refusal"]["code"] == "not_allowed"
    world.github.team_memberships[("acme", "reviewers", "cody")] = "active"
    status, answer, _ = await command(world, "cody", "/accept")
    assert status == 403 and answer["refusal"]["code"] == "not_independent"
    assert world.ticket().revision == revision and world.ticket().work.value == "delivered"
    assert (await command(world, "rita", "/accept"))[0] == 200


async def test_a_private_repository_the_account_cannot_read_is_404(world: World) -> None:
    """An account without access sees nothing of a private repository: 404, as GitHub answers."""
    await world.say("rachel", "/publish")
    world.github.repository(REPO).private = True  # type: ignore[union-attr]
    world.github.permissions[(REPO, "rita")] = "read"
    assert (await call(world, "rita", "GET", f"{TICKETS}/12"))[0] == 200
    for path in (f"{TICKETS}/12", TICKETS):
        status, answer, _ = await call(world, "mallory", "GET", path)
        assert status == 404 and answer["error"]["code"] == "no_such_repository"
    assert (await command(world, "mallory", "/claim"))[0] == 404
    assert (await call(world, "rita", "GET", "/api/v1/repos/acme/elsewhere/tickets"))[0] == 404


async def test_a_repository_where_the_app_is_not_installed_is_404(world: World) -> None:
    """A public repository anyone can read, without railyard installed: nothing is served."""
    world.github.add_repository("octo/tools")
    status, answer, _ = await call(world, "rita", "GET", "/api/v1/repos/octo/tools/tickets")
    assert status == 404 and answer["error"]["code"] == "no_such_repository"


async def test_the_list_pages_with_a_cursor_and_a_link_header(world: World) -> None:
    """`per_page` pages the list newest first; `next` (and `Link: rel=next`) leads to the rest."""
    for number in (12, 40, 41):
        world.github.add_issue(REPO, number, body="Some work") if number == 41 else None
        await world.say("rachel", "/publish", number=number)
    status, first, headers = await call(world, "rita", "GET", TICKETS + "?per_page=2")
    assert status == 200 and [t["ticket"] for t in first["tickets"]] == [f"{REPO}#41", f"{REPO}#40"]
    assert first["next"] and 'rel="next"' in headers["Link"] and "per_page=2" in headers["Link"]
    status, rest, headers = await call(world, "rita", "GET", TICKETS + f"?per_page=2&after={first['next']}")
    assert [t["ticket"] for t in rest["tickets"]] == [f"{REPO}#12"] and rest["next"] is None
    assert "Link" not in headers
    assert (await call(world, "rita", "GET", TICKETS + "?after=nonsense"))[0] == 400
    assert (await call(world, "rita", "GET", TICKETS + "?per_page=1000"))[0] == 400


async def test_bad_requests_get_clear_errors_and_record_nothing(world: World) -> None:
    """No key, a key over 255 characters, bad JSON, a command that does not parse, not a ticket."""
    await world.say("rachel", "/publish")
    revision, path, long_key = world.ticket().revision, f"{TICKETS}/12/commands", "k" * 256
    cases = [
        (await call(world, "cody", "POST", path, {"command": "/claim"}), 400, "idempotency_key_required"),
        (
            await call(world, "cody", "POST", path, {"command": "/claim"}, long_key),
            400,
            "bad_idempotency_key",
        ),
        (await call(world, "cody", "POST", path, key="k", raw=b"{not json"), 400, "bad_json"),
        (await call(world, "cody", "POST", path, {"command": "/claim", "x": 1}, "k"), 400, "unknown_field"),
        (await command(world, "cody", "/claim --check-in soon"), 422, "malformed_command"),
        (await command(world, "cody", "hello there"), 422, "not_a_command"),
        (await command(world, "cody", "/status"), 422, "not_a_state_change"),
        (await command(world, "cody", "/claim", number=40), 404, "not_a_ticket"),
        (await command(world, "cody", "/claim", number=34), 404, "not_a_ticket"),
    ]
    for (status, answer, _), expected_status, code in cases:
        assert (status, answer["error"]["code"]) == (expected_status, code), answer
    assert world.ticket().revision == revision and world.ticket(40) is None
    status, answer, headers = await call(world, "cody", "GET", f"{TICKETS}/12/commands")
    assert (status, answer["error"]["code"], headers["Allow"]) == (405, "method_not_allowed", "POST")
    assert (await call(world, "cody", "GET", "/api/v1/nowhere"))[1]["error"]["code"] == "no_such_route"


async def test_github_unreachable_is_503_and_a_retry_with_the_same_key_applies_once(world: World) -> None:
    """The token check failing is 503 with nothing recorded; the same key then applies, once."""
    await world.say("rachel", "/publish")
    revision = world.ticket().revision
    world.github.inject("GET", r"^/user$", Fault(status=502))
    status, answer, _ = await command(world, "cody", "/claim", key="retry-me")
    assert status == 503 and answer["error"]["code"] == "github_unavailable"
    assert world.ticket().revision == revision
    world.github.inject("GET", r"/teams/agents/memberships/cody$", Fault(status=502))
    assert (await command(world, "cody", "/claim", key="retry-me"))[0] == 503
    assert world.ticket().revision == revision
    status, answer, headers = await command(world, "cody", "/claim", key="retry-me")
    assert status == 200 and headers["Idempotent-Replayed"] == "false"
    assert len([e for e in events(world) if e.type.value == "claimed"]) == 1


async def test_a_delivery_through_the_api_shows_on_the_status_comment(world: World) -> None:
    """The status comment shows an API delivery like a comment's; the claimant is assigned."""
    await delivered(world)
    await world.settle()
    [status_comment] = world.status_comments()
    assert status_comment == world.expected_status()
    assert "Uploads resume now." in status_comment and "delivered" in status_comment.lower()
    assert "cody" in world.github.repository(REPO).issues[12].assignees  # type: ignore[union-attr]


async def test_the_token_check_is_a_conditional_request(world: World) -> None:
    """The second call with one token sends If-None-Match and GitHub answers 304."""
    await world.say("rachel", "/publish")
    live = token(world, "rita")
    for _ in range(2):
        assert (await call(world, live, "GET", f"{TICKETS}/12"))[0] == 200
    user_calls = [c for c in world.github.calls if c.path == "/user"]
    assert [c.status for c in user_calls] == [200, 304]


async def test_when_github_will_not_answer_for_the_token_about_the_repository_the_app_asks(
    world: World,
) -> None:
    """A 401 on the token's repository read (after /user accepted it): the app's own view decides."""
    await world.say("rachel", "/publish")
    repository = world.github.repository(REPO)
    assert repository is not None
    world.github.inject("GET", r"^/repos/acme/web$", Fault(status=401))
    assert (await call(world, "rita", "GET", f"{TICKETS}/12"))[0] == 200  # public: readable
    repository.private = True
    world.github.inject("GET", r"^/repos/acme/web$", Fault(status=401))
    assert (await call(world, "mallory", "GET", f"{TICKETS}/12"))[0] == 404  # no permission


async def test_one_key_sent_for_two_tickets_at_once_changes_only_the_first(world: World) -> None:
    """A key raced onto another ticket: whichever request comes second gets 422, and nothing lands on #13.

    (Found in review: the loser's delivery report once ran on its own ticket without a role check.)
    """
    world.github.repositories[REPO].issues[13].body = "Thirteen"
    await world.say("rachel", "/publish")
    await world.say("rachel", "/publish", 13)
    before = [r.event.type.value for r in TicketService(world.database).history(TicketKey(REPO, 13))]

    async def deliver_on_13() -> tuple[int, Any, dict[str, str]]:
        await asyncio.sleep(0)
        return await command(world, "cody", "/deliver branch=agent/12-fix -- not on 13", 13, key="K")

    first, second = await asyncio.gather(command(world, "cody", "/claim", 12, key="K"), deliver_on_13())
    # Which request the server takes first is up to the scheduler: the later one replays 422.
    reused = [answer for answer in (first, second) if answer[0] == 422]
    assert len(reused) == 1 and reused[0][1]["error"]["code"] == "idempotency_key_reused"
    after = [r.event.type.value for r in TicketService(world.database).history(TicketKey(REPO, 13))]
    assert after == before and world.ticket(13).rails.integration.value == "unreported"


async def test_malformed_paths_and_queries_are_4xx_never_5xx(world: World) -> None:
    """Non-ASCII digits, an out-of-range cursor and `.`/`..` names: clear 4xx (found in review)."""
    await world.say("rachel", "/publish")
    cursor = base64.urlsafe_b64encode(b"2024-01-01T00:00:00+00:00|99999999999999999999999").decode()
    for path, expected in [
        (f"{TICKETS}/%C2%B2", 404),
        (f"{TICKETS}?per_page=%C2%B2", 400),
        (f"{TICKETS}?after={cursor}", 400),
        ("/api/v1/repos/%2E%2E/users/tickets", 404),
        ("/api/v1/repos/acme/%2E/tickets", 404),
    ]:
        status, answer, _ = await call(world, "rita", "GET", path)
        assert status == expected and "error" in answer, (path, status, answer)
    called = {c.path for c in world.github.calls}
    assert "/users" not in called and "/users/installation" not in called


async def test_an_account_over_its_budget_is_429_before_any_call_with_the_installations_token(
    world: World,
) -> None:
    """Past `limits.commands_per_hour`, a POST is 429 and costs the installation nothing, records nothing."""
    repository = world.github.repository(REPO)
    assert repository is not None
    repository.files[".github/railyard.yml"] += "limits:\n  commands_per_hour: 2\n"
    await world.say("rachel", "/publish")
    for _ in range(2):
        assert (await command(world, "mallory", "/claim"))[0] == 403
    before = len(world.github.calls)
    status, answer, headers = await command(world, "mallory", "/claim")
    assert (status, answer["error"]["code"]) == (429, "over_budget") and headers["Retry-After"]
    installation_calls = [c for c in world.github.calls[before:] if c.auth == "installation"]
    assert installation_calls == []
    refused = TicketService(world.database).refusals(TicketKey(REPO, 12))
    assert len(refused) == 2


async def test_a_body_past_the_limit_is_413_even_without_a_content_length(world: World) -> None:
    """A chunked body is read no further than 256 KB."""
    await world.say("rachel", "/publish")

    async def chunks() -> Any:
        for _ in range(40):
            yield b" " * 10_000

    headers = {"Authorization": f"Bearer {token(world, 'cody')}", "Idempotency-Key": "big"}
    path = f"{TICKETS}/12/commands"
    async with world.server.client.post(path, data=chunks(), headers=headers) as response:
        assert response.status == 413 and (await response.json())["error"]["code"] == "too_large"


async def test_a_token_that_is_no_persons_is_401(world: World) -> None:
    """An installation's token (like Actions' GITHUB_TOKEN) cannot say whose it is: 401, not a retry."""
    installation_token = world.github.issue_token(7)
    status, answer, _ = await call(world, installation_token, "GET", f"{TICKETS}/12")
    assert status == 401 and answer["error"]["code"] == "bad_token"


async def test_rev_0_through_the_api_is_a_revision_like_any_other(world: World) -> None:
    """`/claim rev=0` on a published ticket is stale (409), not run as if no revision were given."""
    await world.say("rachel", "/publish")
    revision = world.ticket().revision
    status, answer, _ = await command(world, "cody", "/claim rev=0")
    assert status == 409 and answer["refusal"]["code"] == "stale_revision", answer
    assert world.ticket().revision == revision and world.ticket().work.value == "open"


async def test_a_branch_with_a_hash_is_asked_about_whole(world: World) -> None:
    """`branch=a#b` delivers the head of `a#b`, not of `a` (path parameters are percent-encoded)."""
    branches = world.github.repositories[REPO].branches
    branches.update({"a": "a" * 40, "a#b": "b" * 40})
    await world.say("rachel", "/publish")
    assert (await command(world, "cody", "/claim"))[0] == 200
    status, answer, _ = await command(world, "cody", "/deliver branch=a#b\nDone.")
    assert status == 200, answer
    delivered = [e for e in events(world) if e.type.value == "delivered"]
    assert delivered[-1].data["commit"] == "b" * 40
    assert f"/repos/{REPO}/branches/a#b" in {c.path for c in world.github.calls}


async def test_the_next_page_link_never_comes_from_the_host_header(world: World) -> None:
    """A forged Host header cannot make the `Link` header point at another server."""
    for number in (12, 40):
        await world.say("rachel", "/publish", number=number)
    headers = {"Authorization": f"Bearer {token(world, 'rita')}", "Host": "evil.example"}
    async with world.server.client.get(TICKETS + "?per_page=1", headers=headers) as response:
        assert response.status == 200
        link = response.headers["Link"]
    assert "evil.example" not in link and link.startswith(f"<{TICKETS}?"), link


def installation_calls(world: World, since: int) -> list[Any]:
    """The calls made with the installation's token since call number `since`, that cost its limit."""
    return [c for c in world.github.calls[since:] if c.auth == "installation" and c.counted]


async def test_an_outsiders_flood_of_refused_commands_costs_the_installation_little(world: World) -> None:
    """120 commands by an account without a role, refused before the door (an unknown commit, an
    issue that does not exist): at most `outsider_requests_per_hour` reach GitHub, the first for its
    role check (every role list's team: it holds none), the others for nothing (taken to be in no
    team for ten minutes once it is known to hold no role); the rest are 429 with Retry-After,
    calling nothing; a requester still publishes."""
    await world.say("rachel", "/publish")
    mallory = token(world, "mallory")  # one account, one token, as an agent sends them
    before, statuses, costs = len(world.github.calls), [], []
    for n in range(120):
        start = len(world.github.calls)
        if n % 2:
            answer = await command(world, mallory, f"/deliver commit={uuid.uuid4().hex}\nDone.")
        else:
            answer = await command(world, mallory, "/publish", number=999)
        statuses.append(answer[0])
        costs.append(len(installation_calls(world, start)))
        if answer[0] == 429:
            assert int(answer[2]["Retry-After"]) > 0 and answer[1]["error"]["code"] == "over_budget"
    spent = installation_calls(world, before)
    print(f"\noutsider flood: {len(spent)} counted installation calls, {statuses.count(429)} answered 429")
    assert statuses.count(429) == 90 and set(statuses[:30]) <= {403, 404, 409, 422}
    # The first asks the six role lists' teams; once known to hold no role, nothing for ten minutes.
    assert costs[0] <= 6 and max(costs[1:]) == 0
    assert {c.path.rsplit("/", 1)[-1] for c in spent} == {"mallory"}  # never a commit or an issue
    flood_end = len(world.github.calls)
    assert (await command(world, mallory, "/publish", number=999))[0] == 429
    assert world.github.calls[flood_end:] == [
        c for c in world.github.calls[flood_end:] if c.auth != "installation"
    ]
    world.github.repositories[REPO].issues[13].body = "Real work"
    status, answer, _ = await command(world, "rachel", "/publish", number=13)  # a requester's
    assert status == 200, answer


async def test_reads_are_limited_per_account(tmp_path: Path) -> None:
    """Past API_READS_PER_MINUTE (600 by default) an account's reads are 429 with Retry-After;
    another account still reads."""
    async with running_standin(standin_state()) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1", API_READS_PER_MINUTE="5")
        async with running_server(settings) as server:
            await reads_limited(World(server, standin.state, Database(url)))


async def reads_limited(world: World) -> None:
    await clear_of_a_window_end(60.0, 15.0)  # reads count in clock minutes
    await world.say("rachel", "/publish")
    live = token(world, "rita")
    statuses = [(await call(world, live, "GET", f"{TICKETS}/12"))[0] for _ in range(7)]
    assert statuses == [200] * 5 + [429] * 2
    status, _, headers = await call(world, live, "GET", TICKETS)
    assert status == 429 and int(headers["Retry-After"]) >= 1
    assert (await call(world, "cody", "GET", f"{TICKETS}/12"))[0] == 200


async def test_naming_one_public_repository_after_another_cannot_spend_the_apps_rate_limit(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Each repository whose installation GitHub is asked about spends the account's lookups: past
    them a request is 429 and the app's JWT is not used; repositories already known still answer."""
    monkeypatch.setattr("app.web.api_costs.LOOKUPS_PER_HOUR", 3)
    async with running_standin(standin_state()) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings) as server:
            world = World(server, standin.state, Database(url))
            for n in range(6):
                world.github.add_repository(f"octo/public-{n}")
            live = token(world, "mallory")
            assert (await call(world, live, "GET", TICKETS))[0] == 200  # acme/web: the first lookup
            paths = [f"/api/v1/repos/octo/public-{n}/tickets" for n in range(6)]
            answers = [(await call(world, live, "GET", path))[0] for path in paths]
            assert answers == [404, 404, 429, 429, 429, 429]
            asked = [c for c in world.github.calls if c.path.endswith("/installation") and "public" in c.path]
            assert len(asked) == 2
            assert (await call(world, live, "GET", TICKETS))[0] == 200  # known: no lookup spent


async def test_made_up_tokens_cost_github_a_bounded_number_of_checks(world: World, monkeypatch: Any) -> None:
    """A refused token is refused again without asking GitHub; past the budget for tokens never
    seen accepted a request is 429 without a call, and a token seen accepted still reads."""
    await world.say("rachel", "/publish")
    live = token(world, "rita")
    assert (await call(world, live, "GET", f"{TICKETS}/12"))[0] == 200
    checks = world.server.app[AGENT_API].costs.tokens
    monkeypatch.setattr(checks.new, "budget", Budget("new tokens", 5, 60.0))
    before = len(world.github.calls)
    statuses = [(await call(world, f"ghu_madeup{n}", "GET", f"{TICKETS}/12"))[0] for n in range(20)]
    statuses += [(await call(world, "ghu_madeup0", "GET", f"{TICKETS}/12"))[0] for _ in range(5)]
    asked = [c for c in world.github.calls[before:] if c.path == "/user"]
    assert statuses[:4] == [401] * 4 and 429 in statuses[4:20] and statuses[20:] == [401] * 5
    assert len(asked) <= 5
    assert (await call(world, live, "GET", f"{TICKETS}/12"))[0] == 200
