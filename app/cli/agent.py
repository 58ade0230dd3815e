"""`railyard agent claim|deliver`: what an agent's workflow runs (the actions in actions/ call it).

Through railyard's API when a URL is given (`--url`, `RAILYARD_URL`), else by an issue comment
posted with the token. Every option has the environment fallback an Actions step has; no
database, no settings. Exit 0 applied, 1 refused (its message and hint on stderr), 2 usage,
3 outcome unknown (no answer before `--timeout`; retrying with the same key is safe).
"""

from __future__ import annotations

import argparse
import os
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import httpx

from app.cli.agent_api import run_api
from app.cli.agent_comment import run_comment
from app.cli.agent_core import (
    EXIT_REFUSED,
    EXIT_USAGE,
    MAX_KEY,
    MISSING_APP_ID,
    Options,
    Result,
    default_key,
    outputs,
    step_summary,
)
from app.cli.agent_log import clean_line, defused, json_line, prefixed
from policies.evidence import ARGUMENT_OF, evidence_problem
from policies.model import ascii_digits

DEFAULT_GITHUB_API = "https://api.github.com"
DEFAULT_TIMEOUT = 120.0
DEFAULT_POLL = 5.0
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_NO_SPACE = re.compile(r"\S+")


class UsageError(ValueError):
    """An input that is missing or wrong, said in one line."""


def register(commands: Any) -> None:
    """Add `agent claim` and `agent deliver` to the `railyard` command line."""
    agent = commands.add_parser("agent")
    actions = agent.add_subparsers(dest="agent_action", required=True)
    claim = actions.add_parser("claim", help="claim an open ticket")
    _common(claim)
    claim.add_argument("--check-in", type=int, help="minutes of silence allowed before the claim is overdue")
    claim.add_argument("--branch", help="the branch the attempt works on")
    deliver = actions.add_parser("deliver", help="deliver the claimed ticket's work")
    _common(deliver)
    deliver.add_argument("--branch", help="the branch holding the work")
    deliver.add_argument("--commit", help="the commit delivered (default without --branch: GITHUB_SHA)")
    deliver.add_argument("--summary", help="what was done (or --summary-file)")
    deliver.add_argument("--summary-file", help="a file holding the summary")
    deliver.add_argument("--artifact", action="append", default=[], help="an artifact URL (repeatable)")
    deliver.add_argument("--model", help="the model the run used (reported as evidence)")
    deliver.add_argument("--input-tokens", help="tokens the run read (reported as evidence)")
    deliver.add_argument("--output-tokens", help="tokens the run wrote (reported as evidence)")
    deliver.add_argument("--cost-usd", help="what the run cost, in US dollars (reported as evidence)")
    for parser in (claim, deliver):
        parser.set_defaults(handler=None, without_database=cmd_agent)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", help="OWNER/REPO (default GITHUB_REPOSITORY)")
    parser.add_argument("--issue", type=int, required=True, help="the ticket's issue number")
    parser.add_argument(
        "--token", help="the agent's GitHub token (default RAILYARD_TOKEN, then GITHUB_TOKEN)"
    )
    parser.add_argument(
        "--url", help="railyard's address for the API (default RAILYARD_URL; none: by comment)"
    )
    parser.add_argument(
        "--github-api-url", help=f"GitHub's API (default GITHUB_API_URL, {DEFAULT_GITHUB_API})"
    )
    parser.add_argument("--rev", type=int, help="apply only if the ticket is still at this revision")
    parser.add_argument(
        "--idempotency-key",
        help="the API's key (default: from GITHUB_RUN_ID and GITHUB_RUN_ATTEMPT, the action, the issue and "
        "the commit: a retry replays, a re-run is a new command)",
    )
    parser.add_argument(
        "--timeout", type=float, help=f"seconds to wait for the outcome (default {DEFAULT_TIMEOUT:g})"
    )
    parser.add_argument(
        "--poll-interval", type=float, help=f"seconds between reads by comment (default {DEFAULT_POLL:g})"
    )
    parser.add_argument(
        "--app-id",
        help="railyard's GitHub App id (the App ID on the app's settings page): by comment, only "
        "its comments are trusted, and it is required (default RAILYARD_APP_ID)",
    )
    parser.add_argument("--json", action="store_true", help="print the final answer as JSON")


