"""The words of every answer a handler asks for: replies to a person, the sent-back notice,
and the effects that write them. User text is escaped here, where it is rendered."""

from __future__ import annotations

from functools import singledispatch

from app.contracts.effect_types import (
    Effect,
    LimitedReply,
    assign,
    check_run,
    comment,
    deployment_review,
    reaction,
    status_comment,
    unassign,
)
from app.views.gate_text import gate_comment
from app.views.markdown import code_span, escape_block, escape_inline, mention
from app.views.render import headline
from app.views.status_json import answer_line
from handlers.answers import (
    Answer,
    ArtifactNotFound,
    Assign,
    CannotRunYet,
    CheckRun,
    DeploymentReview,
    Help,
    Ignored,
    Malformed,
    Message,
    NearMiss,
    PullTarget,
    Reaction,
    Refused,
    ReopenedNotice,
    Reply,
    SentBackNotice,
    StatusAnswer,
    StatusComment,
    Unassign,
)
from policies.model import Ticket
from policies.parser import COMMAND_WORDS, NEEDS, USAGE
from policies.rails import RailPolicy
from policies.states import WorkState
from policies.transitions import next_steps

_REFUSAL_CODES: dict[type, str] = {
    ArtifactNotFound: "missing_artifact",
    Malformed: "invalid_command",
    PullTarget: "pull_request_target",
}
NOT_A_TICKET = (
    "This issue is not a ticket. A requester or task owner can make it one with `/draft` or `/publish`."
)


def render(answer: Answer) -> Effect | LimitedReply:
    """The effect that writes `answer` (a reply goes through the author's reply limit)."""
    if isinstance(answer, Reply):
        body = reply_body(answer)
        return LimitedReply(
            answer.installation_id, answer.repository, answer.number, answer.comment_id, answer.author_id,
            answer.kind, body,
        )  # fmt: skip
    if isinstance(answer, StatusComment):
        return status_comment(answer.installation_id, answer.repository, answer.number)
    if isinstance(answer, CheckRun):
        return check_run(
            answer.installation_id,
            answer.repository,
            answer.pull,
            answer.head_sha,
            merge_group=answer.merge_group,
            shared_only=answer.shared_only,
        )
    if isinstance(answer, DeploymentReview):
        state, body = answer.decision.state.value, gate_comment(answer.decision)
        return deployment_review(
            answer.installation_id,
            answer.repository,
            answer.run_id,
            answer.environment,
            state,
            body,
            answer.key,
        )
    if isinstance(answer, Reaction):
        return reaction(answer.installation_id, answer.repository, answer.comment_id, answer.content)
    if isinstance(answer, Assign):
        return assign(
            answer.installation_id, answer.repository, answer.number, list(answer.logins), answer.key
        )
    if isinstance(answer, Unassign):
        return unassign(
            answer.installation_id, answer.repository, answer.number, list(answer.logins), answer.key
        )
    body = reopened(answer) if isinstance(answer, ReopenedNotice) else sent_back(answer)
    return comment(answer.installation_id, answer.repository, answer.number, body, answer.key)


def sent_back(notice: SentBackNotice) -> str:
    """The comment telling the runner their delivery was sent back, with the feedback."""
    who = _mention(notice.runner) if notice.runner else "the runner"
    feedback = escape_block(notice.feedback, limit=4000)
    return f"{who}: sent back for attempt {notice.attempt} by {_mention(notice.reviewer)}.\n\n{feedback}"


def reopened(notice: ReopenedNotice) -> str:
    """The comment telling the previous claimant the ticket was reopened and why; any runner may
    claim it now. A claimant who gave the work up is named, not mentioned (they know)."""
    reason = escape_block(notice.reason, limit=4000)
    if notice.released:
        who = escape_inline(notice.claimant, limit=60)
        head = f"{who} gave the work up; the ticket is open again and unassigned."
    else:
        head = f"{_mention(notice.claimant)}: {_mention(notice.by)} reopened the ticket; you are unassigned."
    return f"{head}\n\n{reason}\n\nAny runner may claim it again with `/claim`."


def reply_body(reply: Reply) -> str:
    """The reply's text: the author and the line answered, then the message."""
    text = message(reply.message)
    if isinstance(reply.message, Help | StatusAnswer | Ignored):
        return text
    body = f"{quote(reply.author, reply.line)}\n\n{text}"
    code = refusal_code(reply.message)
    if code is None:
        return body
    revision = reply.message.revision if isinstance(reply.message, Refused) else None
    # A program that posted the command finds its answer by the comment id on this hidden line.
    return f"{body}\n\n{answer_line(str(reply.comment_id), code, revision)}"


def refusal_code(item: Message) -> str | None:
    """The machine-readable code of a reply that refuses the command; None for other replies."""
    if isinstance(item, Refused):
        return item.refusal.code.value
    return _REFUSAL_CODES.get(type(item))


