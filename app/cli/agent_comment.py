"""`railyard agent` by comment, without a railyard URL: post the command as an issue comment
with the token given, then read the issue's comments until railyard's answer shows.

Only comments written by railyard's own app count (`performed_via_github_app.id` equal to the
app id given with `--app-id`, `RAILYARD_APP_ID` or the action's `app-id` input, required here): a
person can type any marker, and any other app can post one. The id is never learned from GitHub:
any app can write a check-run named `railyard` (GitHub Actions names a job's check-run after the
job), so an id learned that way could be another app's. Within those comments only railyard's own
hidden line counts, the one just before the outbox's effect marker that ends the body:

- applied: the status comment (the one comment ending with the effect marker of the ticket's
  status key, newest first if GitHub shows two) has a status line showing the change bound to
  the posted comment (a claim by its author at a newer revision; a delivery whose operation id
  is its id);
- refused: a reply whose answer line names the posted comment's id.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import httpx

from app.cli.agent_core import (
    MISSING_APP_ID,
    Options,
    Result,
    applied_by_comment,
    backoff,
    claim_shown,
    command_text,
    delivery_shown,
    refused_by_reply,
    unknown,
    usage,
)
from app.contracts.effect_types import marker, status_key
from app.version import railyard_version
from app.views.status_json import ANSWER_MARKER, MARKER, own_hidden_line
from policies.model import ascii_digits

Sleep = Callable[[float], None]
Clock = Callable[[], float]
MAX_REQUEST_SECONDS = 30.0
MAX_PAGES = 50  # 5,000 comments: past that the issue is not a ticket an agent should work on


class Unanswered(Exception):  # noqa: N818 - it names what happened
    """GitHub gave no usable answer to a read; `result` says what that means for the step."""

    def __init__(self, result: Result, retry_after: float | None = None) -> None:
        super().__init__(result.line)
        self.result, self.retry_after = result, retry_after


def outcome_in(
    options: Options, posted: Mapping[str, Any], comments: list[Any], after_revision: int | None
) -> Result | None:
    """The outcome of the posted comment that these comments show, or None while none does."""
    operation_id, author_id = str(posted.get("id")), _author_id(posted)
    for comment in _railyards(comments, options.app_id):
        body = str(comment.get("body") or "")
        answer = own_hidden_line(body, ANSWER_MARKER)
        if answer is not None and str(answer.get("operation_id")) == operation_id:
            return refused_by_reply(answer, body)
    status = shown_status(options, comments)
    if status is None:
        return None
    if options.action == "claim" and author_id is not None and claim_shown(status, author_id, after_revision):
        return applied_by_comment(status)
    if options.action == "deliver" and delivery_shown(status, operation_id):
        return applied_by_comment(status)
    return None


def latest_revision(options: Options, comments: list[Any]) -> int | None:
    """The revision the status comment shows now (None when the issue has none)."""
    status = shown_status(options, comments)
    revision = status.get("revision") if status is not None else None
    return revision if isinstance(revision, int) else None


def shown_status(options: Options, comments: list[Any]) -> dict[str, Any] | None:
    """The status object on the ticket's status comment among `comments` (None if not there)."""
    own = marker(status_key(options.repo, options.issue))
    found: list[tuple[str, dict[str, Any]]] = []
    for comment in _railyards(comments, options.app_id):
        status = own_hidden_line(str(comment.get("body") or ""), MARKER, own)
        if status is not None:
            found.append((str(comment.get("updated_at") or ""), status))
    return max(found, key=lambda item: item[0])[1] if found else None


def _railyards(comments: list[Any], app_id: int | None) -> list[dict[str, Any]]:
    """The comments railyard's app wrote (none when its id is not known)."""
    return [
        comment
        for comment in comments
        if isinstance(comment, dict)
        and isinstance(app := comment.get("performed_via_github_app"), dict)
        and app_id is not None
        and app.get("id") == app_id
    ]


def _author_id(comment: Mapping[str, Any]) -> int | None:
    user = comment.get("user")
    found = user.get("id") if isinstance(user, dict) else None
    return found if isinstance(found, int) else None