def cmd_agent(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Send the command, wait for its outcome, report it; the exit status says what happened."""
    env = os.environ
    try:
        options = resolve(args, env, _summary_file(args.__dict__.get("summary_file")))
    except UsageError as error:
        err.write(prefixed("railyard: ", str(error)))
        return EXIT_USAGE
    with httpx.Client(follow_redirects=False) as client:
        result = run_api(options, client) if options.url else run_comment(options, client)
    report(options, result, env, out, err, as_json=bool(args.json))
    return result.exit


def resolve(args: argparse.Namespace, env: Mapping[str, str], summary_file: str | None = None) -> Options:
    """The options, each from its flag, else its environment variable, checked (UsageError)."""
    given: dict[str, Any] = {k: (None if v == "" else v) for k, v in vars(args).items()}
    action = str(given["agent_action"])
    repo = given["repo"] or _env(env, "GITHUB_REPOSITORY")
    token = given["token"] or _env(env, "RAILYARD_TOKEN") or _env(env, "GITHUB_TOKEN")
    url = given["url"] or _env(env, "RAILYARD_URL")
    # The workflow's commit only when no branch is named: a job that pushed to a branch has
    # moved past GITHUB_SHA, and railyard records the branch's head itself.
    pushed = action == "deliver" and not given.get("branch")
    commit = given.get("commit") or (_env(env, "GITHUB_SHA") if pushed else None)
    _check(repo, token, url, given)
    assert repo is not None and token is not None  # checked above
    summary = given.get("summary") or summary_file or ""
    artifacts = tuple(a for a in given.get("artifact") or () if a)
    evidence: tuple[str, ...] = ()
    if action == "deliver":
        _check_delivery(summary, given.get("branch"), commit, artifacts)
        evidence = _evidence(given)
    # What a delivery says is in its key with its commit: a new one in the same job is a new command.
    said = "\n".join((str(given.get("branch") or ""), summary, *artifacts, *evidence))
    key = (
        given["idempotency_key"]
        or default_key(env, action, given["issue"], commit, said)
        or f"cli-{uuid.uuid4()}"
    )
    if len(key) > MAX_KEY:
        raise UsageError(f"--idempotency-key is {len(key)} characters; the API takes at most {MAX_KEY}")
    return Options(
        action, repo, given["issue"], token, url,
        given["github_api_url"] or _env(env, "GITHUB_API_URL") or DEFAULT_GITHUB_API,
        key, DEFAULT_TIMEOUT if given["timeout"] is None else given["timeout"],
        DEFAULT_POLL if given["poll_interval"] is None else given["poll_interval"],
        given["rev"], given.get("check_in"), given.get("branch"), commit, summary, artifacts,
        app_id=_app_id(given["app_id"] or _env(env, "RAILYARD_APP_ID"), by_comment=url is None),
        evidence=evidence,
    )  # fmt: skip


def _app_id(text: str | None, *, by_comment: bool) -> int | None:
    """railyard's app id; required by comment, where only its app's comments are trusted.

    It is never learned from GitHub: any app can write a check-run named `railyard` (a workflow
    job of that name is GitHub Actions' own check-run), so a learned id could be anyone's."""
    if text is None:
        if by_comment:
            raise UsageError(MISSING_APP_ID)
        return None
    if not ascii_digits(text.strip()) or int(text) < 1:
        raise UsageError(f"--app-id must be railyard's GitHub App id, a positive number; got {text!r}")
    return int(text)


def _env(env: Mapping[str, str], name: str) -> str | None:
    return env.get(name, "").strip() or None


def _check(repo: str | None, token: str | None, url: str | None, given: Mapping[str, Any]) -> None:
    if not repo or not _REPO.fullmatch(repo):
        raise UsageError(f"--repo must be OWNER/REPO (or set GITHUB_REPOSITORY); got {repo!r}")
    if given["issue"] < 1:
        raise UsageError("--issue must be a positive issue number")
    if not token:
        raise UsageError("no token: pass --token or set RAILYARD_TOKEN (or GITHUB_TOKEN)")
    if url:
        _check_url(url)
    if given["rev"] is not None and given["rev"] < 0:
        raise UsageError("--rev must be a revision number (0 or more)")
    timeout, poll = given["timeout"] or 0, given["poll_interval"] or 1
    if not (0 <= timeout < 1e9) or not (0 < poll < 1e9):  # NaN fails both, and never ends a wait
        raise UsageError("--timeout must be 0 or more seconds and --poll-interval more than 0")
    branch = given.get("branch")
    if branch is not None and not _NO_SPACE.fullmatch(branch):
        raise UsageError(f"--branch must be a branch name without spaces; got {branch!r}")


def _check_url(url: str) -> None:
    """railyard's address: https, or http only on this machine (the token must not cross a
    network in clear), and no credentials in it (the address is printed in the step summary)."""
    parsed = urlsplit(url)
    if parsed.scheme not in ("https", "http") or not parsed.hostname:
        raise UsageError(f"--url must be railyard's https address; got {url!r}")
    if parsed.username or parsed.password:
        raise UsageError("--url must not hold a user or password: the token is sent as a header")
    if parsed.scheme == "http" and parsed.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise UsageError(f"--url must be https (http only for 127.0.0.1 or localhost): {url}")


def _evidence(given: dict[str, Any]) -> tuple[str, ...]:
    """The delivery's evidence as `/deliver` arguments, each checked as railyard will check it."""
    found = []
    for option, key in ARGUMENT_OF.items():
        value = given.get(option)
        if value is None:
            continue
        problem = evidence_problem(key, str(value))
        if problem is not None:
            raise UsageError(f"--{option.replace('_', '-')}: {problem}")
        found.append(f"{key}={value}")
    return tuple(found)


def _check_delivery(summary: str, branch: str | None, commit: str | None, artifacts: tuple[str, ...]) -> None:
    if not summary.strip():
        raise UsageError("a delivery needs a summary: --summary TEXT or --summary-file PATH")
    if not (branch or commit or artifacts):
        raise UsageError("a delivery needs an artifact: --branch, --commit (or GITHUB_SHA) or --artifact URL")
    for url in artifacts:
        if not _NO_SPACE.fullmatch(url):
            raise UsageError(f"--artifact must be a URL without spaces; got {url!r}")


def _summary_file(path: str | None) -> str | None:
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise UsageError(f"cannot read --summary-file {path}: {error.strerror or error}") from error


def report(
    options: Options, result: Result, env: Mapping[str, str], out: TextIO, err: TextIO, *, as_json: bool
) -> None:
    """The one-line result (or the JSON answer), the refusal's words on stderr, and the step's
    summary and outputs when running in Actions."""
    target = f"{options.repo}#{options.issue}"
    # Every line written starts with `railyard` or `{` and holds no `##[`: the runner reads a
    # line starting with `::`, or holding `##[` anywhere, as a workflow command, and the words
    # come from GitHub (SPEC: "Answers that cannot be forged or jammed"). The JSON escapes every
    # control character, U+2028 and U+2029 included, and every `#`.
    if as_json:
        out.write(json_line({"exit": result.exit, **result.answer}) + "\n")
    else:
        out.write(defused(f"railyard {options.action} {target}: {clean_line(result.line)}\n"))
    if result.exit == EXIT_REFUSED:
        err.write(prefixed("railyard: refused: ", result.message))
        if result.hint:
            err.write(prefixed("railyard: hint: ", result.hint))
    elif result.exit != 0:
        err.write(prefixed("railyard: ", result.line))
    _append(env.get("GITHUB_STEP_SUMMARY"), defused(step_summary(options, result)))
    _append(env.get("GITHUB_OUTPUT"), outputs(result))


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(text)