def quote(author: str, line: str) -> str:
    """`@author` and the answered line, whole, as an inline code span: `@mallory: `/accept``.

    A `>` between them would show literally mid-line, and a quote block would need the line
    on a line of its own; the code span shows the line exactly as typed, mentions in it dead.
    """
    return f"{_mention(author)}: {code_span(line, limit=200)}"


@singledispatch
def message(item: Message) -> str:
    """The words of one reply message."""
    raise TypeError(f"no words for {type(item).__name__}")


@message.register
def _(item: Refused) -> str:
    if item.retry is None:
        return refused(item.refusal.reason, item.refusal.hint)
    retry = "Read the ticket again; if the command still holds, send it again with the current revision: "
    return f"{refused(item.refusal.reason, None)}\n\n{retry}{code_span(item.retry, limit=200)}"


def refused(reason: str, hint: str | None) -> str:
    """`Refused: ` and the reason's first line in the sentence; further lines (a config's
    problems) as a quoted block of their own; then the hint."""
    first, _, details = reason.strip().partition("\n")
    body = f"Refused: {escape_inline(first, limit=500)}"
    if details.strip():
        body += f"\n\n{escape_block(details, limit=2000)}"
    if hint:
        body += f"\n\n{escape_inline(hint, limit=500)}"
    return body


@message.register
def _(item: ArtifactNotFound) -> str:
    name = f"#{escape_inline(item.name)}" if item.kind == "pull request" else code_span(item.name, limit=200)
    reason = f"{escape_inline(item.kind)} {name} was not found in {escape_inline(item.repository)}."
    hint = "Push it first, or name the branch, commit or pull request that holds the work."
    return f"Refused: /deliver: {reason}\n\n{escape_inline(hint)}"


@message.register
def _(item: NearMiss) -> str:
    typed = code_span("/" + item.typed, limit=50)
    return f"{typed} is not a railyard command. Did you mean {code_span('/' + item.suggestion)}?"


@message.register
def _(item: Malformed) -> str:
    return escape_inline(item.problem, limit=500)


@message.register
def _(item: CannotRunYet) -> str:
    return f"railyard cannot run this yet: {escape_inline(item.reason)}. It will try again."


@message.register
def _(item: PullTarget) -> str:
    linked = list(item.linked)
    if item.issue is not None:
        problem = (
            f"this command names #{item.target}, and a command on an issue applies to that issue "
            f"(#{item.issue}); write it on #{item.target}, or leave out #{item.target}."
        )
    elif item.target is not None:
        problem = f"this pull request does not link #{item.target}; it links {_numbers(linked)}."
    elif linked:
        problem = (
            f"this pull request links several tickets ({_numbers(linked)}); "
            f"name one, e.g. `/accept #{linked[0]}`."
        )
    else:
        problem = (
            "this pull request links no ticket; link one with `Fixes #N` or `Refs #N` in its description."
        )
    return f"Refused: {problem}"


@message.register
def _(item: Help) -> str:
    return help_text()


@message.register
def _(item: StatusAnswer) -> str:
    return status_text(item.ticket, item.policy)


@message.register
def _(item: Ignored) -> str:
    words = ", ".join(f"`/{w}`" for w in item.ignored)
    return f"Ran `/{item.ran}`; ignored {words}: one state-changing command per comment."


def help_text() -> str:
    """Every command the parser knows, with its usage (the parser's own), what it needs and who
    may run it (from the transition table)."""
    lines = ["**railyard commands**", ""]
    for word in COMMAND_WORDS:
        who = escape_inline(", ".join(_runners().get(word, ("anyone",))))
        lines.append(f"- {code_span(USAGE[word])}: needs {escape_inline(NEEDS[word])}. Who: {who}.")
    lines += [
        "",
        "`#N` names a ticket (on a pull request, one it links); `--` ends the arguments; `rev=N` runs "
        "the command only if the ticket is still at revision N (else it is refused, naming the current one).",
    ]
    return "\n".join(lines)


def _runners() -> dict[str, tuple[str, ...]]:
    """Who may run each command word, in the transition table's order, without repeats."""
    runners: dict[str, list[str]] = {}
    for state in (None, *WorkState):
        for label, allowed in next_steps(state):
            roles = runners.setdefault(label.split()[0].removeprefix("/"), [])
            roles.extend(role for role in allowed if role not in roles)
    return {word: tuple(roles) for word, roles in runners.items()}


def status_text(ticket: Ticket | None, policy: RailPolicy | None = None) -> str:
    """A short answer to `/status`: the three rails (what blocks named under the repository's
    `policy`, as the status comment names it) and who can act next."""
    if ticket is None or not ticket.exists:
        return NOT_A_TICKET
    lines = [headline(ticket, policy), "", "The status comment shows the whole record.", "", "Next:"]
    lines += [f"- `{label}`: {', '.join(allowed)}" for label, allowed in next_steps(ticket.work)]
    return "\n".join(lines)


def _numbers(numbers: list[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers) or "none"


def _mention(login: str) -> str:
    try:
        return mention(login)
    except ValueError:
        return escape_inline(login, limit=60)
