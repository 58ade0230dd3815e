"""Repository identity through the real server and the GitHub stand-in (SPEC *Repository identity
and sessions*): a private repository renamed and its name reused by a new public repository
shows nothing of the old tickets under that name, on the pages or the API; GitHub's `repository`
`renamed` webhook moves them to the new name; the new repository's webhooks never touch them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
from sqlalchemy import insert, select

from app.store.effects import effects_table
from app.store.repositories import place, repositories
from app.store.tickets import TicketService
from app.web.app_keys import WORKER
from github_standin.events import repository_moved
from policies.model import TicketKey
from support.payloads import example
from support.servers import drained
from support.web_world import PRIVATE_REPO, WebWorld, say_in, web_world
from support.world import REPO, World, comment_payload, pull_request_payload

ARCHIVE = "acme/vault-archive"
SITE = "acme/site"
LATER = "7" * 40
FAR = 4_000_000_000.0  # never due during a test: a write left pending stays pending


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[WebWorld]:
    """The server with sign-in; acme/vault#7 is a ticket (olivia published it)."""
    async with web_world(tmp_path) as world:
        await say_in(world, PRIVATE_REPO, "olivia", "/publish --no-code", 7)
        yield world


def reuse_the_name(web: WebWorld) -> None:
    """On GitHub: acme/vault is renamed acme/vault-archive, and mallory creates a new public
    acme/vault (a new repository: another id) with an issue #7 of its own."""
    web.github.rename_repository(PRIVATE_REPO, ARCHIVE)
    web.github.add_repository(PRIVATE_REPO, files={}, private=False)
    web.github.add_issue(PRIVATE_REPO, 7, title="Hello", body="Public")
    web.github.permissions[(PRIVATE_REPO, "mallory")] = "admin"


async def page(web: WebWorld, login: str, path: str) -> tuple[int, str]:
    """`path` as `login` sees it after signing in."""
    async with web.browser_session() as client:
        await web.sign_in(client, login)
        async with client.get(path, allow_redirects=False) as response:
            return response.status, await response.text()


async def api(web: WebWorld, login: str, path: str) -> int:
    """The API's status for `login`'s own token."""
    token = web.github.oauth.issue_token(login, web.github.now()).token
    async with web.server.client.get(path, headers={"Authorization": f"Bearer {token}"}) as response:
        return response.status


async def test_a_reused_name_shows_nothing_of_the_old_private_repositorys_tickets(web: WebWorld) -> None:
    """Before any webhook says so, mallory's new public acme/vault shows no ticket of the old
    private one: the ticket page, the board and the API answer 404 (GitHub's id is not the stored one)."""
    reuse_the_name(web)
    status, text = await page(web, "mallory", f"/tickets/{PRIVATE_REPO}/7")
    assert status == 404 and "vault keys" not in text
    status, board = await page(web, "mallory", f"/tickets/{PRIVATE_REPO}")
    assert status == 404 and f"{PRIVATE_REPO}/7" not in board
    assert await api(web, "mallory", f"/api/v1/repos/{PRIVATE_REPO}/tickets/7") == 404
    assert await api(web, "mallory", f"/api/v1/repos/{PRIVATE_REPO}/tickets") == 404


