"""Retention keeps the outbox rows whose results hold what later writes edit in place (a status
comment's GitHub id): a ticket quiet past the retention gets its one status comment edited again."""

from __future__ import annotations

import json
from typing import Any

import httpx
import respx
from sqlalchemy import select

from app.contracts.effect_types import EffectKind, status_comment
from app.runtime.metrics import Metrics
from app.runtime.outbox import Outbox
from app.store.database import Database
from app.store.effects import effects_table
from app.store.retention import DAY, apply_retention
from tests.fakes import GITHUB_API, StillClock, started_client, token_route
from tests.integration.test_outbox import APP_ID, COMMENTS, REPO, FakeIssue, drive, put


async def test_a_ticket_quiet_for_a_month_keeps_its_one_status_comment(database: Database) -> None:
    clock = StillClock()
    issue = FakeIssue(clock)
    state = {"text": "claimed"}

    def edit(request: httpx.Request) -> httpx.Response:
        comment_id = int(request.url.path.rsplit("/", 1)[1])
        for item in issue.comments:
            if item["id"] == comment_id:
                item["body"] = json.loads(request.content)["body"]
                return httpx.Response(200, json=item)
        return httpx.Response(404, json={"message": "Not Found"})

    async def render(row: Any) -> dict[str, Any]:
        return {"number": 12, "body": f"status: {state['text']}"}

    def done() -> bool:
        with database.read() as connection:
            statuses = connection.execute(select(effects_table.c.status)).scalars().all()
        return bool(statuses) and all(s == "done" for s in statuses)

    async with started_client(clock=clock) as github:
        with respx.mock:
            token_route()
            respx.post(COMMENTS).mock(side_effect=issue.post)
            respx.get(COMMENTS).mock(side_effect=issue.list)
            respx.patch(url__regex=rf"{GITHUB_API}/repos/{REPO}/issues/comments/\d+").mock(side_effect=edit)
            outbox = Outbox(
                database, github, Metrics(), app_id=APP_ID, clock=clock,
                renderers={EffectKind.STATUS_COMMENT: render},
            )  # fmt: skip
            put(database, clock, status_comment(7, REPO, 12))
            await drive(outbox, clock, done)
            assert len(issue.comments) == 1

            # A month passes with no change on the ticket; housekeeping runs.
            clock.now += 31 * DAY
            apply_retention(database, clock.now)

            # The ticket changes (a deployment, a /reopen): its status comment is written again.
            state["text"] = "delivered"
            put(database, clock, status_comment(7, REPO, 12))
            await drive(outbox, clock, done)

    bodies = [c["body"].split("\n")[0] for c in issue.comments]
    assert len(issue.comments) == 1, f"the ticket now has {len(issue.comments)} status comments: {bodies}"
