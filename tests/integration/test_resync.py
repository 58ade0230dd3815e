"""`railyard resync OWNER/REPO#N` re-reads GitHub (respx) and records only what changed."""

from __future__ import annotations

import asyncio
import gc
import io
import time
from datetime import UTC, datetime

import httpx
import pytest
import respx

from app.cli import main
from app.store import pulls
from app.store.database import Database
from app.store.limits import SharedLimits
from app.store.tickets import TicketService
from handlers.ports import PullRequest
from policies.commands import Claim, Publish
from policies.model import TicketKey
from tests.fakes import GITHUB_API, REQUESTER, RUNNER, Comments, app_settings, private_key_pem, token_route

REPO = "acme/web"
API = f"{GITHUB_API}/repos/{REPO}"
MERGE = "d" * 40


def run(database: Database, *argv: str) -> tuple[int, str, str]:
    """The CLI in-process, as a configured app."""
    out, err = io.StringIO(), io.StringIO()
    settings = app_settings(database.url, GITHUB_API_URL=GITHUB_API, PRIVATE_KEY=private_key_pem())
    return main(list(argv), settings=settings, out=out, err=err), out.getvalue(), err.getvalue()


def no_config_files() -> None:
    """Neither acme/web nor its organization's acme/.github holds `.github/railyard.yml` (404)."""
    for repository in (REPO, "acme/.github"):
        respx.get(f"{GITHUB_API}/repos/{repository}/contents/.github/railyard.yml").mock(
            return_value=httpx.Response(404, json={"message": "Not Found"})
        )


def backends(database: Database) -> int:
    """PostgreSQL's sessions on this database other than the one asking (0 on SQLite)."""
    if database.is_sqlite:
        return 0
    with database.read() as connection:
        return int(
            connection.exec_driver_sql(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            ).scalar_one()
        )