async def test_the_renamed_webhook_moves_the_tickets_and_the_new_repository_never_touches_them(
    web: WebWorld,
) -> None:
    """GitHub's `repository` `renamed` moves acme/vault#7 to acme/vault-archive (olivia reads it
    there); the new acme/vault's #7 being published makes a ticket of its own."""
    reuse_the_name(web)
    old = TicketService(web.database).load(TicketKey(PRIVATE_REPO, 7))
    assert old is not None
    moved = web.github.repositories[ARCHIVE]
    guid, payload = repository_moved(web.github, web.standin.url, moved, PRIVATE_REPO, 7, "olivia")
    response = await web.server.deliver("repository", json.dumps(payload).encode(), guid)
    assert response.status == 202
    await web.world().settle()
    status, text = await page(web, "olivia", f"/tickets/{ARCHIVE}/7")
    assert status == 200 and f"{ARCHIVE}" in text
    assert (await page(web, "mallory", f"/tickets/{PRIVATE_REPO}/7"))[0] == 404
    await say_in(web, PRIVATE_REPO, "mallory", "/publish --no-code", 7)  # the new repository's #7
    kept = TicketService(web.database).load(TicketKey(ARCHIVE, 7))
    assert kept is not None and kept.revision == old.revision
    assert TicketService(web.database).load(TicketKey(PRIVATE_REPO, 7)) is not None
    status, text = await page(web, "mallory", f"/tickets/{PRIVATE_REPO}/7")
    assert status == 200 and ARCHIVE not in text


async def test_the_old_name_of_a_renamed_repository_answers_301_to_its_id(web: WebWorld) -> None:
    """The stand-in as GitHub: the old name redirects to /repositories/{id} until it is reused."""
    web.github.rename_repository(PRIVATE_REPO, ARCHIVE)
    token = web.github.oauth.issue_token("olivia", web.github.now()).token
    async with web.server.client.get(
        f"{web.standin.url}/repos/{PRIVATE_REPO}", headers={"Authorization": f"Bearer {token}"},
        allow_redirects=False,
    ) as response:  # fmt: skip
        assert response.status == 301
        target = response.headers["Location"]
    moved = web.github.repositories[ARCHIVE]
    assert target.endswith(f"/repositories/{moved.id}")
    web.github.add_repository(PRIVATE_REPO, files={}, private=False)
    assert web.github.repositories[PRIVATE_REPO].id != moved.id


async def test_an_idempotency_key_used_on_the_old_repository_answers_nothing_of_it_on_the_new_one(
    web: WebWorld,
) -> None:
    """olivia's `/claim` under a key on the private acme/vault, then the same key and body on
    the new public acme/vault's #7: refused 422 (the key answered a request about another
    repository), never the old ticket's answer replayed as applied; the new #7 stays open."""
    path = f"/api/v1/repos/{PRIVATE_REPO}/tickets/7/commands"
    token = web.github.oauth.issue_token("olivia", web.github.now()).token
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": "claim-7"}
    async with web.server.client.post(path, json={"command": "/claim"}, headers=headers) as response:
        first = await response.json()
        assert response.status == 200 and first["applied"] is True, first
    reuse_the_name(web)
    moved = web.github.repositories[ARCHIVE]
    guid, payload = repository_moved(web.github, web.standin.url, moved, PRIVATE_REPO, 7, "olivia")
    assert (await web.server.deliver("repository", json.dumps(payload).encode(), guid)).status == 202
    await web.world().settle()
    await say_in(web, PRIVATE_REPO, "mallory", "/publish --no-code", 7)  # the new repository's #7
    async with web.server.client.post(path, json={"command": "/claim"}, headers=headers) as response:
        again = await response.json()
        assert response.status == 422, again
        assert response.headers.get("Idempotent-Replayed") is None
    assert again["error"]["code"] == "idempotency_key_reused" and "claimed" not in json.dumps(again)
    new = TicketService(web.database).load(TicketKey(PRIVATE_REPO, 7))
    assert new is not None and new.work is not None and new.work.value == "open"


def in_repository(payload: dict[str, Any], name: str) -> dict[str, Any]:
    """`payload` (of acme/web) as GitHub sends it once acme/web is called `name` (the same id)."""
    text = json.dumps(payload).replace(REPO, name).replace('"web"', f'"{name.split("/")[1]}"')
    return cast(dict[str, Any], json.loads(text))


async def say_in_renamed(world: World, login: str, body: str, name: str = SITE) -> None:
    """`login` comments on `name`#12, the renamed acme/web; wait until it is processed."""
    written = world.github.add_comment(name, 12, body, user=login)
    payload = comment_payload(login, body, 12, id=written.id, user_id=world.github.user_id(login))
    await world.send("issue_comment", in_repository(payload, name))


