"""What a signed-in person may see, as GitHub says: the code exchange, `GET /user`, and the
repositories of this app's installations their user token can read.

`GET /user/installations` and `GET /user/installations/{id}/repositories` (user-to-server
token, as GitHub documents) list only what the person holds an explicit permission on. A
repository railyard serves that no list names (a public one, or any when the token cannot list
installations) is asked about alone: `GET /repos/{owner}/{repo}` with the token, readable when
GitHub gives it `pull`. Every answer is kept per token for at most `RECHECK_SECONDS` (5
minutes); each re-check sends the ETags it holds as `If-None-Match`, so an unchanged answer
costs a 304 and no rate limit.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from app.github.client import API_VERSION, USER_AGENT
from app.github.endpoints import ENDPOINTS
from app.github.rate_limits import rate_limit_until
from app.settings import Settings
from app.store.web_sessions import SESSIONS_PER_ACCOUNT

RECHECK_SECONDS = 300.0
PUBLIC_SECONDS = 60.0
"""How long a repository GitHub said is public is listed on `/tickets` to anyone without asking."""
_MAX_PAGES = 50  # 5,000 repositories a person can read through one installation
_REMEMBERED = 1000  # tokens whose lists are kept
ETAGS_KEPT = 20 * _REMEMBERED  # conditional answers kept, across every token and address


class AccessError(Exception):
    """GitHub refused the token (401: sign in again) or could not be asked (502)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Person:
    """A signed-in GitHub account: the id is what identifies it, the login is for showing."""

    account_id: int
    login: str


@dataclass(frozen=True)
class Readable:
    """A repository the person can read through one of this app's installations."""

    full_name: str
    private: bool
    installation_id: int
    repository_id: int = 0  # GitHub's id of the repository that has this name now (0: not said)


@dataclass
class _Checked:
    repositories: dict[str, Readable]
    at: float


