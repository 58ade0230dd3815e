"""The slash-command parser (SPEC: "Commands")."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
from policies.parser import (
    COMMAND_WORDS,
    MAX_CHECK_IN_MINUTES,
    LineKind,
    ParsedComment,
    parse_comment,
    scan_markdown,
    valid_artifact_url,
    valid_branch_name,
)

PROPERTY_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def command_of(body: str) -> object:
    """The command `body` parses to, asserting it parsed cleanly."""
    parsed = parse_comment(body)
    assert parsed.error is None, parsed.error
    return parsed.command


def error_of(body: str) -> str:
    """The argument error `body` parses to, asserting no command came with it."""
    parsed = parse_comment(body)
    assert parsed.command is None
    assert parsed.error is not None
    return parsed.error


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


# --- where a command may stand -------------------------------------------------------------


@pytest.mark.parametrize("indent", ["", " ", "  ", "   "])
def test_up_to_three_leading_spaces_still_make_a_command(indent: str) -> None:
    """Like Markdown, three spaces of indent are still the start of the line."""
    assert command_of(f"{indent}/accept") == Accept()


@pytest.mark.parametrize("body", ["    /accept", "\t/accept", "  \t/accept", "text\n\n    /accept"])
def test_four_columns_of_indent_is_never_a_command(body: str) -> None:
    """Four spaces or a tab make indented code (or a continuation), not a command."""
    assert parse_comment(body) == ParsedComment()


@pytest.mark.parametrize(
    "body", ["I will /accept later", "- /accept", "# /accept", "\u00a0/accept", "/ accept"]
)
def test_a_slash_that_does_not_start_the_line_is_not_a_command(body: str) -> None:
    """Commands begin the line: in a sentence, a list item or a heading they do nothing."""
    assert parse_comment(body).command is None


@pytest.mark.parametrize(
    "body",
    [
        "```\n/accept\n```",
        "```python\n/accept\n```",
        "~~~\n/accept\n~~~",
        "~~~~ {.shell}\n/accept\n~~~~",
        "````\n/accept\n```\n/accept\n````",  # a shorter fence does not close a longer one
        "~~~\n/accept\n```\n/accept",  # nor does the other character
        "   ```\n/accept\n   ```",
        "text\n```\n/accept",  # unclosed: runs to the end
    ],
)
def test_commands_inside_fenced_code_do_nothing(body: str) -> None:
    """Any fence, any info string, closed or not, hides the commands inside it."""
    assert parse_comment(body) == ParsedComment()


def test_a_command_after_a_closed_fence_runs() -> None:
    """Once the fence closes, lines are prose again."""
    parsed = parse_comment("```\n/accept\n```\n/send-back tests fail")
    assert parsed.command == SendBack(feedback="tests fail")
    assert parsed.ignored == ()


def test_a_backtick_fence_info_string_cannot_hold_a_backtick() -> None:
    """ "```a`b" is an inline code span, not a fence, so the next line is prose."""
    assert command_of("```a`b\n/accept") == Accept()


@pytest.mark.parametrize(
    "body",
    [
        "> /accept",
        ">/accept",
        "   > /accept",
        "> > /accept",
        "> quoted text\n/accept",  # lazy continuation
        "> quoted\nmore quoted\n/accept",
        "On Monday, someone wrote:\n> please /accept\n> /accept\n",
    ],
)
def test_commands_inside_blockquotes_do_nothing(body: str) -> None:
    """Quoted lines, and lines lazily continuing a quoted paragraph, are someone else's words."""
    assert parse_comment(body).command is None


def test_a_blank_line_ends_a_blockquote() -> None:
    """After a blank line the command is the writer's own again."""
    assert command_of("> /send-back x\n\n/accept") == Accept()


@pytest.mark.parametrize(
    "body",
    ["> ```\n> code\n> ```\n/accept", "> # a heading\n/accept", "> quote\n# heading\n/accept"],
)
def test_a_quote_without_open_paragraph_has_no_lazy_continuation(body: str) -> None:
    """Lazy continuation only continues quoted paragraph text."""
    assert command_of(body) == Accept()


