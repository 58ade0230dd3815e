"""`rev=N` in the comment grammar (SPEC: "Agent interface"): parsed beside the command, checked,
and rendered in its refusal."""

from __future__ import annotations

import pytest

from app.views.replies_text import help_text, message
from handlers.answers import Refused
from policies.commands import Accept, Claim, CommandName, SendBack
from policies.parser import USAGE, parse_comment
from policies.refusals import stale_revision
from tests.unit.parser_helpers import error_of


@pytest.mark.parametrize(
    ("body", "revision"),
    [("/accept rev=7", 7), ("/claim REV=0", 0), ("/send-back rev=3 #12 fix the tests", 3), ("/draft", None)],
)
def test_rev_is_carried_beside_the_command(body: str, revision: int | None) -> None:
    """`rev=N` (any case of `rev`) becomes the comment's expected revision, not part of the command."""
    parsed = parse_comment(body)
    assert parsed.error is None and parsed.command is not None
    assert parsed.expected_revision == revision


def test_rev_does_not_change_what_the_command_means() -> None:
    """The command value with `rev=` equals the one without it, text and target included."""
    with_rev, without = parse_comment("/send-back rev=3 #12 fix it"), parse_comment("/send-back #12 fix it")
    assert (
        (with_rev.command, with_rev.target) == (without.command, without.target) == (SendBack("fix it"), 12)
    )
    assert parse_comment("/claim rev=4 branch=a/b").command == Claim(branch="a/b")
    assert parse_comment("/accept rev=2 looks good").command == Accept(reason="looks good")


@pytest.mark.parametrize(
    "body", ["/accept rev=x", "/accept rev=-1", "/accept rev=", "/accept rev=1.5", "/claim rev=1234567890"]
)
def test_a_malformed_rev_is_an_error_naming_the_expected_form(body: str) -> None:
    """A revision that is not a whole number (at most nine digits) runs nothing, saying what rev= takes."""
    assert "rev= takes the ticket's revision, a whole number like rev=7" in error_of(body)


def test_rev_given_twice_is_an_error() -> None:
    """Two `rev=` on one command line is refused rather than guessing which one was meant."""
    assert "/accept takes rev= once" in error_of("/accept rev=1 rev=2")


def test_rev_after_the_text_is_text() -> None:
    """Only a leading `rev=` is an argument: in the middle of the reason it is the reason's words."""
    parsed = parse_comment("/reopen broken again rev=3")
    assert parsed.expected_revision is None and parsed.command is not None


@pytest.mark.parametrize("body", ["/help rev=3", "/status rev=3"])
def test_rev_on_an_informational_command_is_ignored(body: str) -> None:
    """/help and /status change nothing, so there is no revision to guard: `rev=` is ignored, not an error."""
    parsed = parse_comment(body)
    assert parsed.error is None and parsed.informational is not None and parsed.expected_revision is None


def test_every_state_changing_usage_shows_rev_and_help_explains_it() -> None:
    """/help (built from USAGE) lists `[rev=N]` on each state-changing command, not on /status or /help."""
    assert all("[rev=N]" in USAGE[name.value] for name in CommandName)
    assert "rev" not in USAGE["status"] and "rev" not in USAGE["help"]
    assert "`rev=N` runs the command only if the ticket is still at revision N" in help_text()


def test_a_stale_refusal_names_the_current_revision_and_the_command_to_retry() -> None:
    """The reply to a stale command says the revision the ticket is at and shows `/accept rev=7` as code."""
    refusal = stale_revision("acme/web#12", 5, 7, final=True)
    words = message(Refused(refusal, "/accept rev=7"))
    assert "it is now at revision 7" in words
    assert words.endswith("`/accept rev=7`")
