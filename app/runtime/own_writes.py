"""What an earlier attempt of an effect may have created on GitHub before its answer was lost
(a timeout, a 502, a process killed): found again by the outbox before it creates anything, so
one intended write makes at most one visible comment or check-run."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.contracts.effect_types import markers_of
from app.github.client import GitHubClient


async def own_check_run(
    github: GitHubClient, app_id: int | None, row: dict[str, Any], payload: Any
) -> int | None:
    """This app's check of that name on that commit, if an earlier attempt created it."""
    params: dict[str, Any] | None = {"check_name": payload["name"], "filter": "all", "per_page": 100}
    while params is not None:
        found, params = await github.call_page(
            "list_check_runs",
            row["installation_id"],
            repository=row["repository"],
            ref=payload["head_sha"],
            params=params,
        )
        runs = found.get("check_runs") if isinstance(found, dict) else None
        for run in runs or []:
            if (run.get("app") or {}).get("id") == app_id and run.get("name") == payload["name"]:
                return int(run["id"])
    return None


async def own_comment(
    github: GitHubClient, app_id: int | None, row: dict[str, Any], number: int, other_than: int | None = None
) -> int | None:
    """The comment carrying the effect's marker (its key's now or an earlier one's, before a
    rename), written by this app, other than `other_than` (one GitHub says is deleted), if any."""
    wanted = markers_of(row["dedupe_key"], row["result"])
    since = datetime.fromtimestamp(row["created_at"] - 60, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    page = 1
    while True:
        comments = await github.call(
            "list_comments",
            row["installation_id"],
            repository=row["repository"],
            number=number,
            params={"since": since, "per_page": 100, "page": page},
        )
        if not isinstance(comments, list) or not comments:
            return None
        for item in comments:
            app = item.get("performed_via_github_app") or {}
            body = item.get("body") or ""
            mine = app.get("id") == app_id and item.get("id") != other_than
            if mine and any(one in body for one in wanted):
                return int(item["id"])
        page += 1
