"""The HTTP API for agents, `/api/v1` (SPEC *Agent interface*): read tickets, run commands.

Every call is made as the account whose GitHub token it carries, checked with GitHub each time
(`GET /user`, conditional: a 304 costs no rate limit, and a revoked token fails at once). The
API serves only repositories where the app is installed and that the account can read; one it
cannot read is 404, like GitHub's own answer, so nothing tells a stranger a private repository
exists. A command is the comment grammar, run through the same roles and the same one door as
a comment (`handlers.api`). `POST` needs an `Idempotency-Key`: its answer is kept with the change
and replayed for the same key and request; the same key with another request is 422. Nothing
is recorded for a request refused before the door, nor when GitHub cannot answer (503): a
retry with the same key is safe. A `/deliver` may carry an `evidence` object (`api_evidence`).

What a request costs is bounded before anything is asked of GitHub with the installation's
token: each command spends the account's `limits.commands_per_hour` in the repository (refusals
included), a command reserves one of the account's `limits.outsider_requests_per_hour` before
its roles are asked (given back when it holds one; all accounts found role-less together get
ten times that: `handlers.outsiders`), reads spend `API_READS_PER_MINUTE`; past a budget: 429
with `Retry-After`, and nothing is called or recorded.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import orjson
import structlog
from aiohttp import web

from app.github.client import GitHubError, GitHubUnavailable, RateLimited
from app.github.users import Account, BadToken, UserReads
from app.runtime.adapters import Adapters
from app.store.api_reads import ServedTicket, served_ticket
from app.store.hops import off_loop
from app.store.listing import Cursor, Listing
from app.views.api_text import earlier_attempt_answer, error_body, outcome_answer
from app.views.event_log import event_items
from app.views.status_json import status_object
from app.web.api_costs import READS_PER_MINUTE, ApiCosts, OverBudget
from app.web.api_evidence import EvidenceError, with_evidence
from app.web.api_policy import read_policy
from app.web.api_refused import Refused
from app.web.api_repositories import ApiRepositories, no_repository
from app.web.bodies import BodyBudget, BodyRefused
from app.web.openapi import openapi_document
from app.web.responses import guarded
from handlers.answers import ArtifactNotFound, CannotRunYet, Malformed, NearMiss, PullTarget
from handlers.api import ApiCommand, ApiCommandRun, replays_an_earlier_attempt
from handlers.errors import Missing, TransientError
from handlers.payloads import dig_int
from handlers.ports import KeptAnswer
from policies.commands import Draft, Publish
from policies.model import Ticket, TicketKey
from policies.parser import ParsedComment, parse_comment
from policies.rails import RailPolicy
from policies.refusals import Refusal
from policies.states import WorkState

log = structlog.get_logger(__name__)

PREFIX = "/api/v1"
MAX_PER_PAGE = 100
MAX_BODY = 256 * 1024  # a comment's 65,536 characters, in UTF-8, and the JSON around them
_DIGITS = re.compile(r"[0-9]{1,9}")  # ASCII only: str.isdigit() also takes "²"
_KEY = re.compile(r"[\x21-\x7e]{1,255}")  # visible ASCII, as HTTP header values are
_FIELDS = frozenset({"command", "expected_revision", "evidence"})


def _json(status: int, body: Any, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status, body=orjson.dumps(body), content_type="application/json", headers=headers
    )


Route = Callable[[web.Request], Awaitable[web.Response]]


def _answering(route: Route) -> Route:
    """A route whose refusals and GitHub outages become JSON answers (never a 5xx but 503)."""

    async def answering(request: web.Request) -> web.Response:
        try:
            return await route(request)
        except Refused as refused:
            return _json(refused.status, error_body(refused.code, refused.message), refused.headers)
        except OverBudget as over:
            return _json(429, error_body("over_budget", str(over)), {"Retry-After": str(over.retry_after)})
        except BadToken as error:
            return _json(401, error_body("bad_token", str(error)), _CHALLENGE)
        except GitHubError as error:  # GitHub refused railyard's own call: nothing was recorded
            log.error("api: GitHub refused railyard's call", error=str(error)[:200])
            message = "GitHub refused a call railyard made for this request; nothing was recorded"
            return _json(503, error_body("github_refused", message))
        except TransientError as error:
            retry = {"Retry-After": str(max(1, int(error.retry_at - time.time())))} if error.retry_at else {}
            message = "GitHub could not answer in time; nothing was recorded: retry with the same key"
            log.warning("api: GitHub unavailable", error=str(error)[:200])
            return _json(503, error_body("github_unavailable", message), retry)

    return answering


_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="railyard"'}


class AgentApi:
    """The `/api/v1` routes over one process's adapters."""

    def __init__(
        self,
        shell: Adapters,
        users: UserReads,
        *,
        clock: Callable[[], float] = time.time,
        reads_per_minute: int = READS_PER_MINUTE,
        bodies: BodyBudget | None = None,
    ) -> None:
        self._shell, self._users, self._clock = shell, users, clock
        self._listing = Listing(shell.database)
        self._bodies = bodies or BodyBudget()
        self.costs = ApiCosts(shell, clock=clock, reads_per_minute=reads_per_minute)
        self._repositories = ApiRepositories(shell, users, self.costs, clock)

    def add_routes(self, app: web.Application) -> None:
        """Register the API under `/api/v1`."""
        app[AGENT_API] = self
        tickets = PREFIX + "/repos/{owner}/{repo}/tickets"
        for path, method, route in [
            (PREFIX + "/openapi.json", "GET", openapi),
            (tickets, "GET", _answering(self.list_tickets)),
            (tickets + "/{number}", "GET", _answering(self.get_ticket)),
            (tickets + "/{number}/events", "GET", _answering(self.get_events)),
            (tickets + "/{number}/commands", "POST", _answering(self.post_command)),
        ]:
            resource = app.router.add_resource(path)
            resource.add_route(method, guarded(route))
            resource.add_route("*", _not_allowed(method))  # any other method: 405 in JSON
        app.router.add_route("*", PREFIX + "/{tail:.*}", _no_such_route)

    # -- reads ------------------------------------------------------------------------

    async def list_tickets(self, request: web.Request) -> web.Response:
        """`{"tickets": [status objects], "next": cursor}`, newest activity first.

        `?work=STATE` filters; `?per_page=N` (1 to 100, default 100) and `?after=CURSOR` page,
        with the next page also in a `Link: <...>; rel="next"` header, as GitHub pages.
        """
        token, account = await self._caller(request)
        self.costs.read(account.id)
        work, per_page, after = _list_query(request)
        repository, installation_id = await self._repository(request, token, account)
        page = await off_loop(
            self._listing.page, repository=repository, work=work, limit=per_page, after=after
        )
        following = page.next.token() if page.next else None
        headers = {}
        if following is not None:
            query = {k: v for k, v in request.query.items() if k != "after"} | {"after": following}
            # Relative, never from the Host header: a forged Host cannot point a client elsewhere.
            headers["Link"] = f'<{request.rel_url.with_query(query)}>; rel="next"'
        now, policy = self._now(), await self._policy(installation_id, repository)
        tickets = [status_object(listed.ticket, now, policy=policy) for listed in page.items]
        return _json(200, {"tickets": tickets, "next": following}, headers)

    async def get_ticket(self, request: web.Request) -> web.Response:
        """The ticket's status object; 404 when the issue is not a ticket."""
        served, installation_id = await self._readable_ticket(request)
        assert served.ticket is not None
        policy = await self._policy(installation_id, served.ticket.key.repository)
        return _json(200, status_object(served.ticket, self._now(), served.clocks, policy))

    async def get_events(self, request: web.Request) -> web.Response:
        """`{"ticket", "events"}`: the log as `railyard events --json` prints it; 404 when not a ticket."""
        (served, _), tickets = await self._readable_ticket(request), self._shell.tickets
        assert served.ticket is not None
        key = served.ticket.key
        history = await off_loop(tickets.history, key)
        refusals = await off_loop(tickets.refusals, key)
        return _json(200, {"ticket": str(key), "events": event_items(history, refusals)})

    async def _readable_ticket(self, request: web.Request) -> tuple[ServedTicket, int]:
        """The ticket the path names and its clocks, for a caller who may read its repository (a
        read spent), and the installation serving it."""
        token, account = await self._caller(request)
        self.costs.read(account.id)
        number = _number(request)
        repository, installation_id, served = await self._served(request, token, account, number)
        if served.ticket is None or not served.ticket.exists:
            raise Refused(404, "not_a_ticket", f"{repository}#{number} is not a railyard ticket")
        return served, installation_id

    async def _policy(self, installation_id: int, repository: str) -> RailPolicy:
        """What `blocked_by` is judged under: the repository's rail policy, as its status comment
        judges it, with at most one read of the file a minute (`app.web.api_policy`)."""
        return await read_policy(self._shell.loader, installation_id, repository)

    async def _served(
        self, request: web.Request, token: str, account: Account, number: int, command: str | None = None
    ) -> tuple[str, int, ServedTicket]:
        """The repository the path names, its installation, and what railyard holds of the ticket
        there, for a caller who can read it (404 otherwise): the name's records checked and the
        ticket read in one database hop (`app.store.api_reads`), with the answer kept under
        `command`'s Idempotency-Key."""
        repository, installation_id, answer = await self._repositories.visible(request, token, account)
        repository_id = dig_int(answer, "id")
        if repository_id is None:
            raise no_repository(request)
        asked = (TicketKey(repository, number), repository_id, (account.id, command) if command else None)
        served = await self._shell.store.read_once(served_ticket, *asked)
        if served.holder is None and served.known_as is None:  # never seen: placed as a webhook would
            if not await self._repositories.ours(repository, answer):
                raise no_repository(request)
            served = await self._shell.store.read_once(served_ticket, *asked)
        if served.holder != repository_id:
            raise no_repository(request)
        return repository, installation_id, served

    # -- commands ---------------------------------------------------------------------

    async def post_command(self, request: web.Request) -> web.Response:
        """Run one command as the token's account, at most once per Idempotency-Key."""
        token, account = await self._caller(request)
        number, key = _number(request), _idempotency_key(request)
        text, expected = await _command_body(request, self._bodies)
        repository, installation_id, served = await self._served(request, token, account, number, key)
        assert served.holder is not None  # `_served` answers only for the repository the name holds now
        digest = _digest(served.holder, number, text, expected)
        if served.kept is not None:
            policy = await self._policy(installation_id, repository)
            return _replay(served.kept, digest, served.ticket, self._now(), policy)
        rules = await self.costs.known_rules(installation_id, repository)
        spent = await self.costs.command(account.id, served.holder, rules)  # refusals included
        parsed = _parsed(text, expected)
        if not isinstance(parsed.command, Draft | Publish):
            ticket = served.ticket
            if ticket is None or not ticket.exists:
                raise Refused(404, "not_a_ticket", f"{repository}#{number} is not a railyard ticket")
        admission = await self.costs.outsider_reserve(account.id, served.holder, rules)
        command = ApiCommand(
            installation_id,
            repository,
            number,
            account.id,
            account.login,
            account.is_bot,
            key,
            digest,
            admission.outsider,
            served.holder,
        )
        run = ApiCommandRun(command, parsed, self._shell.ports, outcome_answer)
        failed = False  # GitHub failed before the door: the outsider request it asked for stays spent
        try:
            outcome = await run.run()
        except Missing:
            raise Refused(404, "no_such_issue", f"{repository}#{number} is not an issue") from None
        except (GitHubUnavailable, RateLimited):  # GitHub itself failing: nothing ran before the door
            failed = True
            # Given back only to an account seen holding a role this hour: GitHub cannot place
            # anyone else now, and what it costs stays within its budgets.
            if not run.door_committed and await self.costs.held_a_role(account.id, served.holder):
                await self.costs.command_back(account.id, spent)
            raise
        finally:
            roleless = None if run.roles is None else not run.roles
            unplaced = failed or (run.roles is None and run.roles_asked)  # asked; GitHub would not say
            asked = unplaced and not await self.costs.held_a_role(account.id, served.holder)
            await self.costs.outsider_settled(
                account.id, served.holder, rules, admission, roleless, asked=asked
            )
        if outcome is not None and outcome.elsewhere:  # the key's operation is another ticket's
            raise _key_reused()
        if outcome is None or run.kept is None:
            raise _before_door(run.early, outcome.refusal if outcome is not None else None)
        if run.kept.digest != digest:  # a request racing this one used the key for another command
            return _replay(run.kept, digest)
        if outcome.replayed:  # the door's replay (its kept answer pruned, a racing retry's commit):
            async with self._shell.ports.store.read() as reads:  # judged against the ticket now
                now_ticket = await reads.ticket(TicketKey(repository, number))
            policy = await self._policy(installation_id, repository)
            return _replay(run.kept, digest, now_ticket, self._now(), policy)
        headers = {"Idempotent-Replayed": "true" if outcome.replayed else "false"}
        return _json(run.kept.status, run.kept.body, headers)

    # -- who and where ----------------------------------------------------------------

    def _now(self) -> datetime:
        """The time an answer judges at (an acceptance past its expiry is answered expired)."""
        return datetime.fromtimestamp(self._clock(), UTC)

    async def _caller(self, request: web.Request) -> tuple[str, Account]:
        """The token and its account, as GitHub says now."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() not in ("bearer", "token") or not token:
            message = "send your GitHub token: Authorization: Bearer <token>"
            raise Refused(401, "unauthenticated", message, _CHALLENGE)
        if len(token) > 1024 or not token.isascii() or not token.isprintable():
            raise Refused(401, "bad_token", "that is not a GitHub token", _CHALLENGE)
        now, tokens = self._clock(), self.costs.tokens
        known = tokens.known(token, now)
        if known is False:
            raise Refused(401, "bad_token", "GitHub refused this token", _CHALLENGE)
        if known is None:
            self.costs.new_token(request.remote)
        try:
            account = await self._users.account(token)
        except BadToken:
            tokens.remember(token, accepted=False, now=now)
            raise
        tokens.remember(token, accepted=True, now=now)
        return token, account

    async def _repository(self, request: web.Request, token: str, account: Account) -> tuple[str, int]:
        """The repository, when the token can read it, the app is installed on it and railyard's
        records under its name are its own."""
        repository, installation_id, answer = await self._repositories.visible(request, token, account)
        if not await self._repositories.ours(repository, answer):
            raise no_repository(request)
        return repository, installation_id


AGENT_API: web.AppKey[AgentApi] = web.AppKey("agent_api", AgentApi)


def _not_allowed(allowed: str) -> Route:
    async def not_allowed(request: web.Request) -> web.Response:
        message = f"{request.method} is not allowed here; {allowed} is"
        return _json(405, error_body("method_not_allowed", message), {"Allow": allowed})

    return not_allowed


async def _no_such_route(request: web.Request) -> web.Response:
    """Any other path under `/api/v1`: 404 in JSON, pointing at the description."""
    message = "no such API route; the routes are described at /api/v1/openapi.json"
    return _json(404, error_body("no_such_route", message))


async def openapi(request: web.Request) -> web.Response:
    """The OpenAPI description of `/api/v1`."""
    return _json(200, openapi_document())


def _list_query(request: web.Request) -> tuple[list[WorkState] | None, int, Cursor | None]:
    """`work`, `per_page` and `after` from the query string (400 for a value that cannot be)."""
    query = request.query
    work = query.get("work")
    if work is not None and work not in {state.value for state in WorkState}:
        states = ", ".join(state.value for state in WorkState)
        raise Refused(400, "bad_filter", f"work must be one of {states}")
    per_page = query.get("per_page", "100")
    if not _DIGITS.fullmatch(per_page) or not 1 <= int(per_page) <= MAX_PER_PAGE:
        raise Refused(400, "bad_page", f"per_page must be 1 to {MAX_PER_PAGE}")
    try:
        after = Cursor.parse(query["after"]) if "after" in query else None
    except ValueError:
        raise Refused(
            400, "bad_page", "after must be a cursor this API gave (the previous page's next)"
        ) from None
    return ([WorkState(work)] if work else None), int(per_page), after


def _number(request: web.Request) -> int:
    text = request.match_info["number"]
    if not _DIGITS.fullmatch(text) or int(text) < 1:
        raise Refused(404, "not_a_ticket", f"{text!r} is not an issue number")
    return int(text)


def _idempotency_key(request: web.Request) -> str:
    key = request.headers.get("Idempotency-Key")
    if key is None or not key.strip():
        raise Refused(
            400, "idempotency_key_required", "POST needs an Idempotency-Key header (1 to 255 characters)"
        )
    if not _KEY.fullmatch(key.strip()):
        raise Refused(400, "bad_idempotency_key", "Idempotency-Key must be 1 to 255 visible ASCII characters")
    return key.strip()


async def _command_body(request: web.Request, bodies: BodyBudget) -> tuple[str, int | None]:
    """The command text and the expected revision, from a JSON object that holds only them."""
    try:
        async with bodies.body(request, MAX_BODY) as raw:
            body = orjson.loads(raw)
    except BodyRefused as refused:
        code = {408: "body_stalled", 413: "too_large"}.get(refused.status, "busy")
        retry = {"Retry-After": str(refused.retry_after)} if refused.retry_after is not None else None
        raise Refused(refused.status, code, refused.message, retry) from None
    except orjson.JSONDecodeError:
        raise Refused(400, "bad_json", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise Refused(400, "bad_json", 'the body must be a JSON object: {"command": "/claim"}')
    if unknown := set(body) - _FIELDS:
        raise Refused(400, "unknown_field", f"unknown fields: {', '.join(sorted(map(str, unknown)))}")
    command, expected = body.get("command"), body.get("expected_revision")
    if not isinstance(command, str) or not command.strip():
        raise Refused(400, "command_required", '"command" must be the command text, e.g. "/claim"')
    try:  # the evidence object read as the comment's arguments, so one grammar checks both
        command = with_evidence(command, body.get("evidence"))
    except EvidenceError as bad:
        raise Refused(400, "bad_evidence", str(bad)) from None
    if expected is not None and (type(expected) is not int or expected < 0):
        raise Refused(
            400, "bad_expected_revision", '"expected_revision" must be a revision number (0 or more)'
        )
    return command, expected


def _digest(repository_id: int, number: int, text: str, expected: int | None) -> str:
    """What a key was used for: the ticket (by its repository's GitHub id, so a key used on a
    repository whose name was later reused answers the new one's request 422, never with the
    old repository's answer), the command text and the expected revision."""
    request = {"ticket": f"{repository_id}#{number}", "command": text, "expected_revision": expected}
    return hashlib.sha256(orjson.dumps(request, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _replay(
    kept: KeptAnswer,
    digest: str,
    ticket: Ticket | None = None,
    now: datetime | None = None,
    policy: RailPolicy | None = None,
) -> web.Response:
    """The kept answer again, or 422 when the key answered another request, or 409 when it
    applied to an attempt older than the ticket's current one (never "applied" for a change
    the current attempt did not get; the current status judged under `policy`)."""
    if kept.digest != digest:
        raise _key_reused()
    if ticket is not None and now is not None and replays_an_earlier_attempt(kept, ticket):
        status, body = earlier_attempt_answer(kept.body, ticket, now, policy)
        return _json(status, body, {"Idempotent-Replayed": "true"})
    return _json(kept.status, kept.body, {"Idempotent-Replayed": "true"})


def _key_reused() -> Refused:
    message = "this Idempotency-Key was used for another request; use a new key for a new request"
    return Refused(422, "idempotency_key_reused", message)


def _parsed(text: str, expected: int | None) -> ParsedComment:
    """The command in the comment grammar: exactly one state-changing command."""
    parsed = parse_comment(text)
    if parsed.informational is not None:
        raise Refused(
            422, "not_a_state_change", f"/{parsed.informational} changes nothing: GET the ticket instead"
        )
    if parsed.command is None and not parsed.error and not parsed.near_miss:
        raise Refused(422, "not_a_command", "the text holds no command: it must start with one, e.g. /claim")
    if parsed.ignored:
        raise Refused(422, "several_commands", "one command per request")
    if expected is not None and parsed.expected_revision not in (None, expected):
        raise Refused(422, "revision_mismatch", "rev= in the command and expected_revision differ")
    revision = parsed.expected_revision if parsed.expected_revision is not None else expected
    return replace(parsed, expected_revision=revision)  # rev=0 is a revision like any other


def _before_door(early: object, refusal: Refusal | None) -> Refused:
    """Why the command stopped before the door (or was refused for a moment), as an answer."""
    if isinstance(early, Malformed):
        return Refused(422, "malformed_command", early.problem)
    if isinstance(early, NearMiss):
        message = f"{early.typed} is not a command; did you mean {early.suggestion}?"
        return Refused(422, "not_a_command", message)
    if isinstance(early, ArtifactNotFound) and early.kind == "issue":
        return Refused(
            404, "not_a_ticket", f"#{early.name} in {early.repository} is a pull request, not an issue"
        )
    if isinstance(early, ArtifactNotFound):
        return Refused(422, "artifact_not_found", f"no {early.kind} {early.name} in {early.repository}")
    if isinstance(early, Refusal):
        return Refused(403, early.code.value, early.reason)
    if isinstance(early, PullTarget) and early.issue is not None:
        message = f"the command names #{early.target}; send it to that ticket's path, not #{early.issue}'s"
        return Refused(422, "another_ticket", message)
    if isinstance(early, CannotRunYet) or refusal is not None:
        reason = early.reason if isinstance(early, CannotRunYet) else refusal.reason if refusal else ""
        return Refused(503, "cannot_verify", f"{reason} Nothing was recorded: retry with the same key.")
    return Refused(503, "not_run", "the command did not run; nothing was recorded: retry with the same key")