@pytest.mark.parametrize(
    "body",
    [
        "<!-- /accept -->",
        "<!--\n/accept\n-->",
        "<!-- a template note\n\n/accept\n\nstill hidden -->",
        "Some text <!-- starts here\n/accept\n-->",
        "<!-- never closed\n/accept",
        "<!-- x -->/accept",
        "<!-- -->\n<!--\n/accept -->",
    ],
)
def test_commands_inside_html_comments_do_nothing(body: str) -> None:
    """What GitHub hides runs nothing, even across blank lines or unclosed."""
    assert parse_comment(body).command is None


@pytest.mark.parametrize(
    "body",
    [
        "<script>\n/accept\n</script>",
        "<STYLE type=x>\n/accept\n</style>",
        "<pre>\n/accept\n</pre>",
        "<textarea>\n\n/accept",
        "> quote\n<pre>\n/accept\n</pre>",
    ],
)
def test_commands_inside_pre_script_style_or_textarea_blocks_do_nothing(body: str) -> None:
    """GitHub strips scripts and styles and shows <pre> as code: none of them runs commands."""
    assert parse_comment(body).command is None


def test_a_command_after_a_closed_pre_block_runs() -> None:
    """The line after the end tag is prose again; a one-line block closes itself."""
    assert command_of("<pre>x\n</PRE>\n/accept") == Accept()
    assert command_of("<pre>x</pre>\n/accept") == Accept()
    assert command_of("<prelude>\n/accept") == Accept()


def test_a_command_after_a_closed_comment_runs() -> None:
    """The line after `-->` is prose again."""
    assert command_of("<!-- template\n-->\n/accept") == Accept()


def test_an_inline_comment_is_removed_from_the_command_line() -> None:
    """Hidden text on the command line is not an argument."""
    assert command_of("/claim <!-- --check-in 5 --> branch=b") == Claim(branch="b")


def test_a_comment_opener_inside_a_code_span_hides_nothing() -> None:
    """`<!--` in backticks is code, not a comment."""
    assert command_of("Type `<!--` to start a comment.\n/accept") == Accept()


def test_an_escaped_comment_opener_hides_nothing() -> None:
    r"""`\<!--` is literal text."""
    assert command_of("\\<!-- not a comment\n/accept") == Accept()


def test_crlf_and_cr_line_endings_work_like_lf() -> None:
    """GitHub sends CRLF from browsers; the commands and text are the same."""
    for newline in ("\r\n", "\r"):
        parsed = parse_comment(
            newline.join(["hi", "/deliver branch=b Done", "More.", "```", "/claim", "```"])
        )
        assert parsed.command == Deliver(summary="Done\nMore.\n```\n/claim\n```", branch="b")
        assert parsed.line == "/deliver branch=b Done"


def test_a_leading_byte_order_mark_is_ignored() -> None:
    """A BOM before the first line does not hide its command."""
    assert command_of("\ufeff/accept") == Accept()


def test_an_empty_comment_has_nothing() -> None:
    """No text, no command, nothing else."""
    assert parse_comment("") == ParsedComment()


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


# --- near misses ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "typed", "suggestion"),
    [
        ("/acept", "acept", "accept"),
        ("/sendback tests fail", "sendback", "send-back"),
        ("/send_back", "send_back", "send-back"),
        ("/deliever branch=x", "deliever", "deliver"),
        ("/Reopn broken", "Reopn", "reopen"),
        ("/clam", "clam", "claim"),
        ("/stauts", "stauts", "status"),
        ("/accept.", "accept.", "accept"),
        ("/claim: now", "claim:", "claim"),
        ("/publsh --no-code", "publsh", "publish"),
    ],
)
def test_a_mistyped_command_word_gets_a_suggestion(body: str, typed: str, suggestion: str) -> None:
    """Close misspellings are reported as (typed, suggestion) and run nothing."""
    parsed = parse_comment(body)
    assert parsed.command is None
    assert parsed.word is None
    assert parsed.near_miss == (typed, suggestion)


@pytest.mark.parametrize(
    "body",
    [
        "/usr/bin/env python",
        "/etc",
        "/etc/hosts",
        "/home/me",
        "/var/log",
        "/api/v1",
        "/deploy",
        "/lgtm",
        "/x",
        "/1234",
    ],
)
def test_paths_and_unrelated_words_get_no_suggestion(body: str) -> None:
    """Only a close match is suggested: paths and other slash words are left alone."""
    assert parse_comment(body) == ParsedComment()


def test_a_near_miss_inside_code_is_not_reported() -> None:
    """Near misses are looked for where commands are: not in code."""
    assert parse_comment("```\n/acept\n```").near_miss is None