async def swap_names(world: World) -> None:
    """Installation 7 lists acme/web and acme/site (another repository); #12 is a ticket. Then,
    on GitHub, acme/site is renamed acme/site-old (no webhook of its own reaches railyard) and
    acme/web is renamed acme/site: a common swap."""
    added = json.loads(example("api.github.com", "installation_repositories", "01-added.json"))
    added["installation"]["id"], added["repositories_removed"] = 7, []
    added["repositories_added"] = [
        {"id": world.github.repositories[REPO].id, "full_name": REPO, "name": "web", "private": False},
        {"id": 99, "full_name": SITE, "name": "site", "private": False},
    ]
    await world.send("installation_repositories", added)
    await world.say("rachel", "/publish")
    world.github.add_repository(SITE, files={})
    world.github.rename_repository(SITE, "acme/site-old")
    world.github.rename_repository(REPO, SITE)


async def test_a_rename_into_a_name_the_installation_listed_before_moves_the_tickets(world: World) -> None:
    """After the swap, GitHub's `renamed` webhook moves #12 to acme/site, and cody's `/claim`
    there runs: a name listed before by the installation never stops the move, nor the
    repository's deliveries after it (every one passes the guard that moves records)."""
    await swap_names(world)
    guid, payload = repository_moved(
        world.github, "https://api.github.com", world.github.repositories[SITE], REPO, 7, "max"
    )
    assert (await world.server.deliver("repository", json.dumps(payload).encode(), guid)).status == 202
    await world.settle()
    assert TicketService(world.database).load(TicketKey(SITE, 12)) is not None
    await say_in_renamed(world, "cody", "/claim")
    ticket = TicketService(world.database).load(TicketKey(SITE, 12))
    assert ticket is not None and ticket.work.value == "claimed"


async def test_after_such_a_rename_the_first_command_moves_the_tickets_and_runs(world: World) -> None:
    """The swap with no `renamed` webhook yet: cody's `/claim` on acme/site#12 moves the records
    (GitHub says the id's name) and is applied."""
    await swap_names(world)
    await say_in_renamed(world, "cody", "/claim")
    ticket = TicketService(world.database).load(TicketKey(SITE, 12))
    assert ticket is not None and ticket.work.value == "claimed"


async def test_a_pull_request_opened_before_a_rename_is_linked_by_a_delivery_on_its_branch_after_it(
    world: World,
) -> None:
    """PR #50 was opened from acme/web's own branch agent/12-later (linking nothing). acme/web is
    renamed acme/site (its webhook processed), then cody delivers #12 on agent/12-later: #50 is a
    PR from this repository's branch still, so it links #12 (`pull_request_open`), and its newest
    `railyard` check is no longer the unlinked success (#12's work is delivered, not accepted)."""
    world.github.repositories[REPO].branches["agent/12-later"] = LATER
    world.github.add_pull(REPO, 50, body="Just code", head_ref="agent/12-later", head_sha=LATER)
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.send(
        "pull_request", pull_request_payload("opened", 50, "Just code", head=LATER, ref="agent/12-later")
    )
    moved = world.github.rename_repository(REPO, SITE)
    guid, payload = repository_moved(world.github, "https://api.github.com", moved, REPO, 7, "max")
    assert (await world.server.deliver("repository", json.dumps(payload).encode(), guid)).status == 202
    await world.settle()
    await say_in_renamed(world, "cody", "/deliver branch=agent/12-later\nDone.")
    ticket = TicketService(world.database).load(TicketKey(SITE, 12))
    assert ticket is not None and ticket.work.value == "delivered"
    assert 50 in ticket.rails.pull_requests and ticket.rails.integration.value == "pull_request_open"
    runs = [r for r in world.github.check_runs.values() if r.head_sha == LATER and r.name == "railyard"]
    assert max(runs, key=lambda r: r.id).conclusion != "success"