@dataclass
class Access:
    """GitHub's answers about people, with each token's readable repositories cached briefly."""

    settings: Settings
    clock: Callable[[], float] = time.time
    timeout: float = 15.0
    transport: httpx.AsyncBaseTransport | None = None  # None: httpx's own (tests mock it with respx)
    _client: httpx.AsyncClient | None = None
    _checked: OrderedDict[str, _Checked] = field(default_factory=OrderedDict)
    # (token hash, url) -> (ETag, body, next page): what a 304 stands for; the least recently
    # used go first past ETAGS_KEPT (tokens x repositories would otherwise grow without bound)
    _etags: OrderedDict[tuple[str, str], tuple[str, Any, str | None]] = field(default_factory=OrderedDict)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # (token hash, lowercase full name) -> (what GitHub said of that one repository, when)
    _single: OrderedDict[tuple[str, str], tuple[Readable | None, float]] = field(default_factory=OrderedDict)
    # an ask under way -> (whether GitHub answered it, the answer): a failed one is asked again
    _asking: dict[tuple[str, str], asyncio.Future[tuple[bool, Readable | None]]] = field(default_factory=dict)
    # lowercase full name -> a repository GitHub said is public, and when (`seen_public`)
    _public: OrderedDict[str, tuple[Readable, float]] = field(default_factory=OrderedDict)
    # account id -> the hashes of its tokens, oldest sign-in first (`_signed_in`)
    _tokens: OrderedDict[int, OrderedDict[str, None]] = field(default_factory=OrderedDict)

    @property
    def client(self) -> httpx.AsyncClient:
        """One HTTP client for every call, made on first use."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self.timeout, headers={"User-Agent": USER_AGENT}, transport=self.transport
            )
        return self._client

    async def close(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            await self._client.aclose()

    async def exchange(self, code: str, redirect_uri: str) -> str:
        """The user token for an authorization code; GitHub answers its refusals with 200 + `error`."""
        secret = self.settings.github_client_secret
        form = {
            "client_id": self.settings.github_client_id or "",
            "client_secret": secret.get_secret_value() if secret else "",
            "code": code,
            "redirect_uri": redirect_uri,
        }
        url = self.settings.github_web_url.rstrip("/") + "/login/oauth/access_token"
        try:
            response = await self.client.post(url, data=form, headers={"Accept": "application/json"})
            body = response.json()
        except (httpx.HTTPError, ValueError) as error:
            raise AccessError(502, f"GitHub could not be asked ({type(error).__name__})") from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if response.status_code != 200 or not isinstance(token, str) or not token:
            problem = body.get("error") if isinstance(body, dict) else None
            raise AccessError(
                400, f"GitHub refused the sign-in ({str(problem or response.status_code)[:80]})"
            )
        return token

    async def person(self, token: str) -> Person:
        """Who the token belongs to (`GET /user`)."""
        try:
            body, _ = await self._get(token, ENDPOINTS["get_user"].path)
        except AccessError as error:
            if error.status in (403, 404):  # not a person's token: as good as none
                raise AccessError(401, "GitHub does not say whose token this is") from None
            raise
        if not isinstance(body, dict) or not isinstance(body.get("id"), int):
            raise AccessError(502, "GitHub's answer to GET /user had no account id")
        self._signed_in(body["id"], token)
        return Person(body["id"], str(body.get("login", "")))

    def _signed_in(self, account_id: int, token: str) -> None:
        """Note the account's token: past `SESSIONS_PER_ACCOUNT` of them (its oldest session is
        ended by then, `app.store.web_sessions`), the oldest token's caches are dropped, so signing
        in again and again keeps no more than the account's live sessions' worth."""
        tokens = self._tokens.setdefault(account_id, OrderedDict())
        self._tokens.move_to_end(account_id)
        tokens[_token_key(token)] = None
        tokens.move_to_end(_token_key(token))
        while len(tokens) > SESSIONS_PER_ACCOUNT:
            self._forget_key(tokens.popitem(last=False)[0])
        while len(self._tokens) > _REMEMBERED:
            self._tokens.popitem(last=False)

    async def readable(self, token: str, *, fresh: bool = False) -> dict[str, Readable]:
        """The repositories (lowercase full name -> Readable) the token can read, at most 5 minutes old."""
        key = _token_key(token)
        checked = self._checked.get(key)
        if not fresh and checked is not None and self.clock() - checked.at < RECHECK_SECONDS:
            return checked.repositories
        repositories: dict[str, Readable] = {}
        try:
            installations = await self._pages(
                token, ENDPOINTS["list_user_installations"].path, "installations"
            )
        except AccessError as error:
            if error.status not in (403, 404):  # 403: a token that cannot list app installations
                raise
            installations = []
        for installation in installations:
            installation_id = int(installation["id"])
            path = ENDPOINTS["list_user_installation_repositories"].path.format(
                installation_id=quote(str(installation_id), safe="")
            )
            for item in await self._pages(token, path, "repositories"):
                name = str(item["full_name"])
                repositories[name.lower()] = Readable(
                    name, bool(item.get("private")), installation_id, _id_of(item)
                )
        self._remember(key, _Checked(repositories, self.clock()))
        return repositories

    async def one(self, token: str, full_name: str, account_id: int | None = None) -> Readable | None:
        """The repository, when GitHub says the token can read it (`GET /repos/{owner}/{repo}`).

        The answer is kept for the account (`account_id`; else for the token) for at most
        `RECHECK_SECONDS`: its next sign-in's token reads what the last one could. Asks of one
        repository for one account at the same moment share GitHub's one answer."""
        holder = f"account:{account_id}" if account_id is not None else _token_key(token)
        key = (holder, full_name.lower())
        cached = self._single.get(key)
        if cached is not None and self.clock() - cached[1] < RECHECK_SECONDS:
            return cached[0]
        if (asking := self._asking.get(key)) is not None:
            answered, shared = await asyncio.shield(asking)
            if answered:
                return shared
            return await self._ask_one(token, full_name)  # its own token's answer, not another's
        asking = asyncio.get_running_loop().create_future()
        self._asking[key] = asking
        try:
            found = await self._ask_one(token, full_name)
        except BaseException:
            asking.set_result((False, None))  # the others ask with their own tokens (a 401 is this one's)
            raise
        finally:
            del self._asking[key]
        asking.set_result((True, found))
        self._single[key] = (found, self.clock())
        self._single.move_to_end(key)
        if found is not None and not found.private:  # readable by anyone signed in, for /tickets
            self._public[full_name.lower()] = (found, self.clock())
            self._public.move_to_end(full_name.lower())
            while len(self._public) > _REMEMBERED * 10:
                self._public.popitem(last=False)
        while len(self._single) > _REMEMBERED * 10:
            self._single.popitem(last=False)
        return found

    def seen_public(self, full_name: str) -> Readable | None:
        """The repository, when GitHub said it is public to anyone's ask in the last
        `PUBLIC_SECONDS`: `/tickets` lists it without asking again for every person (the board
        itself asks for the person, `one`)."""
        seen = self._public.get(full_name.lower())
        return seen[0] if seen is not None and self.clock() - seen[1] < PUBLIC_SECONDS else None

    async def _ask_one(self, token: str, full_name: str) -> Readable | None:
        owner, _, name = full_name.partition("/")
        try:
            body, _ = await self._get(token, f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}")
        except AccessError as error:
            if error.status not in (403, 404):
                raise
            return None
        if isinstance(body, dict) and _can_pull(body):
            name = str(body.get("full_name") or full_name)
            return Readable(name, bool(body.get("private")), 0, _id_of(body))
        return None

    async def revoke(self, token: str) -> bool:
        """Ask GitHub to revoke the token (`DELETE /applications/{client_id}/token`, authorized by
        the app's OAuth client), so a copy of the signed-out cookie is worth nothing; True if done."""
        client_id, secret = self.settings.github_client_id, self.settings.github_client_secret
        if not client_id or secret is None:
            return False
        url = f"{self.settings.github_api_url.rstrip('/')}/applications/{quote(client_id, safe='')}/token"
        try:
            response = await self.client.request(
                "DELETE",
                url,
                json={"access_token": token},
                auth=(client_id, secret.get_secret_value()),
                headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION},
            )
        except httpx.HTTPError:
            return False
        return response.status_code in (204, 404)  # 404: GitHub no longer knows the token

    def forget(self, token: str) -> None:
        """Drop what is cached for `token` (on sign-out)."""
        self._forget_key(_token_key(token))

    def _forget_key(self, key: str) -> None:
        self._checked.pop(key, None)
        for cached in [k for k in self._etags if k[0] == key]:
            del self._etags[cached]
        for single in [k for k in self._single if k[0] == key]:
            del self._single[single]

    def _remember(self, key: str, checked: _Checked) -> None:
        self._checked[key] = checked
        self._checked.move_to_end(key)
        while len(self._checked) > _REMEMBERED:
            forgotten, _ = self._checked.popitem(last=False)
            for cached in [k for k in self._etags if k[0] == forgotten]:
                del self._etags[cached]

    async def _pages(self, token: str, path: str, items: str) -> list[dict[str, Any]]:
        """Every item of a paginated list, following GitHub's Link header."""
        found: list[dict[str, Any]] = []
        url: str | None = self.settings.github_api_url.rstrip("/") + path + "?per_page=100"
        for _ in range(_MAX_PAGES):
            if url is None:
                break
            body, url = await self._get(token, url)
            page = body.get(items) if isinstance(body, dict) else None
            found.extend(item for item in page or [] if isinstance(item, dict))
        return found

    async def _get(self, token: str, url: str) -> tuple[Any, str | None]:
        """A GET with the user token, conditional on the ETag held; the body and the next page."""
        if url.startswith("/"):
            url = self.settings.github_api_url.rstrip("/") + url
        key = (_token_key(token), url)
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
        }
        if key in self._etags:
            headers["If-None-Match"] = self._etags[key][0]
        try:
            response = await self.client.get(url, headers=headers)
        except httpx.HTTPError as error:
            raise AccessError(502, f"GitHub could not be asked ({type(error).__name__})") from None
        if response.status_code == 304 and key in self._etags:
            _, body, next_url = self._etags[key]
            self._etags.move_to_end(key)
            return body, next_url
        next_url = response.links.get("next", {}).get("url")
        if response.status_code == 401:
            raise AccessError(401, "GitHub no longer accepts this sign-in")
        if _rate_limited(response):  # the person's own limit: GitHub did not answer, nothing is kept
            raise AccessError(502, f"GitHub's rate limit for this sign-in (answered {response.status_code})")
        if response.status_code in (301, 403, 404):  # 301: a renamed repository's old name is none
            status = 403 if response.status_code == 403 else 404
            raise AccessError(status, f"GitHub answered {response.status_code}")
        if response.status_code != 200:
            raise AccessError(502, f"GitHub answered {response.status_code}")
        body = _kept(response.json())
        if etag := response.headers.get("ETag"):
            self._etags[key] = (etag, body, next_url)
            self._etags.move_to_end(key)
            while len(self._etags) > ETAGS_KEPT:
                self._etags.popitem(last=False)
        return body, next_url


