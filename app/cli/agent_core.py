"""The pure parts of `railyard agent`: the command text, the idempotency key, what an answer
means (exit status, one line, the step summary), and how long to wait before asking again.

No I/O here: `agent_api` and `agent_comment` talk to railyard and GitHub, `agent` is the
command line. Exit statuses: 0 applied, 1 refused, 2 usage (the inputs are wrong: fix them,
do not retry), 3 outcome unknown (no answer before the timeout; retrying is safe).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.cli.agent_log import quoted, shown_code
from policies.model import ascii_digits

EXIT_APPLIED, EXIT_REFUSED, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3
MAX_KEY = 255
MAX_BACKOFF = 30.0
MAX_RETRY_AFTER = 300.0
_COMMAND_LINE = re.compile(r"(^|\r)([^\S\r\n]*)/", re.MULTILINE)
"""A `/` that starts a line: after a newline, or a bare carriage return (railyard's parser ends
a line at either)."""
_REFUSED_STATUSES = (403, 429)
"""Answered before the door with an `error` body (a bot no role names, a spent command budget):
refusals, final whatever is retried (exit 1), not an unknown outcome."""
_ERROR_STATUSES = {400: "bad_request", 401: "bad_token", 404: "not_found", 422: "invalid_command"}

MISSING_APP_ID = (
    "by comment, railyard's GitHub App id is needed (only its app's comments are trusted as "
    "answers): pass --app-id, set RAILYARD_APP_ID, or give the action's app-id input (e.g. "
    '${{ vars.RAILYARD_APP_ID }}). It is the "App ID" on the app\'s settings page (GitHub: '
    "Settings, Developer settings, GitHub Apps, the app), and APP_ID in railyard's .env; "
    "nothing was posted"
)


@dataclass(frozen=True)
class Options:
    """What one `railyard agent claim|deliver` was asked to do, every input resolved."""

    action: str  # "claim" or "deliver"
    repo: str
    issue: int
    token: str
    url: str | None  # railyard's address (API mode); None: comment mode
    github_api_url: str
    key: str
    timeout: float
    poll_interval: float = 5.0
    rev: int | None = None
    check_in: int | None = None
    branch: str | None = None
    commit: str | None = None
    summary: str = ""
    artifacts: tuple[str, ...] = ()
    app_id: int | None = None  # railyard's GitHub App (comment mode trusts only its comments)
    evidence: tuple[str, ...] = ()  # `model=`, `tokens_in=`, `tokens_out=`, `cost=` as the run reports them


@dataclass(frozen=True)
class Result:
    """The outcome: the exit status, a one-line account, and what the answer said."""

    exit: int
    line: str
    applied: bool | None = None
    code: str | None = None
    message: str = ""
    hint: str = ""
    status: Mapping[str, Any] | None = None
    answer: Mapping[str, Any] = field(default_factory=dict)
    markdown: bool = False  # message and hint are railyard's own Markdown (a reply's words)

    @property
    def revision(self) -> int | None:
        """The ticket's revision after the answer, when the answer showed the ticket."""
        value = (self.status or {}).get("revision")
        return value if isinstance(value, int) else None

    @property
    def attempt(self) -> int | None:
        """The ticket's attempt number after the answer, when shown."""
        value = (self.status or {}).get("attempt")
        return value if isinstance(value, int) else None


def claim_text(check_in: int | None, branch: str | None, rev: int | None) -> str:
    """`/claim [--check-in M] [branch=B] [rev=N]`, as railyard's parser reads it."""
    parts = ["/claim"]
    if check_in is not None:
        parts.append(f"--check-in {check_in}")
    if branch:
        parts.append(f"branch={branch}")
    if rev is not None:
        parts.append(f"rev={rev}")
    return " ".join(parts)


def deliver_text(
    summary: str,
    branch: str | None,
    commit: str | None,
    artifacts: Sequence[str],
    rev: int | None,
    evidence: Sequence[str] = (),
) -> str:
    """`/deliver branch=B commit=C artifact=U... [rev=N] -- SUMMARY`.

    `--` ends the arguments, so a summary that begins with `key=value` stays the summary; a
    summary line that begins with `/` would be a command line of its own (ignored, and left out
    of the summary), so its slash is escaped as Markdown shows it: `\\/`.
    """
    parts = ["/deliver"]
    parts += [f"branch={branch}"] if branch else []
    parts += [f"commit={commit}"] if commit else []
    parts += [f"artifact={url}" for url in artifacts]
    parts += list(evidence)
    parts += [f"rev={rev}"] if rev is not None else []
    return " ".join([*parts, "--", _COMMAND_LINE.sub(r"\1\2\\/", summary.strip())])