async def test_a_command_written_before_a_rename_and_delivered_after_the_renamed_event_runs(
    world: World,
) -> None:
    """cody writes `/deliver` on acme/web#12; GitHub renames the repository acme/site and the
    `renamed` webhook is processed first (the comment's delivery waited: a retry, a redelivery
    after an outage). The comment's delivery still names acme/web, as when it was written: it
    is the same repository (the same id), so #12, now acme/site#12, is delivered."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    payload = world.write("cody", "/deliver branch=agent/12-fix\nDone.")
    moved = world.github.rename_repository(REPO, SITE)
    guid, renamed = repository_moved(world.github, "https://api.github.com", moved, REPO, 7, "max")
    assert (await world.server.deliver("repository", json.dumps(renamed).encode(), guid)).status == 202
    await world.settle()
    await world.send("issue_comment", payload)
    ticket = TicketService(world.database).load(TicketKey(SITE, 12))
    assert ticket is not None and ticket.work.value == "delivered"
    assert TicketService(world.database).load(TicketKey(REPO, 12)) is None


def pending_write(world: World, repository_id: int, name: str, key: str) -> None:
    """Repository `repository_id` (its records under `name`) has a comment waiting to be written."""
    with world.database.write() as connection:
        place(connection, repository_id, name, None, 1.0)
        connection.execute(
            insert(effects_table).values(
                dedupe_key=key, installation_id=7, repository=name, repository_id=repository_id,
                kind="comment", payload={"number": 1, "body": "x"}, status="pending",
                next_attempt_at=FAR, created_at=1.0, updated_at=1.0,
            )
        )  # fmt: skip


def status_of(world: World, key: str) -> str:
    with world.database.read() as connection:
        found = connection.execute(select(effects_table.c.status).where(effects_table.c.dedupe_key == key))
        return str(found.scalar())


async def deliver_moved(world: World, now: str, old: str) -> None:
    """GitHub's `renamed` webhook of the repository called `now` (before: `old`), processed."""
    repo = world.github.repositories[now]
    guid, payload = repository_moved(world.github, "https://api.github.com", repo, old, 7, "max")
    assert (await world.server.deliver("repository", json.dumps(payload).encode(), guid)).status == 202
    await drained(world.database)


async def test_a_swap_seen_by_the_guard_first_keeps_the_other_repositorys_writes(world: World) -> None:
    """acme/web and acme/site (99) swap names on GitHub (site -> tmp, web -> site, tmp -> web).
    acme/web's `renamed` webhook arrives first: 99 still exists (now acme/web), so the guard
    moves both together and 99's pending comment is kept; so after 99's own webhook too."""
    await world.say("rachel", "/publish")
    web_id = world.github.repositories[REPO].id
    world.github.add_repository(SITE, files={}, id=99)
    pending_write(world, 99, SITE, "comment:of-99")
    world.github.rename_repository(SITE, "acme/tmp")
    world.github.rename_repository(REPO, SITE)
    world.github.rename_repository("acme/tmp", REPO)
    await deliver_moved(world, SITE, REPO)  # web_id, acme/web -> acme/site
    assert status_of(world, "comment:of-99") == "pending"
    await deliver_moved(world, REPO, "acme/tmp")  # 99, acme/tmp -> acme/web
    with world.database.read() as connection:
        held = dict(connection.execute(select(repositories.c.id, repositories.c.full_name)).all())
    assert held[web_id] == SITE and held[99] == REPO
    assert status_of(world, "comment:of-99") == "pending"
    assert TicketService(world.database).load(TicketKey(SITE, 12)) is not None