def test_the_first_near_miss_is_reported_next_to_a_real_command() -> None:
    """The app may mention the near miss while running the real command."""
    parsed = parse_comment("/acept\n/claim\n/sendback")
    assert parsed.command == Claim()
    assert parsed.near_miss == ("acept", "accept")


# --- argument errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("/claim --check-in abc", "--check-in takes whole minutes"),
        ("/claim --check-in", "--check-in needs a value"),
        ("/claim --check-in 0", "--check-in takes whole minutes"),
        ("/claim --check-in -5", "--check-in takes whole minutes"),
        ("/claim --check-in 1.5", "--check-in takes whole minutes"),
        ("/claim --check-in 30 --check-in 40", "once"),
        ("/claim --force", "does not know '--force'"),
        ("/claim branch=", "branch= takes a git branch name"),
        ("/claim branch=a..b", "branch= takes a git branch name"),
        ("/claim branch=x branch=y", "/claim takes branch= once"),
        ("/claim soon", "takes no text"),
        ("/claim pr=3", "does not know 'pr='"),
        ("/deliver commit=xyz done", "commit= takes a hex commit sha"),
        ("/deliver commit=abc123 done", "commit= takes a hex commit sha"),
        ("/deliver commit=" + "a" * 41, "commit= takes a hex commit sha"),
        ("/deliver artifact=ftp://example.com/x", "artifact= takes an http or https URL"),
        ("/deliver artifact=https:///nohost", "artifact= takes an http or https URL"),
        ("/deliver artifact=http://[::1 x", "artifact= takes an http or https URL"),
        ("/deliver sha=abcdef0 done", "does not know 'sha='"),
        ("/deliver --force done", "does not know '--force'"),
        ("/deliver #1 #2 done", "names one pull request"),
        ("/publish --no-code=yes", "--no-code takes no value"),
        ("/publish --nocode", "Did you mean --no-code?"),
        ("/accept --self --override reason", "not both"),
        ("/accept --overide reason", "Did you mean --override?"),
        ("/accept #0", "is not a ticket number"),
        ("/accept #1234567890", "is not a ticket number"),
        ("/draft now", "takes no text"),
        ("/reopen --hard", "does not know '--hard'"),
    ],
)
def test_argument_errors_say_what_is_wrong_and_build_no_command(body: str, fragment: str) -> None:
    """A wrong argument gives a short, actionable message and no command value."""
    assert fragment in error_of(body)


def test_errors_show_long_values_cut_short() -> None:
    """A huge bad value is not echoed back in full."""
    message = error_of("/deliver commit=" + "z" * 10_000)
    assert len(message) < 200


def test_error_messages_show_the_usage() -> None:
    """An unknown flag's message shows how to write the command."""
    assert "/claim [--check-in MINUTES] [branch=NAME]" in error_of("/claim --now")


# --- validators ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["main", "agent/12-fix", "feature/ü-unicode", "v1.2", "a_b", "HEAD-ish"])
def test_ordinary_branch_names_are_valid(name: str) -> None:
    """Names git accepts are accepted."""
    assert valid_branch_name(name)


@pytest.mark.parametrize(
    "name",
    [
        *("", "-x", "/x", "x/", "x.", "a..b", "a//b", "a@{b", "@", "a b", "a~b", "a^b", "a:b", "a?b"),
        *("a*b", "a[b", "a\\b", "a\x00b", ".hidden", "a/.b", "x.lock", "a/b.lock/c", "x" * 256),
    ],
)
def test_branch_names_git_refuses_are_invalid(name: str) -> None:
    """Names `git check-ref-format --branch` refuses are refused."""
    assert not valid_branch_name(name)


@pytest.mark.parametrize(
    "url", ["https://example.com", "http://ci.example/run/1?x=y#z", "HTTPS://EXAMPLE.COM/A"]
)
def test_http_and_https_urls_are_valid_artifacts(url: str) -> None:
    """Absolute web URLs with a host are artifacts."""
    assert valid_artifact_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://x",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "https://",
        "example.com",
        "http://[::1",
        "http://a\x00",
    ],
)
def test_other_urls_are_not_artifacts(url: str) -> None:
    """Other schemes, hostless or malformed URLs are refused."""
    assert not valid_artifact_url(url)


