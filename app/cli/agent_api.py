"""`railyard agent` through railyard's HTTP API: one POST with an idempotency key, sent again
with the SAME key while railyard or GitHub cannot answer (SPEC: a 503 records nothing)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

from app.cli.agent_core import Options, Result, backoff, claim_held, command_text, from_api, unknown
from app.version import railyard_version

Sleep = Callable[[float], None]
Clock = Callable[[], float]
MAX_REQUEST_SECONDS = 30.0


def commands_url(options: Options) -> str:
    """Where the ticket's commands are posted."""
    owner, _, name = options.repo.partition("/")
    base = (options.url or "").rstrip("/")
    return f"{base}/api/v1/repos/{quote(owner)}/{quote(name)}/tickets/{options.issue}/commands"


def request_body(options: Options) -> dict[str, Any]:
    """The JSON the API takes: the command text and, when given, the expected revision."""
    body: dict[str, Any] = {"command": command_text(options, rev_in_text=False)}
    if options.rev is not None:
        body["expected_revision"] = options.rev
    return body


def headers(options: Options) -> dict[str, str]:
    """The caller's own token and the idempotency key (the same on every try)."""
    return {
        "Authorization": f"Bearer {options.token}",
        "Idempotency-Key": options.key,
        "Accept": "application/json",
        "User-Agent": f"railyard-agent/{railyard_version()}",
    }


def run_api(
    options: Options,
    client: httpx.Client,
    sleep: Sleep = time.sleep,
    clock: Clock = time.monotonic,
) -> Result:
    """Post the command until railyard gives a final answer or the timeout passes.

    A 5xx, a timeout or a dropped connection is tried again after a backoff, with the same key
    and body, so the command applies at most once; every other answer is final.
    """
    deadline, tries = clock() + options.timeout, 0
    url, body, sent = commands_url(options), request_body(options), headers(options)
    while True:
        remaining = deadline - clock()
        try:
            wait = min(MAX_REQUEST_SECONDS, max(remaining, 0.001))  # `--timeout 0`: one try, at once
            response = client.post(url, json=body, headers=sent, timeout=wait)
        except httpx.TransportError as error:
            reason, retry_after = f"railyard did not answer ({type(error).__name__})", None
        else:
            if response.status_code < 500:
                found = from_api(response.status_code, _json(response), _replayed(response))
                return claim_held(found) if options.action == "claim" else found
            reason = f"railyard answered HTTP {response.status_code}"
            retry_after = response.headers.get("Retry-After")
        delay = backoff(tries, retry_after)
        tries += 1
        if clock() + delay > deadline:
            return unknown(f"{reason}, {tries} tries in {options.timeout:g} s", options.key)
        sleep(delay)


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _replayed(response: httpx.Response) -> bool:
    return str(response.headers.get("Idempotent-Replayed", "")).strip().lower() == "true"
