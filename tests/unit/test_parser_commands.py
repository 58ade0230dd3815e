"""The slash-command parser (SPEC: "Commands"): every command and argument form; one command per comment."""

from __future__ import annotations

import pytest

from policies.commands import (
    Accept,
    AcceptMode,
    Claim,
    CommandName,
    Deliver,
    Draft,
    Publish,
    Reopen,
    SendBack,
)
from policies.parser import MAX_CHECK_IN_MINUTES, ParsedComment, parse_comment
from tests.unit.parser_helpers import command_of, error_of

# --- every command and argument form -------------------------------------------------------


def test_draft_parses_to_a_draft_command() -> None:
    """`/draft` alone is a Draft."""
    assert command_of("/draft") == Draft()


def test_publish_without_flags_is_code_work() -> None:
    """`/publish` leaves no_code false and description and assignee to the handler."""
    assert command_of("/publish") == Publish(description="", first_assignee=None, no_code=False)


def test_publish_no_code_flag_marks_the_ticket_no_code() -> None:
    """`/publish --no-code` sets no_code."""
    assert command_of("/publish --no-code") == Publish(no_code=True)


def test_claim_without_arguments_has_no_check_in_or_branch() -> None:
    """`/claim` alone opens an attempt with neither option."""
    assert command_of("/claim") == Claim()


@pytest.mark.parametrize(
    "body",
    [
        "/claim --check-in 90 branch=agent/12-fix",
        "/claim branch=agent/12-fix --check-in 90",
        "/claim --check-in=90 branch=agent/12-fix",
        "/claim   --check-in   90\tbranch=agent/12-fix  ",
        "/claim --CHECK-IN 90 Branch=agent/12-fix",
    ],
)
def test_claim_takes_check_in_and_branch_in_any_order(body: str) -> None:
    """The check-in minutes and the branch are read whatever their order and spacing."""
    assert command_of(body) == Claim(check_in_minutes=90, branch="agent/12-fix")


def test_claim_accepts_the_largest_check_in() -> None:
    """The maximum check-in is allowed; one more is not."""
    assert command_of(f"/claim --check-in {MAX_CHECK_IN_MINUTES}") == Claim(
        check_in_minutes=MAX_CHECK_IN_MINUTES
    )
    assert "--check-in" in error_of(f"/claim --check-in {MAX_CHECK_IN_MINUTES + 1}")


def test_deliver_reads_every_argument_and_the_summary_after_them() -> None:
    """Branch, commit, artifacts (repeated) and a linked PR, then the summary."""
    body = (
        "/deliver branch=agent/12-fix commit=0123abcd artifact=https://ci.example/run/1 "
        "artifact=http://example.com/report #34 Fixed the uploader."
    )
    assert command_of(body) == Deliver(
        summary="Fixed the uploader.",
        branch="agent/12-fix",
        commit="0123abcd",
        pull_request=34,
        artifacts=("https://ci.example/run/1", "http://example.com/report"),
    )


def test_deliver_summary_runs_on_over_the_following_lines() -> None:
    """The summary is the rest of the command line and every line after it, stripped."""
    body = "Some preamble.\n/deliver branch=b First line.\n\nSecond paragraph.\n- a list item\n\n"
    deliver = command_of(body)
    assert isinstance(deliver, Deliver)
    assert deliver.summary == "First line.\n\nSecond paragraph.\n- a list item"


def test_deliver_summary_keeps_code_and_drops_other_command_lines_and_hidden_comments() -> None:
    """Code blocks stay in the summary as written; ignored commands and HTML comments do not."""
    body = "/deliver commit=abcdef0\nDid it.\n/accept\n<!-- a note to self -->\n```\n/claim\n```\nDone."
    deliver = command_of(body)
    assert isinstance(deliver, Deliver)
    assert deliver.summary == "Did it.\n```\n/claim\n```\nDone."


def test_deliver_summary_may_start_on_the_next_line() -> None:
    """With only arguments on the command line, the summary is the lines after it."""
    deliver = command_of("/deliver branch=b\n  Implemented retries.  ")
    assert isinstance(deliver, Deliver)
    assert deliver.summary == "Implemented retries."