# --- the scanner ---------------------------------------------------------------------------


def test_the_scanner_classifies_every_line() -> None:
    """Prose, code, quote and hidden lines, in order, one per input line."""
    kinds = [line.kind for line in scan_markdown("a\n```\nb\n```\n> c\n<!--\nd\n-->\n\n    e")]
    assert kinds == [
        LineKind.PROSE,
        LineKind.CODE,
        LineKind.CODE,
        LineKind.CODE,
        LineKind.QUOTE,
        LineKind.PROSE,  # `<!--` starts hidden, but the line itself begins visibly
        LineKind.HIDDEN,
        LineKind.HIDDEN,
        LineKind.PROSE,
        LineKind.CODE,
    ]


def test_the_scanner_blanks_code_spans_in_plain_text() -> None:
    """`plain` keeps prose and drops code spans and comments; `text` keeps the spans."""
    (line,) = scan_markdown("a `b` ``c ` d`` e <!-- f --> g")
    assert line.text == "a `b` ``c ` d`` e  g"
    assert line.plain == "a     e  g"


def test_an_indented_line_continuing_a_paragraph_is_prose() -> None:
    """Indented code cannot interrupt a paragraph."""
    assert [line.kind for line in scan_markdown("para\n    more")] == [LineKind.PROSE, LineKind.PROSE]


@pytest.mark.parametrize(
    "body",
    [
        "`" * 200_000,
        "` `` ``` ```` " * 5_000,
        "<!--" * 50_000,
        "> " * 100_000 + "x",
        "* " * 100_000 + "x",
        "/" + "a" * 1_000_000,
        "/claim " + "--check-in 5 " * 50_000,
        "\n".join(["```"] * 50_000),
        "-->" * 100_000,
        "/deliver " + "artifact=https://e.x/a " * 20_000,
        "\\" * 100_000,
        "> a\n" * 50_000 + "/accept",
        "<pre>" * 100_000,
    ],
)
def test_pathological_inputs_parse_quickly(body: str) -> None:
    """Huge inputs built to make scanners backtrack still parse in linear time (under 2 s each)."""
    started = time.perf_counter()
    assert isinstance(parse_comment(body), ParsedComment)
    assert time.perf_counter() - started < 2.0


# --- properties ----------------------------------------------------------------------------

MARKDOWN_FRAGMENTS = [
    "```",
    "~~~",
    "````python",
    "    ",
    "\t",
    "> ",
    ">",
    "<!--",
    "-->",
    "`",
    "``",
    "\\",
    "#",
    "- ",
    "1. ",
    "***",
    "/",
    "/accept",
    "/claim --check-in 30",
    "/deliver branch=b commit=abcdef0 artifact=https://x.y/z #3",
    "/send-back",
    "/reopen #2",
    "/status",
    "/help",
    "/acept",
    "--self",
    "--override",
    "#12",
    "=",
    "\n",
    "\r\n",
    "\r",
    " ",
    "\x00",
    "\ufeff",
    "\u2028",
    "\ud800",
    "é",
    "🚂",
]

markdownish = st.lists(st.one_of(st.sampled_from(MARKDOWN_FRAGMENTS), st.text(max_size=12)), max_size=60).map(
    "".join
)


def assert_well_formed(parsed: ParsedComment) -> None:
    """The result's fields agree with each other."""
    if parsed.command is not None:
        assert parsed.error is None
        assert parsed.informational is None
        assert parsed.word == parsed.command.name.value
    if parsed.informational is not None:
        assert parsed.command is None
        assert parsed.word == parsed.informational
    if parsed.error is not None:
        assert parsed.command is None
        assert parsed.word is not None
    assert (parsed.word is None) == (parsed.line is None)
    assert all(word in COMMAND_WORDS for word in parsed.ignored)
    if parsed.word is None:
        assert parsed.ignored == ()


@PROPERTY_SETTINGS
@given(body=st.text())
def test_the_parser_never_raises_on_any_text(body: str) -> None:
    """Whatever the text, parse_comment answers with a well-formed result."""
    assert_well_formed(parse_comment(body))


@PROPERTY_SETTINGS
@given(body=markdownish)
def test_the_parser_never_raises_on_markdown_mixtures(body: str) -> None:
    """Fences, quotes, comments and commands mixed at random never make it raise."""
    assert_well_formed(parse_comment(body))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunk=markdownish, repeat=st.integers(min_value=200, max_value=2_000))
