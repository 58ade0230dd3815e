"""What GitHub says about a person's own token: whose it is, and whether it can read a repository.

The HTTP API checks its caller's token with GitHub on every call (`GET /user`), so a revoked
token stops working at once. Each read is conditional (`app.github.conditional_get`): the ETag and
body of the last answer are kept under the token's scope (a hash of it, never the token), in
the database every process shares, and sent back as `If-None-Match`; GitHub's 304 costs no
rate limit. Freshness is unchanged: every check still asks GitHub.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from app.github.client import GitHubClient, GitHubUnavailable, RateLimited, rate_limit_until
from app.github.conditional_get import HttpCache, MemoryHttpCache, conditional_get, token_scope
from app.github.paths import path_segment


@dataclass(frozen=True)
class Account:
    """The account a token belongs to, by id; `login` is what it is called now."""

    id: int
    login: str
    is_bot: bool


class BadToken(Exception):  # noqa: N818 - it names GitHub's answer
    """GitHub does not accept the token (401): missing, wrong, expired or revoked."""


class UserReads:
    """`GET /user` and `GET /repos/{repo}` with a person's token, conditional, through one client."""

    def __init__(
        self,
        github: GitHubClient,
        *,
        cache: HttpCache | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._github, self._clock = github, clock
        self._cache = cache or github.http_cache or MemoryHttpCache()
        self.not_modified = 0  # answers served from a 304, for benches and tests

    async def account(self, token: str) -> Account:
        """Whose token it is (`BadToken` when GitHub refuses it)."""
        found = await self._read(token, "/user")
        if found is None:  # 403: a token that is no person's (an installation's, Actions' GITHUB_TOKEN)
            raise BadToken("GitHub does not say whose token this is: use a user token, not an app's")
        if not isinstance(found, dict) or not isinstance(found.get("id"), int) or not found.get("login"):
            raise GitHubUnavailable("GET /user: an answer without the account", ambiguous=False)
        return Account(int(found["id"]), str(found["login"]), found.get("type") == "Bot")

    async def can_read(self, token: str, repository: str) -> bool | None:
        """Whether the token's account can read the repository (GitHub hides what it cannot: 404);
        None when GitHub, having just accepted the token for `GET /user`, refuses it here (401):
        the caller then asks with the app's own credentials."""
        return (await self.visible(token, repository))[0]

    async def visible(self, token: str, repository: str) -> tuple[bool | None, Any]:
        """`can_read`, and GitHub's answer about the repository that has the name now (its `id`
        and `created_at`; None when unsaid). A renamed repository's old name (301) is none."""
        try:
            found = await self._read(token, "/repos/" + path_segment("repository", repository))
        except BadToken:
            return None, None
        if not isinstance(found, dict):
            return False, None
        permissions = found.get("permissions")
        if isinstance(permissions, dict):
            return bool(permissions.get("pull")), found
        return found.get("private") is False, found

    async def _read(self, token: str, path: str) -> Any:
        """The answer's JSON (None for 403/404), from the kept body on a 304."""
        url = self._github.api_url(path)
        response, kept = await conditional_get(
            self._cache, token_scope(token), url, lambda headers: self._github.as_user(token, url, headers)
        )
        if kept is not None:
            self.not_modified += 1
            return orjson.loads(kept.body)
        status = response.status_code
        if status == 401:
            raise BadToken("GitHub does not accept this token (missing, wrong, expired or revoked)")
        until = rate_limit_until(response, self._clock())
        if until is not None:
            raise RateLimited(f"GET {path} as a user: rate-limited until {until:.0f}", retry_at=until)
        if status >= 300 and status not in (301, 403, 404):
            raise GitHubUnavailable(f"GET {path} as a user: GitHub answered {status}", ambiguous=False)
        return None if status in (301, 403, 404) else _json(path, response)


def _json(path: str, response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise GitHubUnavailable(
            f"GET {path} as a user: an answer that is not JSON", ambiguous=False
        ) from None