class IssueComments:
    """The issue's comments on GitHub, read and written with the agent's token."""

    def __init__(self, options: Options, client: httpx.Client) -> None:
        owner, _, name = options.repo.partition("/")
        base = options.github_api_url.rstrip("/")
        self.repo_url = f"{base}/repos/{quote(owner, safe='')}/{quote(name, safe='')}"
        self.url = f"{self.repo_url}/issues/{options.issue}/comments"
        self.client, self.options = client, options
        self.headers = {
            "Authorization": f"Bearer {options.token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"railyard-agent/{railyard_version()}",
        }

    def post(self, body: str) -> dict[str, Any]:
        """Write the command; a failure here is final (a comment that may exist is not sent twice)."""
        try:
            response = self.client.post(self.url, json={"body": body}, headers=self.headers)
        except httpx.TransportError as error:
            raise Unanswered(unknown(_lost("posting the comment", error))) from error
        if response.status_code == 201 and isinstance(found := _json(response), dict):
            return found
        raise Unanswered(_refused_call(response, "posting the comment"))

    def read(self, since: str | None) -> list[Any]:
        """Every comment (updated at or after `since`), oldest first, across pages."""
        url: str | None = self.url
        params: dict[str, str] = {"per_page": "100", **({"since": since} if since else {})}
        found: list[Any] = []
        for _ in range(MAX_PAGES):
            if url is None:
                break
            page = self._get(url, params)
            found += page[0]
            url, params = page[1], {}
        return found

    def _get(self, url: str, params: dict[str, str]) -> tuple[list[Any], str | None]:
        try:
            response = self.client.get(url, params=params, headers=self.headers, timeout=MAX_REQUEST_SECONDS)
        except httpx.TransportError as error:
            raise Unanswered(unknown(_lost("reading the comments", error)), 0.0) from error
        wait = _rate_limited(response)
        if wait is not None or response.status_code >= 500:
            reason = f"GitHub answered HTTP {response.status_code} reading the comments"
            raise Unanswered(unknown(reason), wait)
        page = _json(response)
        if response.status_code != 200 or not isinstance(page, list):
            raise Unanswered(_refused_call(response, "reading the comments"))
        return page, response.links.get("next", {}).get("url")


def run_comment(
    options: Options,
    client: httpx.Client,
    sleep: Sleep = time.sleep,
    clock: Clock = time.monotonic,
) -> Result:
    """Post the command, then read the comments every poll interval until the outcome shows."""
    if options.app_id is None:  # nothing railyard writes could be told from another app's comment
        return usage(MISSING_APP_ID)
    deadline = clock() + options.timeout
    comments = IssueComments(options, client)
    try:
        after = _baseline(options, comments)
        posted = comments.post(command_text(options))
    except Unanswered as stop:
        return stop.result
    since, last, tries = str(posted.get("created_at") or "") or None, unknown("no answer yet"), 0
    while True:
        wait: float | None = None
        try:
            found = outcome_in(options, posted, comments.read(since), after)
            if found is not None:
                return found
        except Unanswered as stop:
            if stop.retry_after is None:
                return stop.result
            last, wait = stop.result, stop.retry_after or backoff(tries, None)
            tries += 1
        delay = max(wait or 0.0, options.poll_interval)
        if clock() + delay > deadline:
            return _timed_out(options, posted, last)
        sleep(delay)


def _baseline(options: Options, comments: IssueComments) -> int | None:
    """The revision a claim must pass: the status comment's now, or `rev=` if higher."""
    if options.action != "claim":
        return None
    shown = latest_revision(options, comments.read(None))
    candidates = [r for r in (shown, options.rev) if r is not None]
    return max(candidates) if candidates else None


def _timed_out(options: Options, posted: Mapping[str, Any], last: Result) -> Result:
    where = str(posted.get("html_url") or f"comment {posted.get('id')}")
    reason = (
        f"railyard's answer to {where} did not show within {options.timeout:g} s "
        f"(last: {last.message}); it may still apply: read the ticket before sending it again"
    )
    return unknown(reason)


def _rate_limited(response: httpx.Response) -> float | None:
    """Seconds to wait when GitHub says the token is over a rate limit, else None."""
    if response.status_code not in (403, 429):
        return None
    retry_after = response.headers.get("Retry-After")
    if retry_after is not None:
        return backoff(0, retry_after)
    if response.headers.get("x-ratelimit-remaining") == "0":
        reset = response.headers.get("x-ratelimit-reset", "")
        return backoff(0, str(max(0, int(reset) - int(time.time()))) if ascii_digits(reset) else None)
    return None


def _refused_call(response: httpx.Response, doing: str) -> Result:
    body = _json(response)
    message = body.get("message") if isinstance(body, dict) else None
    reason = f"GitHub answered HTTP {response.status_code} {doing}: {message or response.reason_phrase}"
    if response.status_code >= 500:
        return unknown(reason)
    return usage(reason + " (check the token, its access to the repository, and the issue number)")


def _lost(doing: str, error: Exception) -> str:
    return f"GitHub did not answer {doing} ({type(error).__name__})"


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