def test_the_parser_never_raises_on_long_inputs(chunk: str, repeat: int) -> None:
    """Long comments made of repeated fragments parse."""
    assert_well_formed(parse_comment(chunk * repeat))


@PROPERTY_SETTINGS
@given(body=markdownish)
def test_line_endings_do_not_change_the_result(body: str) -> None:
    """LF, CRLF and CR give the same parse."""
    plain = body.replace("\r\n", "\n").replace("\r", "\n")
    expected = parse_comment(plain)
    assert parse_comment(plain.replace("\n", "\r\n")) == expected
    assert parse_comment(plain.replace("\n", "\r")) == expected


# Text lines that cannot open, close or interrupt any construct, nor be commands themselves.
safe_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789.,;:!?()'\"", max_size=30)
safe_lines = st.lists(safe_words.map(lambda text: "w" + text), max_size=4)


@st.composite
def command_lines(draw: st.DrawFn) -> str:
    """A valid command line, in random case, with up to three spaces of indent."""
    word = draw(st.sampled_from(COMMAND_WORDS))
    cased = "".join(draw(st.sampled_from([char.lower(), char.upper()])) for char in word)
    indent = draw(st.sampled_from(["", " ", "  ", "   "]))
    argument = {"claim": " --check-in 30", "deliver": " branch=b done", "accept": " --self"}.get(word, "")
    return f"{indent}/{cased}{argument}"


@st.composite
def hidden_commands(draw: st.DrawFn) -> str:
    """A command line wrapped in fenced code, indented code, a blockquote or an HTML comment."""
    command = draw(command_lines())
    inner_before, inner_after = draw(safe_lines), draw(safe_lines)
    construct = draw(
        st.sampled_from(["fence", "indented", "quote", "lazy", "comment", "inline-comment", "html"])
    )
    if construct == "fence":
        fence = draw(st.sampled_from(["```", "~~~", "````", "~~~~~"]))
        info = draw(st.sampled_from(["", "python", " sh {.x}"]))
        closing = draw(st.sampled_from([[fence], []]))
        block = [fence + info, *inner_before, command, *inner_after, *closing]
    elif construct == "indented":
        prefix = draw(st.sampled_from(["    ", "\t", "     ", "  \t"]))
        block = ["", *(prefix + line for line in [*inner_before, command.lstrip(), *inner_after])]
    elif construct == "quote":
        marker = draw(st.sampled_from(["> ", ">", "   > ", "> > "]))
        block = [marker + line for line in [*inner_before, command, *inner_after]]
    elif construct == "lazy":
        block = ["> " + draw(safe_words.map(lambda text: "w" + text)), command, *inner_after]
    elif construct == "html":
        tag = draw(st.sampled_from(["pre", "script", "style", "textarea", "PRE"]))
        closing = draw(st.sampled_from([[f"</{tag}>"], []]))
        block = [f"<{tag}>", *inner_before, command, *inner_after, *closing]
    elif construct == "comment":
        closing = draw(st.sampled_from([["-->"], ["end -->"], []]))
        block = ["<!--", *inner_before, command, *inner_after, *closing]
    else:
        block = ["w <!-- " + draw(safe_words), *inner_before, command + " -->"]
    return "\n".join(block)


@PROPERTY_SETTINGS
@given(before=safe_lines, hidden=hidden_commands(), after=safe_lines, newline=st.sampled_from(["\n", "\r\n"]))
def test_no_command_is_ever_found_inside_code_quotes_or_comments(
    before: list[str], hidden: str, after: list[str], newline: str
) -> None:
    """A command line in fenced or indented code, a quote or an HTML comment runs nothing."""
    body = newline.join([*before, hidden, "", *after])
    parsed = parse_comment(body)
    assert parsed.word is None
    assert parsed.command is None
    assert parsed.ignored == ()


@PROPERTY_SETTINGS
@given(before=safe_lines, command=command_lines(), after=safe_lines)
def test_a_command_line_in_plain_prose_is_always_found(
    before: list[str], command: str, after: list[str]
) -> None:
    """The control for the property above: the same lines unwrapped are found."""
    parsed = parse_comment("\n".join([*before, command, *after]))
    assert parsed.word == command.split()[0][1:].lower()
    assert parsed.error is None
