"""The OpenAPI 3.1 description of `/api/v1`, served at `/api/v1/openapi.json`.

Written by hand beside the routes in `app.web.api_routes`; `tests/e2e/test_api_openapi.py` holds the
two to the same paths, methods and statuses.
"""

from __future__ import annotations

from typing import Any

from app.version import railyard_version

_REF = "#/components/schemas/"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF + name}


def _json(schema: dict[str, Any], description: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}, **extra}


def _error(description: str) -> dict[str, Any]:
    return _json(_ref("Error"), description)


def _refused(description: str) -> dict[str, Any]:
    return _json(_ref("Refused"), description)


_REPLAYED = {
    "Idempotent-Replayed": {
        "description": "`true` when this is the answer kept for an earlier request with the same key",
        "schema": {"type": "string", "enum": ["true", "false"]},
    }
}
_RETRY_AFTER = {
    "Retry-After": {"description": "seconds until the budget's window is over", "schema": {"type": "string"}}
}
_COMMON = {
    "401": _error("No token, or one GitHub does not accept (wrong, expired, revoked)"),
    "404": _error("No such repository served to this account (or not installed), or not a ticket"),
    "429": _json(
        {"oneOf": [_ref("Error"), _ref("Refused")]},
        "Over a budget: reads per minute, commands per hour (`limits.commands_per_hour`), or requests "
        "by an account without a role (`limits.outsider_requests_per_hour`); nothing was called or recorded",
        headers=_RETRY_AFTER,
    ),
    "503": _error(
        "GitHub could not answer in time, or too many bodies are being read at once (Retry-After); "
        "nothing was recorded: retry with the same key"
    ),
}
_OWNER_REPO = [
    {"name": "owner", "in": "path", "required": True, "schema": {"type": "string"}},
    {"name": "repo", "in": "path", "required": True, "schema": {"type": "string"}},
]
_NUMBER = {"name": "number", "in": "path", "required": True, "schema": {"type": "integer", "minimum": 1}}
_WORK_STATES = ["draft", "open", "claimed", "delivered", "accepted"]

_SCHEMAS: dict[str, Any] = {
    "Status": {
        "type": "object",
        "description": "The `railyard status --json` object (also in the status comment's hidden line)",
        "required": ["ticket", "work", "integration", "deployment", "revision", "attempt", "next"],
        "properties": {
            "ticket": {"type": "string", "examples": ["acme/widgets#12"]},
            "work": {"type": ["string", "null"], "enum": [*_WORK_STATES, None]},
            "integration": {"type": "string"},
            "deployment": {"type": "string"},
            "deployments": {"type": "object", "additionalProperties": {"type": "string"}},
            "revision": {"type": "integer"},
            "attempt": {"type": "integer"},
            "runner": {"type": ["string", "null"]},
            "runner_id": {"type": ["integer", "null"]},
            "claimant": {"type": ["string", "null"]},
            "claimant_id": {"type": ["integer", "null"]},
            "owner": {"type": ["string", "null"]},
            "owner_id": {"type": ["integer", "null"]},
            "no_code": {"type": "boolean"},
            "review": {
                "type": ["string", "null"],
                "enum": ["independent", "self_verified", "override", None],
            },
            "reviewer": {"type": ["string", "null"]},
            "reviewer_id": {"type": ["integer", "null"]},
            "delivery": {"type": ["object", "null"]},
            "merge_commit": {"type": ["string", "null"]},
            "blocked_by": {
                "type": "array",
                "description": (
                    "why each open linked PR holds the repository rail back, judged under the "
                    "repository's checks.required as the rail is (a failing check it does not "
                    "require is never named)"
                ),
                "items": {
                    "type": "object",
                    "properties": {
                        "pull_request": {"type": "integer"},
                        "reason": {
                            "type": "string",
                            "enum": ["check_failed", "ci_awaiting_approval", "conflict"],
                        },
                        "checks": {"type": "array", "items": {"type": "string"}},
                    },
                },
            },
            "reverted": {
                "type": "array",
                "description": "merged PRs of the ticket that a later merged PR reverted",
                "items": {
                    "type": "object",
                    "properties": {"pull_request": {"type": "integer"}, "reverted_by": {"type": "integer"}},
                },
            },
            "next": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"command": {"type": "string"}, "roles": {"type": "array"}},
                },
            },
        },
    },
    "Event": {
        "type": "object",
        "required": ["revision", "type", "actor", "role", "at", "operation_id", "metadata"],
        "properties": {
            "revision": {"type": "integer"},
            "type": {"type": "string"},
            "actor": {"type": "string"},
            "actor_id": {"type": ["integer", "null"]},
            "role": {"type": ["string", "null"]},
            "at": {"type": "string", "format": "date-time"},
            "operation_id": {"type": "string"},
            "policy_version": {"type": ["string", "null"]},
            "metadata": {"type": "object", "description": "`via: api` for changes made through the API"},
        },
    },
    "Command": {
        "type": "object",
        "required": ["command"],
        "additionalProperties": False,
        "properties": {
            "command": {
                "type": "string",
                "description": "The comment grammar: `/claim`, `/deliver branch=x commit=y` + a summary",
            },
            "expected_revision": {"type": "integer", "minimum": 0},
            "evidence": {
                "type": "object",
                "additionalProperties": False,
                "description": "With `/deliver` only: what the run used, as the runner reports it",
                "properties": {
                    "model": {"type": "string"},
                    "input_tokens": {"type": "integer", "minimum": 0},
                    "output_tokens": {"type": "integer", "minimum": 0},
                    "cost_usd": {"type": "number", "minimum": 0},
                },
            },
        },
    },
    "Applied": {
        "type": "object",
        "required": ["applied", "status", "events"],
        "properties": {
            "applied": {"const": True},
            "status": _ref("Status"),
            "events": {"type": "array", "items": _ref("Event")},
        },
    },
    "Refused": {
        "type": "object",
        "required": ["applied", "refusal", "status"],
        "properties": {
            "applied": {"const": False},
            "refusal": {
                "type": "object",
                "required": ["code", "message", "hint"],
                "properties": {
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                    "hint": {"type": "string"},
                    "current_revision": {"type": "integer"},
                },
            },
            "status": {"oneOf": [_ref("Status"), {"type": "null"}]},
        },
    },
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            }
        },
    },
}