async def test_a_chain_of_two_seen_by_the_guard_keeps_the_last_repositorys_writes(world: World) -> None:
    """acme/x (98) became acme/y, acme/site (99) became acme/x, acme/web became acme/site; only
    acme/web's `renamed` webhook is seen: the guard follows the chain on GitHub, so 99 and 98
    (both still there) keep their comments, under their names now."""
    await world.say("rachel", "/publish")
    world.github.add_repository(SITE, files={}, id=99)
    world.github.add_repository("acme/x", files={}, id=98)
    pending_write(world, 99, SITE, "comment:of-99")
    pending_write(world, 98, "acme/x", "comment:of-98")
    world.github.rename_repository("acme/x", "acme/y")
    world.github.rename_repository(SITE, "acme/x")
    world.github.rename_repository(REPO, SITE)
    await deliver_moved(world, SITE, REPO)
    assert status_of(world, "comment:of-99") == status_of(world, "comment:of-98") == "pending"
    with world.database.read() as connection:
        held = dict(connection.execute(select(repositories.c.id, repositories.c.full_name)).all())
    assert held[99] == "acme/x" and held[98] == "acme/y"


async def test_a_comment_delivered_before_the_renamed_webhook_is_not_judged_by_the_name_s_new_repository(
    world: World,
) -> None:
    """cody delivers acme/web#12. mallory (no role in acme/web) writes `/accept` on it. Then, before
    any webhook about it is processed, acme/web is renamed acme/web-old and mallory creates a new
    acme/web (her own, no railyard.yml: admin holds every role) with an issue #12. The comment's
    delivery (acme/web's id, its old name) is acme/web-old's: mallory holds no role there, so
    #12 stays delivered. Today railyard reads the new repository's configuration and mallory's
    permission there and records her acceptance on the old repository's ticket."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nUploads resume.")
    assert world.ticket().work.value == "delivered"
    payload = world.write("mallory", "/accept")
    world.github.rename_repository(REPO, "acme/web-old")
    world.github.add_repository(REPO, files={}, private=False)
    world.github.add_issue(REPO, 12, title="Mine", body="Mine")
    world.github.permissions[(REPO, "mallory")] = "admin"
    await world.send("issue_comment", payload)
    moved = TicketService(world.database).load(TicketKey("acme/web-old", 12))
    here = TicketService(world.database).load(TicketKey(REPO, 12))
    ticket = moved or here
    assert ticket is not None
    assert ticket.work.value == "delivered"


async def test_a_deployment_delivered_before_the_renamed_webhook_is_not_judged_by_the_name_s_new_repository(
    world: World,
) -> None:
    """acme/web#12 merged (PR #50, merge ddd...). acme/web deploys it to production, its
    configured environment; before that delivery is processed (and before any webhook about it),
    acme/web is renamed acme/web-old and mallory creates a new acme/web whose railyard.yml names
    no production environment. The deployment is acme/web-old's (its id): #12 is deployed.
    Today it is judged by mallory's file and recorded nowhere: #12 stays not deployed for ever."""
    merge = "d" * 40
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    closed = pull_request_payload("closed", 50, "Fixes #12", merged=True, state="closed")
    await world.send("pull_request", closed)
    assert world.ticket().rails.merge_commit == merge
    status: dict[str, Any] = json.loads(example("api.github.com", "deployment_status", "01-created.json"))
    status["installation"] = {"id": 7}
    status["repository"].update({"full_name": REPO, "name": "web", "id": world.github.repositories[REPO].id})
    status["deployment"].update({"id": 900, "sha": merge, "environment": "production"})
    status["deployment_status"].update({"id": 1, "state": "success", "environment": "production"})
    world.github.rename_repository(REPO, "acme/web-old")
    world.github.add_repository(
        REPO, files={".github/railyard.yml": "deployments:\n  environments: [staging]\n"}
    )
    world.server.app[WORKER].services.configs.forget(REPO)  # a minute later: the file read anew
    await world.send("deployment_status", status)
    ticket = TicketService(world.database).load(TicketKey("acme/web-old", 12)) or world.ticket()
    assert ticket.rails.deployment.value == "deployed"
