"""The status comment's hidden status-json line, through the real server and the stand-in."""

from __future__ import annotations

import io
import json

from app.cli import main
from app.settings import Settings
from app.views.status_json import MARKER, parse_status_line
from support.world import REPO, World


def status_json(world: World, number: int = 12) -> object:
    """What `railyard status OWNER/REPO#N --json` prints for the ticket, read as JSON."""
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["status", f"{REPO}#{number}", "--json"],
        settings=Settings(DATABASE_URL=world.database.url),
        out=out,
        err=err,
    )
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


async def test_after_publish_and_claim_the_status_comment_carries_status_json(world: World) -> None:
    """After `/publish` and `/claim` (on a branch whose name tries to close the comment), the
    status comment on GitHub has one hidden status-json line equal to `railyard status --json`."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim branch=agent/12--fix-->")

    [body] = world.status_comments()
    assert body.count(MARKER) == 1
    found = parse_status_line(body)
    assert found == status_json(world)
    assert found is not None and (found["work"], found["claimant"]) == ("claimed", "cody")
    assert {"command": "/deliver", "roles": ["claimant holding runner"]} in found["next"]
