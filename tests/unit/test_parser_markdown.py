"""The slash-command parser (SPEC: "Commands"): where a command may stand as GitHub renders Markdown,
and the block scanner that decides it."""

from __future__ import annotations

import pytest

from policies.commands import Accept, Claim, Deliver, SendBack
from policies.markdown_blocks import MAX_NESTING, LineKind, scan_markdown
from policies.parser import ParsedComment, parse_comment
from support.pathological import pathological_bodies
from tests.unit.parser_helpers import command_of

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
    assert command_of("<prelude>\n\n/accept") == Accept()


def test_a_tag_alone_on_its_line_hides_the_lines_up_to_a_blank_line() -> None:
    """CommonMark's seventh HTML block: `<prelude>` alone starts raw HTML that a blank line ends."""
    assert parse_comment("<prelude>\n/accept") == ParsedComment()


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
        LineKind.HIDDEN,  # `<!--` at a line's start opens an HTML block, hidden whole
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


@pytest.mark.parametrize("body", pathological_bodies())
def test_pathological_inputs_parse(body: str) -> None:
    """Huge inputs built to make scanners backtrack still parse (`bench/parser.py` times them)."""
    assert isinstance(parse_comment(body), ParsedComment)


def test_containers_nested_past_the_limit_hide_the_rest_of_the_comment() -> None:
    """Sixty-five nested quotes or list items are only there to slow the scanner: nothing after runs."""
    assert parse_comment("- " * (MAX_NESTING + 1) + "x\n\n/accept") == ParsedComment()
    assert command_of("- " * (MAX_NESTING - 1) + "x\n\n/accept") == Accept()
