"""The words of every answer a handler asks for: replies to a person, the sent-back notice,
and the effects that write them. User text is escaped here, where it is rendered."""

from __future__ import annotations

from functools import singledispatch

from app.store.effects import Effect, assign, comment, reaction
from app.store.replies import Reply as LimitedReply
from app.views.markdown import escape_block, escape_inline, mention
from app.views.render import headline
from app.views.surfaces import check_run, status_comment
from handlers.answers import (
    Answer,
    ArtifactNotFound,
    Assign,
    CannotRunYet,
    CheckRun,
    Help,
    Ignored,
    Malformed,
    Message,
    NearMiss,
    PullTarget,
    Reaction,
    Refused,
    Reply,
    SentBackNotice,
    StatusAnswer,
    StatusComment,
)
from policies.model import Ticket
from policies.states import WorkState
from policies.transitions import next_steps

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
        )
    if isinstance(answer, Reaction):
        return reaction(answer.installation_id, answer.repository, answer.comment_id, answer.content)
    if isinstance(answer, Assign):
        return assign(
            answer.installation_id, answer.repository, answer.number, list(answer.logins), answer.key
        )
    return comment(answer.installation_id, answer.repository, answer.number, sent_back(answer), answer.key)


def sent_back(notice: SentBackNotice) -> str:
    """The comment telling the runner their delivery was sent back, with the feedback."""
    who = _mention(notice.runner) if notice.runner else "the runner"
    feedback = escape_block(notice.feedback, limit=4000)
    return f"{who}: sent back for attempt {notice.attempt} by {_mention(notice.reviewer)}.\n\n{feedback}"


def reply_body(reply: Reply) -> str:
    """The reply's text: the quoted command line, then the message."""
    text = message(reply.message)
    if isinstance(reply.message, Help | StatusAnswer | Ignored):
        return text
    return f"{quote(reply.author, reply.line)}\n\n{text}"


def quote(author: str, line: str) -> str:
    """`@author > /the command line`, escaped."""
    return f"{_mention(author)} > {escape_inline(line, limit=200)}"


@singledispatch
def message(item: Message) -> str:
    """The words of one reply message."""
    raise TypeError(f"no words for {type(item).__name__}")


@message.register
def _(item: Refused) -> str:
    body = f"Refused: {escape_block(item.refusal.reason, limit=2000)}"
    if item.refusal.hint:
        body += f"\n\n{escape_inline(item.refusal.hint, limit=500)}"
    return body


@message.register
def _(item: ArtifactNotFound) -> str:
    what = f"pull request #{item.name}" if item.kind == "pull request" else f"{item.kind} {item.name}"
    reason = f"/deliver: {what} was not found in {item.repository}."
    hint = "Push it first, or name the branch, commit or pull request that holds the work."
    return f"Refused: {escape_block(reason, limit=2000)}\n\n{escape_inline(hint, limit=500)}"


@message.register
def _(item: NearMiss) -> str:
    typed = escape_inline(item.typed, 50)
    return f"`/{typed}` is not a railyard command. Did you mean `/{item.suggestion}`?"


@message.register
def _(item: Malformed) -> str:
    return escape_inline(item.problem, limit=500)


@message.register
def _(item: CannotRunYet) -> str:
    return f"railyard cannot run this yet: {escape_inline(item.reason)}. It will try again."


@message.register
def _(item: PullTarget) -> str:
    linked = list(item.linked)
    if item.target is not None:
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
    return status_text(item.ticket)


@message.register
def _(item: Ignored) -> str:
    words = ", ".join(f"`/{w}`" for w in item.ignored)
    return f"Ran `/{item.ran}`; ignored {words}: one state-changing command per comment."


def help_text() -> str:
    """The command list, from the transition table."""
    lines = ["**railyard commands**", ""]
    seen = set()
    for state in (None, *WorkState):
        for label, allowed in next_steps(state):
            if label not in seen:
                seen.add(label)
                lines.append(f"- `{label}` ({', '.join(allowed)})")
    lines += ["- `/status` (anyone): where the ticket stands and who can act next", "- `/help` (anyone)"]
    return "\n".join(lines)


def status_text(ticket: Ticket | None) -> str:
    """A short answer to `/status`: the three rails and who can act next."""
    if ticket is None or not ticket.exists:
        return NOT_A_TICKET
    lines = [headline(ticket), "", "The status comment shows the whole record.", "", "Next:"]
    lines += [f"- `{label}`: {', '.join(allowed)}" for label, allowed in next_steps(ticket.work)]
    return "\n".join(lines)


def _numbers(numbers: list[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers) or "none"


def _mention(login: str) -> str:
    try:
        return mention(login)
    except ValueError:
        return escape_inline(login, limit=60)