def test_deliver_keeps_the_commit_as_typed_but_lowercased() -> None:
    """The commit is not resolved here: the handler does that later."""
    deliver = command_of("/deliver commit=ABCDEF0123 done")
    assert isinstance(deliver, Deliver)
    assert deliver.commit == "abcdef0123"


@pytest.mark.parametrize("sha", ["abcdef0", "a" * 40])
def test_deliver_accepts_commits_of_seven_to_forty_hex_digits(sha: str) -> None:
    """Short and full shas both parse."""
    deliver = command_of(f"/deliver commit={sha} done")
    assert isinstance(deliver, Deliver)
    assert deliver.commit == sha


def test_deliver_without_artifact_or_summary_still_parses() -> None:
    """Missing summary and artifacts are the engine's refusal to make, with the state in view."""
    assert command_of("/deliver") == Deliver()


def test_deliver_hash_names_the_pull_request_not_a_target() -> None:
    """On /deliver, `#34` is the linked PR; target stays None."""
    parsed = parse_comment("/deliver #34 done")
    assert parsed.command == Deliver(summary="done", pull_request=34)
    assert parsed.target is None


def test_deliver_later_hash_references_belong_to_the_summary() -> None:
    """Only leading arguments are arguments: `#5` inside the summary is text."""
    deliver = command_of("/deliver branch=b Fixed it, see #5 and --verbose output")
    assert isinstance(deliver, Deliver)
    assert deliver.pull_request is None
    assert deliver.summary == "Fixed it, see #5 and --verbose output"


def test_accept_alone_is_an_independent_review() -> None:
    """`/accept` is REVIEW mode with no reason."""
    assert command_of("/accept") == Accept(mode=AcceptMode.REVIEW, reason="")


def test_accept_self_is_self_verification() -> None:
    """`/accept --self` is SELF mode."""
    assert command_of("/accept --self") == Accept(mode=AcceptMode.SELF)


def test_accept_override_takes_its_reason_from_the_line_and_after() -> None:
    """The override reason is the rest of the line plus the following lines."""
    assert command_of("/accept --override Hotfix verified\nin staging.") == Accept(
        mode=AcceptMode.OVERRIDE, reason="Hotfix verified\nin staging."
    )


def test_accept_override_without_reason_is_left_to_the_engine() -> None:
    """An empty reason parses; the engine refuses it with an example."""
    assert command_of("/accept --override") == Accept(mode=AcceptMode.OVERRIDE, reason="")


def test_accept_names_a_ticket_with_a_hash() -> None:
    """`/accept #12` targets ticket 12."""
    parsed = parse_comment("/accept #12")
    assert parsed.command == Accept()
    assert parsed.target == 12


def test_accept_keeps_a_reviewers_note_as_its_reason() -> None:
    """Text after `/accept` is recorded with the acceptance, not refused."""
    assert command_of("/accept #3 LGTM, thanks!\nGreat tests.") == Accept(
        reason="LGTM, thanks!\nGreat tests."
    )


def test_accept_flags_may_follow_the_target() -> None:
    """`/accept #7 --override reason` reads both."""
    parsed = parse_comment("/accept #7 --override Release blocker")
    assert parsed.command == Accept(mode=AcceptMode.OVERRIDE, reason="Release blocker")
    assert parsed.target == 7


def test_accept_takes_an_em_dash_autocorrected_flag() -> None:
    """Phones turn `--self` into `—self`; it still means --self."""
    assert command_of("/accept \u2014self") == Accept(mode=AcceptMode.SELF)


def test_send_back_collects_feedback() -> None:
    """The feedback is the rest of the line and the following lines."""
    assert command_of("/send-back The tests fail\non Windows.") == SendBack(
        feedback="The tests fail\non Windows."
    )


def test_send_back_takes_a_target_before_its_feedback() -> None:
    """A leading `#N` is the target, the rest is feedback."""
    parsed = parse_comment("/send-back #4 Please add tests for #5.")
    assert parsed.command == SendBack(feedback="Please add tests for #5.")
    assert parsed.target == 4


