"""The one client layer for GitHub's REST API.

Every call railyard makes is an `Endpoint` in `ENDPOINTS` (`app.github.endpoints`),
declaring the app permission it needs (the manifest test checks `app.yml` grants exactly
their union). githubkit supplies
the app JWT and the installation tokens (cached until a minute before they expire); one
`httpx.AsyncClient` serves the whole process. Responses are read as plain JSON, never
through strict typed models.

A GET sends back the ETag it last got (`http_cache`) as `If-None-Match`; GitHub's 304 (no
rate-limit cost) is answered with the body kept. Every read of the endpoint table goes
through `call`, and its conditional part is `app.github.conditional_get.conditional_get`.

Rate limits are honoured for the whole installation without sleeping: once GitHub says
"wait", every call for that installation fails fast with `RateLimited(retry_at)` until
then, and the worker or outbox reschedules. GitHub's answers as errors are in `api_errors`,
the app's key in `app_key`, the reading of a rate limit in `rate_limits`: this module is the
transport.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime
from json import dumps as json_dumps
from json import loads as json_loads
from typing import Any

import httpx
import structlog
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from githubkit import GitHub
from githubkit.auth import AppAuthStrategy
from githubkit.cache import BaseCacheStrategy, MemCacheStrategy
from githubkit.exception import GitHubException, RequestFailed

from app.contracts.shared_ports import CallMetrics, Limits, MemoryLimits
from app.contracts.traces import TRACING, Attribute, SpanKind, set_attribute, span
from app.github.aiohttp_transport import AiohttpTransport, parsed_url
from app.github.api_errors import (
    ConfigurationError,
    GitHubError,
    GitHubUnavailable,
    Moved,
    NotFound,
    PermissionDenied,
    RateLimited,
)
from app.github.app_key import load_private_key, read_private_key
from app.github.conditional_get import HttpCache, conditional_get, installation_scope
from app.github.endpoints import ENDPOINTS, Endpoint
from app.github.installation_routes import (
    InstallationRoutes,
    forget_installation_token,
    kept_token_header,
)
from app.github.paths import EncodedPathAuth, path_segment
from app.github.rate_limits import SECONDARY_LIMIT_FALLBACK_SECONDS, limited_until, rate_limit_until
from app.settings import Settings
from app.version import railyard_version
from policies.model import ascii_digits

__all__ = [
    "SECONDARY_LIMIT_FALLBACK_SECONDS",
    "ConfigurationError",
    "GitHubClient",
    "GitHubError",
    "GitHubUnavailable",
    "Moved",
    "NotFound",
    "PermissionDenied",
    "RateLimited",
    "rate_limit_until",
    "read_private_key",
]
log = structlog.get_logger(__name__)
API_VERSION = "2022-11-28"
# GitHub asks every client to name itself; the version tells its logs which release called.
USER_AGENT = f"railyard/{railyard_version()}"


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    return str(body.get("message", ""))[:200] if isinstance(body, dict) else str(body)[:200]


def _body(name: str, response: httpx.Response) -> Any:
    """A 2xx answer's JSON (None when empty); one that is not JSON is a transient fault.

    A proxy's HTML page or a truncated body says nothing about what GitHub did, so a write
    answered that way is ambiguous: the caller looks before writing again.
    """
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        ambiguous = response.request.method not in ("GET", "PUT", "DELETE")
        raise GitHubUnavailable(
            f"{name}: GitHub answered {response.status_code} with a body that is not JSON",
            ambiguous=ambiguous,
        ) from None


class GitHubClient:
    """The process's GitHub client; `await start()` before use, `await close()` after."""

    def __init__(
        self,
        settings: Settings,
        metrics: CallMetrics,
        *,
        clock: Callable[[], float] = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 15.0,
        limits: Limits | None = None,
        http_cache: HttpCache | None = None,
        token_cache: Callable[[PrivateKeyTypes], BaseCacheStrategy] | None = None,
    ) -> None:
        key = load_private_key(settings)
        # githubkit types the key as a PEM and passes it to PyJWT, which takes a loaded key too.
        self._strategy = AppAuthStrategy(settings.app_id, key)  # type: ignore[arg-type]
        base_url = settings.github_api_url.rstrip("/") + "/"
        # The token cache belongs to this client (one per process), not to a module global.
        self._github = GitHub(
            self._strategy,
            base_url=base_url,
            auto_retry=False,
            http_cache=False,
            # Installation tokens: this process's memory, or `token_cache(key)` (shared, sealed).
            cache_strategy=token_cache(key) if token_cache is not None else MemCacheStrategy(),
            user_agent=USER_AGENT,
        )
        self._base_url = base_url
        parsed = httpx.URL(base_url)
        self._server = (parsed.host, parsed.port or (443 if parsed.scheme == "https" else 80))
        self._metrics = metrics
        self._clock = clock
        self._transport = transport
        self._timeout = timeout
        self._http: httpx.AsyncClient | None = None
        # GETs as an installation go straight to aiohttp once a header for their route is known.
        self._direct = transport if isinstance(transport, AiohttpTransport) else None
        self._routes = InstallationRoutes()
        self._headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": USER_AGENT,
        }
        self._auth: dict[int | None, httpx.Auth] = {}
        # Where rate-limit pauses live: this process's memory, or the database (SharedLimits)
        # so that every process sharing it honours a pause any of them was told about.
        self.limits: Limits = limits or MemoryLimits()
        # Where GETs' ETags and bodies are kept for conditional requests (None: none are sent).
        self.http_cache = http_cache

    async def start(self) -> None:
        """Open the connection pool, and import what the first installation token needs."""
        _warm_token_models()
        if self._direct is not None:
            self._direct.open()
        self._http = httpx.AsyncClient(
            base_url=self._base_url, timeout=self._timeout, transport=self._transport, headers=self._headers
        )

    async def close(self) -> None:
        """Close the connection pool."""
        if self._http is not None:
            await self._http.aclose()

    async def blocked_until(self, installation_id: int | None) -> float | None:
        """When the installation's rate limit lifts, if it is in force."""
        return await self.limits.paused_until(installation_id, self._clock())

    def _absolute(self, url: str, params: Mapping[str, Any] | None) -> str:
        """The URL httpx's client would send for `url` (relative to the API, or absolute)."""
        full = url if url.startswith(("http://", "https://")) else self._base_url + url
        return str(httpx.URL(full, params=params)) if params else str(parsed_url(full))

    def _auth_for(self, installation_id: int | None) -> httpx.Auth:
        if installation_id not in self._auth:
            strategy = (
                self._strategy if installation_id is None else self._strategy.as_installation(installation_id)
            )
            self._auth[installation_id] = EncodedPathAuth(strategy.get_auth_flow(self._github))
        return self._auth[installation_id]

    async def call(
        self,
        name: str,
        installation_id: int | None,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        **path: Any,
    ) -> Any:
        """Call one endpoint; the decoded JSON body (None for an empty one)."""
        endpoint, installation_id, url = await self._prepare(name, installation_id, path)
        if endpoint.method == "GET" and self.http_cache is not None:
            return await self._get_conditionally(endpoint, name, url, installation_id, params)
        response = await self._send_following(endpoint, name, url, installation_id, params, json)
        return await self._decode(name, installation_id, response)

    async def _send_following(
        self,
        endpoint: Endpoint,
        name: str,
        url: str,
        installation_id: int | None,
        params: Mapping[str, Any] | None,
        json: Any,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        response = await self._send(endpoint, name, url, installation_id, params, json, headers)
        location = response.headers.get("location", "")
        # GitHub answers 301 for a transferred issue: follow a read once, and only on the API
        # itself, so the installation token never goes anywhere else.
        if response.status_code == 301 and endpoint.method == "GET" and location.startswith(self._base_url):
            response = await self._send(endpoint, name, location, installation_id, params, None)
        return response

    async def _get_conditionally(
        self,
        endpoint: Endpoint,
        name: str,
        url: str,
        installation_id: int | None,
        params: Mapping[str, Any] | None,
    ) -> Any:
        """A GET with the ETag kept: a 304 answers with the body kept; a new 200 replaces it."""
        assert self._http is not None and self.http_cache is not None
        key = self._absolute(url, params)
        response, kept = await conditional_get(
            self.http_cache,
            installation_scope(installation_id),
            key,
            lambda headers: self._send_following(endpoint, name, url, installation_id, params, None, headers),
        )
        if kept is not None:
            self._observe(installation_id, response)
            return json_loads(kept.body) if kept.body else None
        return await self._decode(name, installation_id, response)

    async def graphql(
        self, installation_id: int, query: str, variables: Mapping[str, Any], *, endpoint: str = "graphql"
    ) -> Any:
        """A GraphQL query's `data`, sent as `call` sends a POST (token, metrics, rate limits);
        `endpoint` names the table's entry (its permission) the query needs.

        GitHub answers 200 with `errors` for what it cannot resolve: NOT_FOUND becomes
        `NotFound`, FORBIDDEN `PermissionDenied`, RATE_LIMITED a pause of the installation (until
        the answer's Retry-After or its reset, `limited_until`), any other a `GitHubError`.
        """
        # As `call` does for a POST, keeping the answer's headers: a RATE_LIMITED says when in them.
        found, installation, url = await self._prepare(endpoint, installation_id, {})
        sent = {"query": query, "variables": dict(variables)}
        response = await self._send_following(found, endpoint, url, installation, None, sent)
        answer = await self._decode(endpoint, installation, response)
        errors = answer.get("errors") if isinstance(answer, dict) else None
        if errors:
            kinds = {str(e.get("type")) for e in errors if isinstance(e, dict)}
            message = "; ".join(str(e.get("message", ""))[:200] for e in errors if isinstance(e, dict))
            if "RATE_LIMITED" in kinds:
                until = limited_until(response, self._clock())
                await self.limits.pause(installation_id, until)
                raise RateLimited(f"graphql: rate-limited until {until:.0f}", retry_at=until)
            if kinds == {"NOT_FOUND"}:
                raise NotFound(404, message)
            if kinds == {"FORBIDDEN"}:
                raise PermissionDenied(403, f"graphql: {message}")
            raise GitHubError(200, f"graphql: {message}")
        if not isinstance(answer, dict) or not isinstance(answer.get("data"), dict):
            raise GitHubUnavailable("graphql: an answer without data", ambiguous=False)
        return answer["data"]

    async def _prepare(
        self, name: str, installation_id: int | None, path: Mapping[str, Any]
    ) -> tuple[Endpoint, int | None, str]:
        """The endpoint, the identity to call as, and the URL; fails fast while rate-limited."""
        endpoint = ENDPOINTS[name]
        if endpoint.permission is None:
            installation_id = None
        until = await self.blocked_until(installation_id)
        if until is not None:
            raise RateLimited(f"{name}: rate-limited for installation {installation_id}", retry_at=until)
        url = endpoint.path.format(**{k: path_segment(k, v) for k, v in path.items()}).lstrip("/")
        return endpoint, installation_id, url

    async def call_page(
        self, name: str, installation_id: int | None, *, params: Mapping[str, Any] | None = None, **path: Any
    ) -> tuple[Any, dict[str, str] | None]:
        """Like `call` for a list endpoint; also the query of the `rel="next"` page, if any."""
        endpoint, installation_id, url = await self._prepare(name, installation_id, path)
        response = await self._send(endpoint, name, url, installation_id, params, None)
        data = await self._decode(name, installation_id, response)
        following = response.links.get("next", {}).get("url")
        return data, dict(httpx.URL(following).params) if following else None

    async def _send(
        self,
        endpoint: Endpoint,
        name: str,
        url: str,
        installation_id: int | None,
        params: Mapping[str, Any] | None,
        json: Any,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """One request; traced, in an HTTP client span (the semantic conventions' attributes;
        the address as its template, without any value or query)."""
        if not TRACING.on:
            return await self._request(endpoint, name, url, installation_id, params, json, headers)
        attributes: dict[str, Attribute] = {
            "http.request.method": endpoint.method,
            # The address with its path's parameters as placeholders (`{branch}`, `{username}`):
            # a branch a runner typed or an account's login is nobody's to send to a trace backend.
            "url.full": self._base_url + endpoint.path.lstrip("/"),
            "url.template": endpoint.path,
            "server.address": self._server[0],
            "server.port": self._server[1],
            "railyard.github.call": name,
        }
        with span(f"{endpoint.method} {endpoint.path}", attributes, kind=SpanKind.CLIENT):
            response = await self._request(endpoint, name, url, installation_id, params, json, headers)
            set_attribute("http.response.status_code", response.status_code)
            if response.status_code >= 400:
                set_attribute("error.type", str(response.status_code))
            return response

    async def _request(
        self,
        endpoint: Endpoint,
        name: str,
        url: str,
        installation_id: int | None,
        params: Mapping[str, Any] | None,
        json: Any,
        headers: Mapping[str, str] | None,
    ) -> httpx.Response:
        assert self._http is not None, "GitHubClient.start() was not awaited"
        idempotent = endpoint.method in ("GET", "PUT", "DELETE")
        direct = installation_id is not None and self._direct is not None
        try:
            if direct and self._routes.signed(endpoint.path):
                assert self._direct is not None
                auth = self._auth_for(installation_id)
                header = None
                if isinstance(auth, EncodedPathAuth):
                    header = await kept_token_header(auth.inner)
                if header is not None:  # past httpx's client and githubkit's flow: half the CPU
                    sent = {**self._headers, **(headers or {}), "Authorization": header}
                    body = None
                    if json is not None:  # encoded as httpx encodes it
                        body = json_dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                        sent["Content-Type"] = "application/json"
                    address = self._absolute(url, params)
                    return await self._direct.send(
                        endpoint.method, address, sent, body.encode() if body else None, self._timeout
                    )
            response = await self._http.request(
                endpoint.method,
                url,
                params=params,
                json=json,
                headers=headers,
                auth=self._auth_for(installation_id),
            )
            if direct:
                self._routes.saw(endpoint.path, response.request)
            return response
        except (httpx.ConnectError, httpx.ConnectTimeout) as error:
            self._metrics.github_calls.labels("unreachable").inc()
            raise GitHubUnavailable(f"{name}: {type(error).__name__}", ambiguous=False) from error
        except (httpx.TimeoutException, httpx.TransportError) as error:
            self._metrics.github_calls.labels("timeout").inc()
            raise GitHubUnavailable(f"{name}: {type(error).__name__}", ambiguous=not idempotent) from error
        except GitHubException as error:  # the installation-token request itself failed
            self._metrics.github_calls.labels("token_error").inc()
            await self._paused_by_token_request(name, installation_id, error)
            raise GitHubUnavailable(
                f"{name}: could not get an installation token: {error}", ambiguous=False
            ) from error

    async def _paused_by_token_request(
        self, name: str, installation_id: int | None, error: GitHubException
    ) -> None:
        """A rate limit on the token request holds for the app and for the installation whose
        calls need the token: no call for either leaves before GitHub's time."""
        if not isinstance(error, RequestFailed):
            return
        until = rate_limit_until(error.response.raw_response, self._clock())
        if until is None:
            return
        for identity in {None, installation_id}:
            await self.limits.pause(identity, until)
        log.warning(
            "rate-limited by GitHub", call=f"{name} (token)", installation=installation_id, retry_at=until
        )
        raise RateLimited(f"{name}: token request rate-limited until {until:.0f}", retry_at=until) from error

    def api_url(self, path: str) -> str:
        """The absolute address of `path` on GitHub's API."""
        return self._base_url + path.lstrip("/")

    async def as_user(self, token: str, url: str, headers: Mapping[str, str] | None) -> httpx.Response:
        """GET `url` (on this API) with a person's own token: their limit, never an installation's."""
        assert self._http is not None and url.startswith(self._base_url), "start() first; this API only"
        sent = {**(headers or {}), "Authorization": f"Bearer {token}"}
        try:
            if self._direct is not None:  # past httpx's client: half the CPU
                response = await self._direct.get(url, {**self._headers, **sent}, self._timeout)
            else:
                response = await self._http.get(url, headers=sent)
        except (httpx.TimeoutException, httpx.TransportError) as error:
            self._metrics.github_calls.labels("unreachable").inc()
            raise GitHubUnavailable(f"GET as a user: {type(error).__name__}", ambiguous=False) from error
        self._metrics.github_calls.labels(str(response.status_code)).inc()
        return response

    def _observe(self, installation_id: int | None, response: httpx.Response) -> None:
        """Count the answer by status, and note the installation's remaining quota."""
        self._metrics.github_calls.labels(str(response.status_code)).inc()
        remaining = response.headers.get("x-ratelimit-remaining")
        if remaining is not None and ascii_digits(remaining):
            self._metrics.rate_limit_remaining.labels(str(installation_id)).set(int(remaining))

    async def _decode(self, name: str, installation_id: int | None, response: httpx.Response) -> Any:
        status = response.status_code
        self._observe(installation_id, response)
        if status < 300:
            return _body(name, response)
        until = rate_limit_until(response, self._clock())
        if until is not None:
            await self.limits.pause(installation_id, until)
            log.warning("rate-limited by GitHub", call=name, installation=installation_id, retry_at=until)
            raise RateLimited(f"{name}: rate-limited until {until:.0f}", retry_at=until)
        if status >= 500:
            ambiguous = response.request.method not in ("GET", "PUT", "DELETE")
            raise GitHubUnavailable(f"{name}: GitHub answered {status}", ambiguous=ambiguous)
        if status == 401 and installation_id is not None:
            # The installation token was refused (revoked before its time): forgotten here and
            # by every process sharing it, and the call is tried again with a new one.
            auth = self._auth_for(installation_id)
            await forget_installation_token(auth.inner if isinstance(auth, EncodedPathAuth) else auth)
            raise GitHubUnavailable(f"{name}: GitHub refused the installation token (401)", ambiguous=False)
        message = _message(response)
        if status == 301:
            raise Moved(f"{name}: {message}", response.headers.get("location"))
        if status == 404:
            raise NotFound(status, message)
        if status == 403:
            raise PermissionDenied(status, message)
        raise GitHubError(status, message)


_EXPIRES_AT = "%Y-%m-%dT%H:%M:%SZ"
"""How githubkit reads an installation token's `expires_at` (`githubkit.auth.app`)."""


def _warm_token_models() -> None:
    """githubkit imports its schema models and builds their validators when it asks for and
    parses the first installation token, and the standard library compiles the pattern of the
    token's expiry on its first `strptime`: 59 to 66 ms of CPU in a command's path, once per
    process (measured in a fresh interpreter). Done at start instead, before any delivery
    waits on it."""
    from githubkit_schemas.latest.models import (
        AppInstallationsInstallationIdAccessTokensPostBody,
        BasicError,
        InstallationToken,
        ValidationError,
    )
    from pydantic import TypeAdapter

    asked = AppInstallationsInstallationIdAccessTokensPostBody
    for model in (asked, BasicError, InstallationToken, ValidationError):
        TypeAdapter(model)
    datetime.strptime("2026-01-01T00:00:00Z", _EXPIRES_AT)
