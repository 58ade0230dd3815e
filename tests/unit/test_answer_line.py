"""A refusal reply carries one hidden `railyard:answer` line (SPEC: "Agent interface"): the
comment it answers, `applied: false`, the refusal's code and the ticket's revision, so a
program that posted the command can read the outcome; nothing a user typed can close it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.views.replies_text import reply_body
from app.views.status_json import ANSWER_MARKER, END, parse_hidden_line
from handlers.answers import ArtifactNotFound, Help, NearMiss, Refused, Reply, StatusAnswer
from policies.refusals import Refusal, RefusalCode, stale_revision


def _reply(message: object, line: str = "/claim") -> Reply:
    return Reply(1, "acme/web", 12, 5_000_000_123, "cody", 7, line, message)  # type: ignore[arg-type]


def test_a_refusal_reply_names_the_comment_the_code_and_the_revision_on_a_hidden_line() -> None:
    """A stale `/accept rev=3` refused at revision 5: its line: 5000000123, stale_revision, 5."""
    refused = Refused(stale_revision("#12", 3, 5, final=True), "/accept rev=5", 5)
    body = reply_body(_reply(refused, "/accept rev=3"))
    answer = parse_hidden_line(body, ANSWER_MARKER)
    assert answer == {"operation_id": "5000000123", "applied": False, "code": "stale_revision", "revision": 5}
    assert body.count(ANSWER_MARKER) == 1 and body.rstrip().endswith(END.strip())


def test_a_missing_artifact_reply_carries_its_code_without_a_revision() -> None:
    """A /deliver naming a branch GitHub lacks is a refusal too: code missing_artifact, revision null."""
    body = reply_body(_reply(ArtifactNotFound("branch", "nope", "acme/web"), "/deliver branch=nope"))
    assert parse_hidden_line(body, ANSWER_MARKER) == {
        "operation_id": "5000000123",
        "applied": False,
        "code": "missing_artifact",
        "revision": None,
    }


def test_replies_that_refuse_nothing_carry_no_answer_line() -> None:
    """/help, /status and a near-miss hint are not outcomes of a command: no hidden answer line."""
    for message in (Help(), StatusAnswer(None), NearMiss("clam", "claim")):
        assert ANSWER_MARKER not in reply_body(_reply(message))


@given(st.text(max_size=80))
def test_user_text_in_a_refusal_cannot_close_the_answer_line_or_forge_another(text: str) -> None:
    """Whatever the reason and the quoted line say, the body holds one answer line, and it parses."""
    refusal = Refusal(RefusalCode.NOT_ALLOWED, f"no {text}", text)
    body = reply_body(_reply(Refused(refusal, None, 2), f"/claim {text}"))
    start = body.rindex("\n\n") + 2
    hidden = body[start:]
    assert hidden.startswith(ANSWER_MARKER) and hidden.count("--") == 2 and ">" not in hidden[:-1]
    assert parse_hidden_line(hidden, ANSWER_MARKER) == {
        "operation_id": "5000000123",
        "applied": False,
        "code": "not_allowed",
        "revision": 2,
    }