def openapi_document() -> dict[str, Any]:
    """The description of every `/api/v1` route, its parameters and its answers."""
    tickets = "/api/v1/repos/{owner}/{repo}/tickets"
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "railyard agent API",
            "version": railyard_version(),
            "description": "Read tickets' three rails and run commands as your own GitHub account.",
        },
        "components": {
            "schemas": _SCHEMAS,
            "securitySchemes": {
                "github": {"type": "http", "scheme": "bearer", "description": "a GitHub token"}
            },
        },
        "security": [{"github": []}],
        "paths": {
            "/api/v1/openapi.json": {
                "get": {
                    "operationId": "openapi",
                    "security": [],
                    "summary": "This description",
                    "responses": {"200": {"description": "OpenAPI 3.1"}},
                }
            },
            tickets: {"get": _list_operation()},
            tickets + "/{number}": {"get": _read_operation()},
            tickets + "/{number}/events": {"get": _events_operation()},
            tickets + "/{number}/commands": {"post": _command_operation()},
        },
    }


def _list_operation() -> dict[str, Any]:
    return {
        "operationId": "listTickets",
        "summary": "The repository's tickets, newest activity first",
        "parameters": [
            *_OWNER_REPO,
            {"name": "work", "in": "query", "schema": {"type": "string", "enum": _WORK_STATES}},
            {"name": "per_page", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
            {
                "name": "after",
                "in": "query",
                "schema": {"type": "string"},
                "description": "the previous `next`",
            },
        ],
        "responses": {
            "200": _json(
                {
                    "type": "object",
                    "required": ["tickets"],
                    "properties": {
                        "tickets": {"type": "array", "items": _ref("Status")},
                        "next": {"type": ["string", "null"]},
                    },
                },
                "A page of tickets (the next page also in `Link: rel=next`)",
            ),
            "400": _error("A filter or page parameter that cannot be"),
            **_COMMON,
        },
    }


def _read_operation() -> dict[str, Any]:
    return {
        "operationId": "getTicket",
        "summary": "One ticket's status",
        "parameters": [*_OWNER_REPO, _NUMBER],
        "responses": {"200": _json(_ref("Status"), "The ticket's status"), **_COMMON},
    }


def _events_operation() -> dict[str, Any]:
    log = {
        "type": "object",
        "required": ["ticket", "events"],
        "properties": {
            "ticket": {"type": "string", "examples": ["acme/widgets#12"]},
            "events": {"type": "array", "items": _ref("Event")},
        },
    }
    description = (
        "The event log in revision order, as `railyard events --json` prints it; a refused command "
        "is a `command_rejected` item after the event whose revision it saw"
    )
    return {
        "operationId": "getTicketEvents",
        "summary": "One ticket's event log",
        "parameters": [*_OWNER_REPO, _NUMBER],
        "responses": {"200": _json(log, description), **_COMMON},
    }


def _command_operation() -> dict[str, Any]:
    return {
        "operationId": "runCommand",
        "summary": "Run one command as the token's account",
        "parameters": [
            *_OWNER_REPO,
            _NUMBER,
            {
                "name": "Idempotency-Key",
                "in": "header",
                "required": True,
                "schema": {"type": "string", "minLength": 1, "maxLength": 255},
                "description": "Scoped to your account; the same key and request replay the kept answer",
            },
        ],
        "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("Command")}}},
        "responses": {
            "200": _json(_ref("Applied"), "Applied", headers=_REPLAYED),
            "400": _error(
                "No Idempotency-Key, a bad one (over 255 characters), or a body that is not the JSON asked"
            ),
            "403": _refused("A role or relation refused (e.g. a runner accepting their own delivery)"),
            "409": _refused(
                "Stale expected revision, wrong state, a lost race (another claim won), or a key whose "
                "command applied to an earlier attempt (`earlier_attempt`: the current status, and the "
                "earlier answer as `earlier_answer`; replayed)"
            ),
            "408": _error("The body stalled (nothing arrived for 15 s); nothing was recorded"),
            "413": _error("A body over 256 KB"),
            "422": _json(
                {"oneOf": [_ref("Error"), _ref("Refused")]},
                "A command that does not parse or cannot run as written, or a key used for another request",
            ),
            **_COMMON,
        },
    }
