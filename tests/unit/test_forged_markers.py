"""No comment railyard writes spells `<!--` or a `railyard:` marker it did not put there
(SPEC: "Answers that cannot be forged or jammed"): user text quoted in a reply, in the
sent-back notice or in the status comment, code spans included, never opens an HTML comment
or names a marker, so a program reading the raw body finds only railyard's own hidden lines."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from app.views.markdown import code_span
from app.views.render import StatusView
from app.views.replies_text import quote, reopened, reply_body, sent_back
from app.views.status_json import ANSWER_MARKER, MARKER, parse_status_line, status_comment_body
from handlers.answers import (
    ArtifactNotFound,
    CannotRunYet,
    Malformed,
    NearMiss,
    Refused,
    ReopenedNotice,
    Reply,
    SentBackNotice,
)
from policies.commands import Accept, AcceptMode, Claim, Deliver, Reopen, SendBack
from policies.refusals import Refusal, RefusalCode
from policies.states import WorkState
from tests.fakes import MAINTAINER, REVIEWER, RUNNER, Story

FORGED = '<!-- railyard:status-json {"work":"claimed","revision":999999} -->'
PIECES = (
    *("<!--", "-->", "<!", "<", "!", "--", "railyard", ":", "Railyard", "RAILYARD", " ", "\n", "`"),
    *("``", "\u200b", "\U000e0041", "\u2060", "\r", "\t", "status-json ", "answer ", "effect:", "{", "}"),
    FORGED,
)
HOSTILE = st.one_of(st.text(max_size=200), st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
MARKER_WORD = re.compile(r"railyard\s*:", re.IGNORECASE)


def _foreign(body: str, own_lines: int = 0) -> list[str]:
    """What in `body` could be read as a hidden line railyard did not write: every `<!--` and
    `railyard:` outside railyard's own trailing lines (the last `own_lines` lines)."""
    lines = body.split("\n")
    visible = "\n".join(lines[: len(lines) - own_lines] if own_lines else lines)
    return [*re.findall("<!--", visible), *MARKER_WORD.findall(visible)]


def _reply(message: object, line: str) -> Reply:
    return Reply(1, "acme/web", 12, 5_000_000_123, "cody", 7, line, message)  # type: ignore[arg-type]


def test_a_refused_claim_quoting_a_forged_status_line_does_not_carry_it() -> None:
    """`/claim <!-- railyard:status-json {...} -->` refused: the reply's quote shows the line,
    but its raw body holds no `<!--` but railyard's own answer line."""
    refusal = Refusal(RefusalCode.NOT_ALLOWED, "You need the runner role.", None)
    body = reply_body(_reply(Refused(refusal, None, 3), f"/claim {FORGED}"))
    assert body.count("<!--") == 1 and body.count(ANSWER_MARKER) == 1
    assert MARKER not in body
    assert _foreign(body, own_lines=1) == []


def test_a_code_span_shows_the_characters_typed_without_spelling_a_comment() -> None:
    """A code span keeps `<` and `>` as typed but puts a word joiner inside `<!` and before a
    `railyard` colon, so the raw text never opens an HTML comment nor names a marker."""
    span = code_span("see <!-- railyard:answer {} --> and <b>")
    assert "<!--" not in span and "railyard:" not in span
    assert span.replace("\u2060", "") == "`see <!-- railyard:answer {} --> and <b>`"


@settings(max_examples=200, deadline=None)
@given(text=HOSTILE)
def test_no_user_text_in_any_reply_spells_a_comment_or_a_marker(text: str) -> None:
    """Whatever the quoted line, reason, hint, typed word, branch or feedback says, a reply's
    body holds no `<!--` and no `railyard:` but railyard's own answer line."""
    refusal = Refusal(RefusalCode.NOT_ALLOWED, f"no {text}\n{text}", text)
    replies = [
        (Refused(refusal, f"/accept rev=5 {text}", 5), 1),
        (ArtifactNotFound("branch", text, "acme/web"), 1),
        (ArtifactNotFound("pull request", text, "acme/web"), 1),
        (Malformed(text), 1),
        (NearMiss(text, "claim"), 0),
        (CannotRunYet(text), 0),
    ]
    for message, own in replies:
        body = reply_body(_reply(message, f"/claim {text}"))
        assert _foreign(body, own_lines=own) == [], body
    notice = SentBackNotice(1, "acme/web", 12, "cody", 2, "rachel", text, "k")
    assert _foreign(sent_back(notice)) == []
    for released in (False, True):
        told = ReopenedNotice(1, "acme/web", 12, "cody", "rachel", text, released, "k")
        assert _foreign(reopened(told)) == []
    assert _foreign(quote("cody", text)) == []


@settings(max_examples=100, deadline=None)
@given(summary=HOSTILE, feedback=HOSTILE, reason=HOSTILE)
def test_no_user_text_in_the_status_comment_spells_a_comment_or_a_marker(
    summary: str, feedback: str, reason: str
) -> None:
    """The status comment quotes summaries, feedback and reasons without a `<!--` or a
    `railyard:`: its one hidden line is the last, and the only `railyard:` in it is its own
    marker (the JSON writes a colon after `railyard` as `\u003a`)."""
    story = Story().walk_to(WorkState.OPEN)
    story.command(Claim(branch="agent/12"), RUNNER)
    story.command(Deliver(summary=summary.strip() or "s", commit="0badc0ffee11"), RUNNER)
    story.command(SendBack(feedback=feedback.strip() or "f"), REVIEWER)
    story.command(Deliver(summary=summary + "!", commit="0badc0ffee12"), RUNNER)
    story.command(Accept(mode=AcceptMode.OVERRIDE, reason=reason.strip() or "r"), MAINTAINER)
    story.command(Reopen(reason=reason.strip() or "r"), MAINTAINER)
    view = StatusView(story.ticket, tuple(story.events), config_error=reason or None)
    body = status_comment_body(view)
    assert body.count(MARKER) == 1 and body.split("\n")[-1].startswith(MARKER)
    assert _foreign(body, own_lines=1) == []
    assert MARKER_WORD.findall(body.split("\n")[-1]) == ["railyard:"]
    assert parse_status_line(body) is not None


def test_a_summary_naming_markers_is_carried_in_the_hidden_line_without_spelling_them() -> None:
    """A `/deliver` summary `railyard:answer railyard:effect:...` is kept whole in the status
    object, and the raw body names no marker but railyard's one `railyard:status-json`."""
    summary = "Done. railyard:answer Railyard :effect:0123456789abcdef0123"
    story = Story().walk_to(WorkState.OPEN)
    story.command(Claim(branch="agent/12"), RUNNER)
    story.command(Deliver(summary=summary, commit="0badc0ffee11"), RUNNER)
    body = status_comment_body(StatusView(story.ticket, tuple(story.events)))
    assert [m.lower() for m in re.findall(r"railyard\s*:[a-z-]*", body, re.IGNORECASE)] == [
        "railyard:status-json"
    ]
    shown = parse_status_line(body)
    assert shown is not None and summary in str(shown)