def test_send_back_feedback_may_look_like_key_value() -> None:
    """Commands without `key=` arguments read `x=1` as the start of their text."""
    assert command_of("/send-back x=1 is off by one") == SendBack(feedback="x=1 is off by one")


def test_reopen_collects_its_reason() -> None:
    """The reason is the rest of the line, stripped."""
    assert command_of("/reopen   Regression in 2.3  ") == Reopen(reason="Regression in 2.3")


def test_reopen_without_reason_is_left_to_the_engine() -> None:
    """`/reopen` alone parses with an empty reason."""
    assert command_of("/reopen") == Reopen(reason="")


def test_double_dash_ends_the_arguments() -> None:
    """After `--`, flags and hashes are text."""
    parsed = parse_comment("/reopen -- --self #3 was wrong")
    assert parsed.command == Reopen(reason="--self #3 was wrong")
    assert parsed.target is None


@pytest.mark.parametrize("word", ["draft", "publish", "claim", "reopen", "send-back"])
def test_every_state_changing_command_can_name_a_ticket(word: str) -> None:
    """`#N` after any state-changing word (but /deliver) is its target."""
    parsed = parse_comment(f"/{word} #21 because")
    if word in ("draft", "publish", "claim"):
        parsed = parse_comment(f"/{word} #21")
    assert parsed.error is None
    assert parsed.target == 21


@pytest.mark.parametrize("body", ["/ACCEPT", "/Accept", "/aCcEpT", "/SEND-BACK x", "/Send-Back x"])
def test_command_words_are_case_insensitive(body: str) -> None:
    """The word is matched without case and reported in lower case."""
    parsed = parse_comment(body)
    assert parsed.command is not None
    assert parsed.word == body.split()[0][1:].lower()
    assert parsed.near_miss is None


def test_command_names_match_the_core() -> None:
    """Every state-changing word parses to the command of that name."""
    for name in CommandName:
        parsed = parse_comment(f"/{name.value}")
        assert parsed.command is not None
        assert parsed.command.name is name
        assert parsed.word == name.value


def test_the_command_line_is_kept_as_written_for_quoting() -> None:
    """`line` is the command line without surrounding space or CR."""
    assert parse_comment("hello\r\n  /Claim --check-in 30  \r\nbye").line == "/Claim --check-in 30"


# --- one command per comment ---------------------------------------------------------------


def test_only_the_first_state_changing_command_runs_and_the_rest_are_ignored() -> None:
    """Further command lines are reported by word, in order."""
    parsed = parse_comment("/claim\n/deliver branch=b done\n/accept\n/claim")
    assert parsed.command == Claim()
    assert parsed.ignored == ("deliver", "accept", "claim")


def test_informational_lines_next_to_a_state_changing_command_are_ignored() -> None:
    """`/status` before `/accept` is ignored; /accept is the command."""
    parsed = parse_comment("/status\n/help\n/accept")
    assert parsed.command == Accept()
    assert parsed.informational is None
    assert parsed.ignored == ("status", "help")


@pytest.mark.parametrize("word", ["status", "help"])
def test_an_informational_command_alone_is_the_command(word: str) -> None:
    """`/status` or `/help` alone: no command value, the word reported as informational."""
    parsed = parse_comment(f"Hi\n/{word}")
    assert parsed == ParsedComment(word=word, informational=word, line=f"/{word}")


def test_the_first_of_several_informational_commands_wins() -> None:
    """`/help` then `/status`: help, with status ignored."""
    parsed = parse_comment("/HELP me\n/status")
    assert parsed.informational == "help"
    assert parsed.ignored == ("status",)


def test_status_may_name_a_ticket() -> None:
    """`/status #12` on a PR linked to several tickets names one."""
    assert parse_comment("/status #12").target == 12


def test_an_argument_error_in_the_first_command_still_ignores_the_others() -> None:
    """The first state-changing line is THE command even when its arguments are wrong."""
    parsed = parse_comment("/claim --check-in soon\n/accept")
    assert parsed.command is None
    assert parsed.word == "claim"
    assert parsed.ignored == ("accept",)
    assert parsed.line == "/claim --check-in soon"