@pytest.fixture(autouse=True)
def _httpx_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's client on httpx's own transport, which respx mocks (it sends through aiohttp,
    `app.github.aiohttp_transport`, whose own tests run against a real server)."""
    monkeypatch.setattr("app.bootstrap.AiohttpTransport", lambda: None)


def closing(*numbers: int) -> None:
    """GitHub's GraphQL answer for the PR's closing issue references (resync reads the sidebar)."""
    nodes = [{"number": n, "repository": {"nameWithOwner": REPO}} for n in numbers]
    answer = {"data": {"repository": {"pullRequest": {"closingIssuesReferences": {"nodes": nodes}}}}}
    respx.post(f"{GITHUB_API}/graphql").mock(return_value=httpx.Response(200, json=answer))


@respx.mock
def test_resync_records_what_happened_while_webhooks_were_lost(database: Database) -> None:
    """A branch, a merge and a deployment missed in an outage are recorded; a second resync adds nothing."""
    service, comments = TicketService(database), Comments()
    key = TicketKey(REPO, 12)
    service.execute(key, Publish("Resumable uploads"), comments.context(REQUESTER))
    service.execute(key, Claim(branch="agent/12"), comments.context(RUNNER))
    url, at = "https://github.com/acme/web/pull/50", datetime(2026, 11, 30, 9, tzinfo=UTC)
    opened = PullRequest(REPO, 50, url, True, False, "agent/12", "f" * 40, None, at)
    with database.write() as connection:
        pulls.remember(connection, opened, {12})
    respx.get(f"{API}/installation").mock(return_value=httpx.Response(200, json={"id": 7}))
    token_route()
    no_config_files()
    respx.get(f"{API}/branches/agent/12").mock(
        return_value=httpx.Response(200, json={"name": "agent/12", "commit": {"sha": "f" * 40}})
    )
    merged = {
        "number": 50, "html_url": "https://github.com/acme/web/pull/50", "state": "closed", "merged": True,
        "merged_at": "2026-11-30T10:00:00Z", "merge_commit_sha": MERGE, "updated_at": "2026-11-30T10:00:00Z",
        "body": "Fixes #12", "head": {"ref": "agent/12", "sha": "f" * 40},
    }  # fmt: skip
    respx.get(f"{API}/pulls/50").mock(return_value=httpx.Response(200, json=merged))
    closing(12)  # GitHub counts `Fixes #12` among the closing references too
    respx.get(f"{API}/deployments").mock(return_value=httpx.Response(200, json=[{"id": 900, "sha": MERGE}]))
    respx.get(f"{API}/deployments/900/statuses").mock(
        return_value=httpx.Response(200, json=[{"id": 3, "state": "success"}])
    )
    respx.get(f"{API}/compare/{MERGE}...{MERGE}").mock(
        return_value=httpx.Response(200, json={"status": "identical"})
    )

    gc.disable()  # a connection left out of the closed pool would stay open until a collection
    try:
        before = backends(database)
        status, out, err = run(database, "resync", "acme/web#12")
        # The CLI's database closed every connection it opened (a backend leaves PostgreSQL's
        # list a moment after its client closed it; one left open would stay).
        deadline = time.monotonic() + 3
        while backends(database) != before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert backends(database) == before
    finally:
        gc.enable()
    assert status == 0, err
    ticket = service.load(key)
    assert (ticket.work.value, ticket.rails.integration.value, ticket.rails.deployment.value) == (
        "claimed",
        "merged",
        "deployed",
    )
    assert "merge_state_changed" in out and "deployment_state_changed" in out
    status, out, _ = run(database, "resync", "acme/web#12")
    assert (status, out.strip()) == (0, "railyard: acme/web#12: nothing changed.")


@respx.mock
def test_resync_of_a_pull_request_edited_after_its_merge_does_not_merge_the_ticket(
    database: Database,
) -> None:
    """The API shows a merged PR whose body gained `Refs #12` after the merge: the link is
    recorded, the ticket is not merged (the answer's body is not the body it merged with)."""
    service, comments = TicketService(database), Comments()
    key = TicketKey(REPO, 12)
    service.execute(key, Publish("Resumable uploads"), comments.context(REQUESTER))
    service.execute(key, Claim(), comments.context(RUNNER))
    url, at = "https://github.com/acme/web/pull/51", datetime(2026, 11, 30, 9, tzinfo=UTC)
    with database.write() as connection:
        pulls.remember(
            connection, PullRequest(REPO, 51, url, True, False, "chore/x", "e" * 40, None, at), {12}
        )
    respx.get(f"{API}/installation").mock(return_value=httpx.Response(200, json={"id": 7}))
    token_route()
    no_config_files()
    edited = {
        "number": 51, "html_url": url, "state": "closed", "merged": True, "merged_at": "2026-11-30T10:00:00Z",
        "merge_commit_sha": MERGE, "updated_at": "2026-11-30T12:00:00Z", "body": "Refs #12",
        "head": {"ref": "chore/x", "sha": "e" * 40, "repo": {"full_name": REPO}},
    }  # fmt: skip
    respx.get(f"{API}/pulls/51").mock(return_value=httpx.Response(200, json=edited))
    closing()  # `Refs #12` closes nothing
    respx.get(f"{API}/deployments").mock(return_value=httpx.Response(200, json=[]))
    status, _, err = run(database, "resync", "acme/web#12")
    assert status == 0, err
    ticket = service.load(key)
    assert ticket.rails.integration.value == "unreported" and ticket.rails.merge_commit is None
    assert ticket.rails.pull_requests[51].linked is True


def test_resync_of_an_unknown_ticket_is_a_clear_error(database: Database) -> None:
    """Not a ticket: exit 1 with a message."""
    status, _, err = run(database, "resync", "acme/web#999")
    assert status == 1 and "not a ticket" in err


@respx.mock
def test_resync_honours_a_rate_limit_pause_another_process_stored(database: Database) -> None:
    """While a pause a server stored in the database holds, `railyard resync` sends GitHub nothing:
    it says it is rate-limited and records nothing, instead of spending a limit GitHub closed."""
    service, comments = TicketService(database), Comments()
    key = TicketKey(REPO, 12)
    service.execute(key, Publish("Resumable uploads"), comments.context(REQUESTER))
    before = [recorded.event for recorded in service.history(key)]
    asyncio.run(SharedLimits(database).pause(None, time.time() + 3600))  # as a `serve` process would
    installation = respx.get(f"{API}/installation").mock(return_value=httpx.Response(200, json={"id": 7}))

    status, out, err = run(database, "resync", "acme/web#12")

    assert status != 0 and "rate" in err.lower(), (status, out, err)
    assert not installation.called and not respx.calls, "a paused app still called GitHub"
    assert [recorded.event for recorded in service.history(key)] == before
