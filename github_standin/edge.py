"""The GitHub stand-in's request pipeline: record, authenticate, rate-limit, inject faults, answer."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import secrets
from typing import Any

from aiohttp import web

from github_standin.common import ACCESS_LEVELS, DOCS, LIMITS_DOCS, SECONDARY_LIMIT, Handler
from github_standin.conditional import conditional
from github_standin.faults import Fault
from github_standin.lookups import BODY, INSTALLATION, STATE, USER, GitHubError, not_found
from github_standin.state import Call, StandinState

RULES = web.AppKey("rules", dict)  # route -> (credential it needs, installation permission it needs)


def _looks_like_jwt(credential: str) -> bool:
    """Three base64url parts, the first two JSON objects (the signature is not checked)."""
    parts = credential.split(".")
    if len(parts) != 3 or not all(re.fullmatch(r"[A-Za-z0-9_-]+", part) for part in parts):
        return False
    try:
        return all(
            isinstance(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))), dict) for p in parts[:2]
        )
    except ValueError:
        return False


def _authenticate(state: StandinState, header: str) -> tuple[str, int | None]:
    scheme, _, credential = header.partition(" ")
    token = state.tokens.get(credential.strip())
    if not header:
        return "none", None
    if scheme.lower() in ("token", "bearer") and token is not None and token.expires_at > state.now():
        return "installation", token.installation_id
    if scheme.lower() in ("token", "bearer") and state.oauth.user_of(credential.strip(), state.now()):
        return "user", None
    if scheme.lower() == "bearer" and _looks_like_jwt(credential.strip()):
        return "jwt", None
    return "invalid", None


def _bucket_key(kind: str, installation_id: int | None) -> str:
    if installation_id:
        return f"installation:{installation_id}"
    return {"jwt": "app", "user": "user"}.get(kind, "anonymous")


def _check_access(request: web.Request, kind: str, installation_id: int | None) -> None:
    if request.match_info.http_exception is not None:
        raise not_found()
    credential, needs = request.app[RULES][request.match_info.route]
    if credential == "web":  # github.com's own pages: forms, no API credential
        return
    if credential == "user" and kind != "user":
        # An installation token may not read /user (403); no token at all needs one (401).
        raise GitHubError(403 if kind == "installation" else 401, _USER_REFUSALS[kind == "installation"])
    if request[BODY] is None:
        raise GitHubError(400, "Problems parsing JSON")
    if credential == "jwt" and kind != "jwt":
        raise GitHubError(401, "A JSON web token could not be decoded")
    # "either": an installation's token or a user's own (the issue-comment endpoints agents use).
    accepted = {"installation": ("installation",), "either": ("installation", "user"), "user": ("user",)}
    if credential in accepted and kind not in accepted[credential]:
        if kind == "installation":  # GitHub: an installation token cannot act as a user
            raise GitHubError(403, "Resource not accessible by integration")
        raise GitHubError(401, "Bad credentials")
    if needs and installation_id is not None:
        area, level = needs.split(":")
        granted = request.app[STATE].installations[installation_id].permissions.get(area, "none")
        if ACCESS_LEVELS.index(granted) < ACCESS_LEVELS.index(level):
            raise GitHubError(403, "Resource not accessible by integration")


_USER_REFUSALS = {True: "Resource not accessible by integration", False: "Requires authentication"}


def _fault_response(fault: Fault, installation_id: int | None, request_id: str) -> web.Response:
    message, docs = {502: "Bad Gateway", 503: "Service Unavailable"}.get(fault.status, "Server Error"), DOCS
    if fault.secondary_rate_limit or fault.status == 429:
        message, docs = SECONDARY_LIMIT.format(request_id), f"{LIMITS_DOCS}#about-secondary-rate-limits"
    elif fault.primary_rate_limit:
        message = f"API rate limit exceeded for installation ID {installation_id}."
        docs = f"{LIMITS_DOCS}#about-primary-rate-limits"
    response = GitHubError(fault.status, message, docs).response()
    if fault.retry_after is not None:
        response.headers["Retry-After"] = str(fault.retry_after)
    return response


async def _answer(
    request: web.Request, handler: Handler, kind: str, request_id: str, call: Call
) -> tuple[web.StreamResponse, bool]:
    """The response, and whether it must report the rate limit as exhausted."""
    state, installation_id = request.app[STATE], request[INSTALLATION]
    try:
        _check_access(request, kind, installation_id)
        bucket = state.bucket(_bucket_key(kind, installation_id))
        if bucket.remaining == 0:
            fault: Fault | None = Fault(status=403, primary_rate_limit=True)
        else:
            bucket.remaining -= 1
            call.counted = True
            fault = state.take_fault(request.method, request.path) or state.random_fault(
                request.method, request.path
            )
        if fault is None:
            return await handler(request), False
        if fault.slow:
            await asyncio.sleep(fault.delay)
            return await handler(request), False
        if not (fault.apply_then_fail or fault.apply_then_timeout or fault.apply_then_drop):
            await asyncio.sleep(fault.delay)
            if fault.retry_after is not None and state.limit_watch is not None:
                state.limit_watch.limited(installation_id, fault.retry_after)
            return _fault_response(fault, installation_id, request_id), fault.primary_rate_limit
        response = await handler(request)  # the effect happens; the client will not hear of it
        if fault.apply_then_drop and request.transport is not None:
            request.transport.close()  # no answer at all: the client sees the connection go
            return response, False
        if fault.apply_then_timeout:
            await asyncio.sleep(fault.delay)
            return response, False
        return _fault_response(fault, installation_id, request_id), False
    except GitHubError as error:
        return error.response(), False


@web.middleware
async def github_edge(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path.startswith("/_standin/"):
        return await handler(request)
    state = request.app[STATE]
    body: Any = None
    request[BODY] = {}
    if request.can_read_body:
        with contextlib.suppress(ValueError):
            body = await request.json()
        request[BODY] = body if isinstance(body, dict) else None  # GitHub: "Problems parsing JSON"
    header = request.headers.get("Authorization", "")
    kind, request[INSTALLATION] = _authenticate(state, header)
    request[USER] = (
        state.oauth.user_of(header.partition(" ")[2].strip(), state.now()) if kind == "user" else None
    )
    if state.limit_watch is not None:
        state.limit_watch.arrived(request[INSTALLATION], request.method, request.path)
    call = Call(
        request.method, request.path, dict(request.query), body, kind, request[INSTALLATION], state.now()
    )
    state.calls.append(call)
    request_id = ":".join(secrets.token_hex(n).upper() for n in (2, 3, 4, 4))
    response, exhausted = await _answer(request, handler, kind, request_id, call)
    bucket = state.bucket(_bucket_key(kind, request[INSTALLATION]))
    credential = request.headers.get("Authorization", "") if state.etag_per_credential else ""
    response = conditional(request, response, credential)
    if response.status == 304 and call.counted:
        bucket.remaining += 1  # GitHub: a 304 to an authorized request counts against no limit
        call.counted = False
    remaining = 0 if exhausted else bucket.remaining
    response.headers.update(
        {
            "x-ratelimit-limit": str(bucket.limit),
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-reset": str(int(bucket.reset.timestamp())),
            "x-ratelimit-used": str(bucket.limit - remaining),
            "x-ratelimit-resource": "core",
            "x-github-request-id": request_id,
            "x-github-api-version-selected": request.headers.get("X-GitHub-Api-Version", "2022-11-28"),
            "x-github-media-type": "github.v3; format=json",
        }
    )
    call.status = response.status
    if state.after_write is not None and call.method in ("POST", "PATCH") and 200 <= call.status < 300:
        state.after_write(call)
    return response