def command_text(options: Options, *, rev_in_text: bool = True) -> str:
    """The command this invocation sends, in the comment grammar (the API takes the same text,
    its expected revision beside it rather than as `rev=`)."""
    rev = options.rev if rev_in_text else None
    if options.action == "claim":
        return claim_text(options.check_in, options.branch, rev)
    return deliver_text(
        options.summary, options.branch, options.commit, options.artifacts, rev, options.evidence
    )


def default_key(
    env: Mapping[str, str], action: str, issue: int, commit: str | None, said: str | None = None
) -> str | None:
    """The idempotency key of an Actions run: the run id, the action, the issue and, for a
    delivery, the run attempt, the commit (a branch's delivery names none) and a digest of what
    it `said` (its branch, summary, artifacts and evidence); None outside Actions.

    A try sent again within one run attempt (a timeout, a 503) replays. A delivery from a re-run
    (a new `GITHUB_RUN_ATTEMPT`, say after a send-back) or of a new commit is a new command; a
    claim from a re-run replays the run's claim, which railyard answers as that claim (or, after
    a send-back, as an earlier attempt's, which `claim_held` reads).
    """
    run = env.get("GITHUB_RUN_ID", "").strip()
    if not run:
        return None
    repository = env.get("GITHUB_REPOSITORY", "").strip()
    scope = hashlib.sha256(repository.encode()).hexdigest()[:12]
    if action != "deliver":
        return f"gha-{scope}-{run}-{action}-{issue}"
    attempt = env.get("GITHUB_RUN_ATTEMPT", "").strip() or "1"
    key = f"gha-{scope}-{run}.{attempt}-{action}-{issue}"
    if commit:
        key = f"{key}-{commit}"
    return f"{key}-{hashlib.sha256(said.encode()).hexdigest()[:16]}" if said else key


def from_api(status: int, body: Any, replayed: bool = False) -> Result:
    """What railyard's API answer to a command means (SPEC: "Agent interface")."""
    answer = body if isinstance(body, dict) else {}
    shown = answer.get("status") if isinstance(answer.get("status"), dict) else None
    again = " (replayed)" if replayed else ""
    if status == 200 and answer.get("applied") is True:
        return Result(EXIT_APPLIED, f"applied{again}{_where(shown)}", True, status=shown, answer=answer)
    refusal = answer.get("refusal")
    if isinstance(refusal, dict):
        code, message = str(refusal.get("code", "")), str(refusal.get("message", ""))
        line = f"refused ({code}, HTTP {status}){again}: {message}"
        return Result(EXIT_REFUSED, line, False, code, message, str(refusal.get("hint") or ""), shown, answer)
    found = answer.get("error")
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    code = str(error.get("code") or _ERROR_STATUSES.get(status, f"http_{status}"))
    message = str(error.get("message") or f"railyard answered HTTP {status}")
    if status in _REFUSED_STATUSES:
        return Result(
            EXIT_REFUSED, f"refused ({code}, HTTP {status}): {message}", False, code, message, answer=answer
        )
    exit_status = EXIT_USAGE if status in _ERROR_STATUSES else EXIT_UNKNOWN
    return Result(
        exit_status, f"not sent ({code}, HTTP {status}): {message}", None, code, message, answer=answer
    )


def claim_held(result: Result) -> Result:
    """A replayed claim answered as an earlier attempt's: applied still when the ticket is claimed
    now by the account whose claim the key made (keys belong to one account), at the current
    attempt; any other answer as it is."""
    if result.code != "earlier_attempt" or result.status is None:
        return result
    earlier = result.answer.get("earlier_answer")
    then = earlier.get("status") if isinstance(earlier, Mapping) else None
    claimant = then.get("claimant_id") if isinstance(then, Mapping) else None
    now = result.status
    if now.get("work") != "claimed" or claimant is None or now.get("claimant_id") != claimant:
        return result
    line = f"applied (replayed; still claimed, now at attempt {now.get('attempt')}){_where(now)}"
    return Result(EXIT_APPLIED, line, True, status=now, answer=result.answer)


