"""A signed body whose facts a column cannot hold as written (a NUL, which PostgreSQL's text
refuses; a ref longer than an index row) is stored with those facts made storable: answered 202,
never a 503, and never failing the other deliveries of its group commit."""

from __future__ import annotations

import asyncio
import json
import uuid

from app.store.database import Database
from support.servers import settings_for_tests
from tests.fakes import running_server

NOW = 1_800_000_000.0


def _issue_body(full_name: str, number: int = 1) -> bytes:
    return json.dumps(
        {
            "action": "opened",
            "issue": {"number": number, "title": "t", "user": {"id": 1, "login": "a"}},
            "repository": {"full_name": full_name, "id": 5},
            "installation": {"id": 7},
            "sender": {"id": 1, "login": "a"},
        }
    ).encode()


async def test_a_signed_body_with_a_nul_in_a_fact_is_never_a_5xx(database: Database) -> None:
    """SPEC: never a 5xx for bad input. GitHub would redeliver a 503 for ever."""
    async with running_server(settings_for_tests(database.url)) as server:
        response = await server.deliver("issues", _issue_body("acme/we\u0000b"), "nul-1")
        assert response.status < 500, f"bad input answered {response.status}"


async def test_a_hostile_body_does_not_fail_the_innocent_deliveries_of_its_batch(database: Database) -> None:
    """Deliveries committed together: the innocent one must be stored (and acknowledged)."""
    async with running_server(settings_for_tests(database.url)) as server:
        answers = await asyncio.gather(
            *[server.deliver("issues", _issue_body("acme/web", n), f"good-{n}") for n in range(20)],
            server.deliver("issues", _issue_body("acme/we\u0000b"), "nul-2"),
            *[server.deliver("issues", _issue_body("acme/web", n), f"good2-{n}") for n in range(20)],
        )
        statuses = [a.status for a in answers]
        assert all(s < 500 for s in statuses), statuses


async def test_a_signed_push_with_a_very_long_ref_is_never_a_5xx(database: Database) -> None:
    """The ordering key (repository:ref) is indexed; PostgreSQL refuses an index row past ~2.7 KB."""
    body = json.dumps(
        {
            "ref": "refs/heads/" + "/".join(uuid.uuid4().hex * 8 for _ in range(80)),
            "before": "a" * 40,
            "after": "b" * 40,
            "repository": {"full_name": "acme/web", "id": 5},
            "installation": {"id": 7},
        }
    ).encode()
    async with running_server(settings_for_tests(database.url)) as server:
        response = await server.deliver("push", body, "long-ref")
        assert response.status < 500, f"bad input answered {response.status}"