def _rate_limited(response: httpx.Response) -> bool:
    """GitHub's answer when the token's rate limit is spent: a 429, or a 403 saying so in its
    headers or, a secondary limit's, in its message (as the app's own calls read it)."""
    return rate_limit_until(response, time.time()) is not None


_READ_KEYS = frozenset(
    {"id", "login", "full_name", "private", "permissions", "installations", "repositories"}
)


def _kept(body: Any) -> Any:
    """Of a GitHub answer, what sign-in reads (ids, names, `private`, `permissions.pull`, the
    lists of them): a page of 100 repositories kept for its ETag is then some 10 KB, not 500."""
    if isinstance(body, list):
        return [_kept(item) for item in body]
    if not isinstance(body, dict):
        return body
    kept = {key: _kept(value) for key, value in body.items() if key in _READ_KEYS}
    if isinstance(permissions := body.get("permissions"), dict):
        kept["permissions"] = {"pull": permissions.get("pull")}
    return kept


def _can_pull(repository: dict[str, Any]) -> bool:
    """GitHub's `permissions.pull` for the token; a public repository without them is readable."""
    permissions = repository.get("permissions")
    if isinstance(permissions, dict):
        return bool(permissions.get("pull"))
    return repository.get("private") is False


def _id_of(repository: dict[str, Any]) -> int:
    """GitHub's id of a repository answer (0 when it has none: then it matches no record)."""
    found = repository.get("id")
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def _token_key(token: str) -> str:
    """What the caches are keyed by: a hash, so no token sits in a dict key or a log line."""
    return hashlib.sha256(token.encode()).hexdigest()