def _where(status: Mapping[str, Any] | None) -> str:
    if not status:
        return ""
    return f": {status.get('ticket')} {status.get('work')} at revision {status.get('revision')}"


def claim_shown(status: Mapping[str, Any], account_id: int, after_revision: int | None) -> bool:
    """Whether a status object shows the claim of `account_id` made after `after_revision`."""
    revision = status.get("revision")
    newer = after_revision is None or (isinstance(revision, int) and revision > after_revision)
    return status.get("work") == "claimed" and status.get("claimant_id") == account_id and newer


def delivery_shown(status: Mapping[str, Any], operation_id: str) -> bool:
    """Whether a status object's last delivery is the one made by operation `operation_id`."""
    delivery = status.get("delivery")
    return isinstance(delivery, dict) and str(delivery.get("operation_id")) == operation_id


def applied_by_comment(status: Mapping[str, Any]) -> Result:
    """The result of a command the status comment shows applied."""
    return Result(EXIT_APPLIED, f"applied{_where(status)}", True, status=status, answer={"status": status})


def refused_by_reply(answer: Mapping[str, Any], reply: str) -> Result:
    """The result of a command railyard refused in a reply: its code, and the reply's words."""
    code = str(answer.get("code", ""))
    message, _, hint = reply_words(reply).partition("\n\n")
    line = f"refused ({code}): {message.splitlines()[0] if message else ''}"
    return Result(EXIT_REFUSED, line, False, code, message, hint.strip(), answer=dict(answer), markdown=True)


def reply_words(reply: str) -> str:
    """A refusal reply's message, without the quoted command line and the hidden lines."""
    paragraphs = [p.strip() for p in reply.split("\n\n") if p.strip() and not p.strip().startswith("<!--")]
    return "\n\n".join(paragraphs[1:] if len(paragraphs) > 1 else paragraphs)


def unknown(reason: str, key: str | None = None) -> Result:
    """No outcome was seen: nothing is known to have changed, and asking again is safe."""
    again = f"; retry with the same idempotency key ({key})" if key else ""
    return Result(EXIT_UNKNOWN, f"outcome unknown: {reason}{again}", None, "unknown", reason)


def usage(reason: str) -> Result:
    """The inputs are wrong (a bad token, an unknown issue): retrying will not help."""
    return Result(EXIT_USAGE, f"not sent: {reason}", None, "usage", reason)


def backoff(attempt: int, retry_after: str | None) -> float:
    """Seconds before try `attempt + 1`: GitHub's or railyard's Retry-After when it gives one,
    else 1, 2, 4, ... up to 30."""
    if retry_after is not None and ascii_digits(retry_after.strip()):
        return min(float(retry_after.strip()), MAX_RETRY_AFTER)
    return min(2.0**attempt, MAX_BACKOFF)


def step_summary(options: Options, result: Result) -> str:
    """The Markdown the step writes to $GITHUB_STEP_SUMMARY."""
    verdict = {EXIT_APPLIED: "applied", EXIT_REFUSED: "refused"}.get(result.exit, "not applied")
    lines = [
        f"### railyard {options.action} {options.repo}#{options.issue}: {verdict}",
        "",
        f"- command: {shown_code(_one_line(command_text(options)))}",
        f"- via: {'API ' + options.url if options.url else 'issue comment'}",
    ]
    if result.revision is not None:
        work = shown_code((result.status or {}).get("work"))
        lines.append(f"- revision {result.revision}, attempt {result.attempt}, work {work}")
    if result.code and result.exit != EXIT_APPLIED:
        lines.append(f"- code: {shown_code(result.code)}")
    # What railyard or GitHub said is quoted: no line of it can start a workflow command.
    if result.message and result.exit != EXIT_APPLIED:
        lines += ["", quoted(result.message, markdown=result.markdown)]
    if result.hint:
        lines += ["", quoted(result.hint, markdown=result.markdown)]
    return "\n".join(lines) + "\n\n"


def outputs(result: Result) -> str:
    """The step's outputs, in $GITHUB_OUTPUT's `name=value` lines."""
    revision = "" if result.revision is None else str(result.revision)
    attempt = "" if result.attempt is None else str(result.attempt)
    applied = "true" if result.applied else "false"
    return f"revision={revision}\nattempt={attempt}\napplied={applied}\n"


def _one_line(text: str) -> str:
    first = text.splitlines()[0] if text else ""
    return first[:120] + ("…" if len(first) > 120 or "\n" in text else "")
