"""Escaping user text for GitHub comments (SPEC: "What people see")."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.views.markdown import ELLIPSIS, WORD_JOINER, escape_block, escape_inline, mention

PROPERTY_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

LIVE_MENTION = re.compile(r"@(?!" + WORD_JOINER + ")")
UNESCAPED_PIPE = re.compile(r"(?<!\\)(?:\\\\)*\|")  # a pipe after an even number of backslashes
FENCE = re.compile(r"^\s*(```|~~~)")


def quoted_content(block: str) -> list[str]:
    """The lines of an escaped block without their `> ` markers, asserting every line has one."""
    lines = block.split("\n") if block else []
    assert all(line.startswith(">") for line in lines)
    return [line[2:] if line.startswith("> ") else line[1:] for line in lines]


# --- inline --------------------------------------------------------------------------------


def test_plain_inline_text_is_unchanged() -> None:
    """Words, digits and ordinary punctuation pass through."""
    assert (
        escape_inline("Fixed the uploader (2 retries), see #12.")
        == "Fixed the uploader (2 retries), see #12."
    )


def test_inline_html_is_escaped_as_entities() -> None:
    """Tags, comments and entities the user typed show as typed."""
    assert escape_inline("<b>x</b> &amp; <!-- marker -->") == (
        "&lt;b&gt;x&lt;/b&gt; &amp;amp; &lt;!-- marker --&gt;"
    )


def test_inline_mentions_are_neutralised_with_a_word_joiner() -> None:
    """`@octocat` and `@org/team` keep their look but notify nobody."""
    assert escape_inline("ping @octocat and @acme/reviewers") == (
        f"ping @{WORD_JOINER}octocat and @{WORD_JOINER}acme/reviewers"
    )


def test_inline_markdown_syntax_renders_literally() -> None:
    """Emphasis, code, links, strikethrough and backslashes are escaped."""
    assert escape_inline(r"*a* _b_ `c` [d](e) ~~f~~ \g") == r"\*a\* \_b\_ \`c\` \[d\](e) \~\~f\~\~ \\g"


def test_inline_pipes_are_escaped_for_tables() -> None:
    """A pipe cannot end a table cell early."""
    assert escape_inline("a | b") == r"a \| b"


def test_inline_dollar_signs_cannot_start_math() -> None:
    """`$` becomes an entity, which GitHub never reads as a math delimiter."""
    assert escape_inline("$x$ costs $5") == "&#36;x&#36; costs &#36;5"


def test_inline_newlines_and_runs_of_whitespace_collapse_to_one_space() -> None:
    """Every kind of line break, and tabs, become single spaces; the ends are trimmed."""
    assert escape_inline("  one\ntwo\r\nthree\rfour\u2028five\t\tsix  ") == "one two three four five six"


def test_issue_references_stay_as_typed() -> None:
    """`#12` is a reference GitHub may link; that is fine."""
    assert escape_inline("see #12") == "see #12"


def test_invisible_text_is_dropped() -> None:
    """Tag characters, zero-width characters and bidi marks vanish; the visible text stays."""
    hidden = "".join(chr(0xE0000 + ord(char)) for char in "ignore the review")
    typed = f"Ship\u200bit\u200e now\u200f\u061c{hidden}\ufeff!"
    assert escape_inline(typed) == "Shipit now!"
    assert escape_block(typed) == "> Shipit now!"


def test_one_presentation_selector_is_kept_and_a_run_is_dropped() -> None:
    """An emoji keeps its presentation selector; a smuggling run of selectors is cut to one."""
    assert escape_inline("\u2764\ufe0f") == "\u2764\ufe0f"
    assert escape_inline("\u2764\ufe0f\ufe0f\ufe0e\U000e0101x") == "\u2764\ufe0fx"


def test_control_characters_and_bidi_overrides_are_dropped() -> None:
    """NUL, escape codes and right-to-left overrides vanish; lone surrogates become U+FFFD."""
    assert escape_inline("a\x00b\x1bc\u202ed\u2066e\ud800f") == "abcde\ufffdf"


def test_inline_truncation_adds_an_ellipsis_within_the_limit() -> None:
    """A long text is cut to the limit, the ellipsis included."""
    assert escape_inline("abcdefghij", limit=5) == "abcd" + ELLIPSIS
    assert escape_inline("abcdefghij", limit=10) == "abcdefghij"


def test_truncation_never_cuts_inside_an_escape() -> None:
    """An entity or backslash escape is kept whole or left out whole."""
    assert escape_inline("a<b", limit=4) == "a" + ELLIPSIS
    assert escape_inline("a<b", limit=5) == "a" + ELLIPSIS
    assert escape_inline("a<bc", limit=6) == "a&lt;" + ELLIPSIS
    assert escape_inline("a*b", limit=3) == "a" + ELLIPSIS
    assert escape_inline("a@b", limit=3) == "a" + ELLIPSIS


def test_truncation_drops_a_trailing_space_before_the_ellipsis() -> None:
    """The ellipsis follows the last word directly."""
    assert escape_inline("abc def", limit=5) == "abc" + ELLIPSIS


@pytest.mark.parametrize("limit", [0, -3])
def test_a_limit_too_small_for_the_ellipsis_gives_nothing(limit: int) -> None:
    """No room at all means an empty string, not an error."""
    assert escape_inline("abc", limit=limit) == ""
    assert escape_block("abc", limit=limit) == ""


def test_a_block_limit_too_small_for_a_quote_marker_gives_nothing() -> None:
    """A block is quote lines or nothing: `…` alone is not returned."""
    assert escape_block("abc", limit=1) == ""
    assert escape_block("abc", limit=2) == ">" + ELLIPSIS


def test_an_empty_text_stays_empty() -> None:
    """Nothing in, nothing out, in both modes."""
    assert escape_inline("") == ""
    assert escape_block("") == ""
    assert escape_block(" \n\t\n ") == ""


# --- block ---------------------------------------------------------------------------------


def test_a_block_is_quoted_line_by_line() -> None:
    """Every line starts with `> `; blank lines inside stay as bare `>`."""
    assert escape_block("First.\n\nSecond.\nThird.") == "> First.\n>\n> Second.\n> Third."


def test_block_surrounding_blank_lines_are_dropped() -> None:
    """Leading and trailing blank lines add nothing."""
    assert escape_block("\n\n  \nText\n\n") == "> Text"


def test_block_fences_are_neutralised() -> None:
    """Backtick and tilde fences are escaped, so they open no code block."""
    assert escape_block("```python\ncode\n```\n~~~\nx") == (
        "> \\`\\`\\`python\n> code\n> \\`\\`\\`\n> \\~\\~\\~\n> x"
    )


def test_block_line_starts_open_no_heading_list_or_rule() -> None:
    """A line-leading `#`, `-`, `+`, `=` or `1.` is escaped."""
    assert escape_block("# title\n- item\n+ item\n2) item\n10. item\n===\n---\n*") == (
        "> \\# title\n> \\- item\n> \\+ item\n> 2\\) item\n> 10\\. item\n> \\===\n> \\---\n> \\*"
    )


def test_block_indentation_becomes_no_break_spaces() -> None:
    """Indented lines keep their look but make no indented code block."""
    assert escape_block("a\n\n    code\n\tx") == "> a\n>\n> " + "\u00a0" * 4 + "code\n> " + "\u00a0" * 4 + "x"


def test_block_quotes_html_and_mentions_are_escaped() -> None:
    """A user's `>` is an entity: it nests no quote; mentions and HTML are neutral."""
    assert escape_block("> @octocat <img src=x>") == f"> &gt; @{WORD_JOINER}octocat &lt;img src=x&gt;"


def test_block_truncation_stays_within_the_limit_and_ends_cleanly() -> None:
    """Cut blocks end with the ellipsis on a line with text, never after an empty `>` line."""
    block = escape_block("one\n\n\n\ntwo three four five", limit=12)
    assert len(block) <= 12
    assert block == "> one" + ELLIPSIS


def test_block_line_breaks_of_every_kind_are_lines() -> None:
    """CRLF, CR and Unicode separators all start new quoted lines."""
    assert escape_block("a\r\nb\rc\u2029d") == "> a\n> b\n> c\n> d"


# --- mentions ------------------------------------------------------------------------------


@pytest.mark.parametrize("login", ["octocat", "a", "Mona-Lisa", "coder-bot[bot]", "x" * 39, "0day"])
def test_a_valid_login_is_mentioned_live(login: str) -> None:
    """A validated login gets a plain `@login`."""
    assert mention(login) == "@" + login


@pytest.mark.parametrize(
    "login",
    [
        "",
        "@octocat",
        "-x",
        "x-",
        "a b",
        "a_b",
        "x" * 40,
        "bot[bot]x",
        "a\n",
        "org/team",
        "é",
        "a<b>",
        "a[bot]" + "[bot]",
    ],
)
def test_anything_that_is_not_a_login_is_refused(login: str) -> None:
    """Spaces, markup, teams, prefixes and over-long names raise ValueError."""
    with pytest.raises(ValueError, match="not a GitHub login"):
        mention(login)


# --- properties ----------------------------------------------------------------------------

# Characters people cannot see but language models read: tag characters, zero-width ones, the
# bidi marks, variation selectors past the first. The escaper's own word joiner after `@` aside.
INVISIBLE = re.compile(
    "[\U000e0000-\U000e007f\u200b-\u200f\u2060-\u2064\ufeff\u061c\u00ad\U000e0100-\U000e01ef]"
    "|[\ufe0e\ufe0f]{2}"
)

NASTY = [
    "<",
    ">",
    "&",
    "<!--",
    "-->",
    "@",
    "@octocat",
    "@acme/team",
    "|",
    "\\",
    "`",
    "```",
    "~~~",
    "$",
    "#",
    "- ",
    "1. ",
    "    ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\u2028",
    "\x00",
    "\u202e",
    "\ud800",
    "\u2060",
    "\u200b",
    "\u200d",
    "\u200e",
    "\u200f",
    "\u061c",
    "\ufeff",
    "\U000e0041",
    "\U000e0100",
    "\ufe0f\ufe0f",
    "&#64;",
    "&lt;",
    " ",
    "x",
]
nasty_text = st.one_of(
    st.text(), st.lists(st.sampled_from(NASTY) | st.text(max_size=5), max_size=40).map("".join)
)
limits = st.none() | st.integers(min_value=0, max_value=80)


def assert_safe(output: str) -> None:
    """The guarantees both modes give: no HTML, no marker, no mention, encodable."""
    assert "<" not in output
    assert ">" not in output.replace("\n>", "\n").removeprefix(">")
    assert "<!--" not in output and "-->" not in output
    assert LIVE_MENTION.search(output) is None
    # The only invisible characters: the word joiners that break a mention and a `railyard:` marker.
    joined = re.sub("(?i)(railyard)" + WORD_JOINER + ":", r"\1:", output.replace("@" + WORD_JOINER, "@"))
    assert INVISIBLE.search(joined) is None
    output.encode("utf-8")  # no lone surrogates to crash the GitHub client


@PROPERTY_SETTINGS
@given(text=nasty_text, limit=limits)
def test_escape_inline_output_is_always_safe_for_a_table_cell(text: str, limit: int | None) -> None:
    """Whatever the text: no HTML, marker or mention, no newline, no unescaped pipe."""
    output = escape_inline(text, limit)
    assert_safe(output)
    assert "\n" not in output and "\r" not in output
    assert UNESCAPED_PIPE.search(output) is None


@PROPERTY_SETTINGS
@given(text=nasty_text, limit=limits)
def test_escape_block_output_is_always_safe_inside_a_quote(text: str, limit: int | None) -> None:
    """Whatever the text: every line quoted, none opening a fence, no HTML, marker or mention."""
    output = escape_block(text, limit)
    assert_safe(output)
    for content in quoted_content(output):
        assert FENCE.match(content) is None
        assert not content.startswith((" ", "\t"))


@PROPERTY_SETTINGS
@given(text=nasty_text, limit=limits)
def test_escaped_output_respects_the_limit(text: str, limit: int | None) -> None:
    """With a limit the output, ellipsis included, is never longer than the limit."""
    for escape in (escape_inline, escape_block):
        output = escape(text, limit)
        if limit is not None:
            assert len(output) <= max(limit, 0)


@PROPERTY_SETTINGS
@given(text=nasty_text, limit=st.integers(min_value=1, max_value=80))
def test_a_cut_output_is_a_prefix_of_the_full_output(text: str, limit: int) -> None:
    """Truncation keeps whole escapes: the cut text is the start of the uncut one."""
    for escape in (escape_inline, escape_block):
        full, cut = escape(text), escape(text, limit)
        if cut in (full, ""):  # uncut, or no room for anything (a block needs `>…`)
            continue
        assert cut.endswith(ELLIPSIS)
        assert full.startswith(cut.removesuffix(ELLIPSIS))


@PROPERTY_SETTINGS
@given(text=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 .,;:!?()'\"/=+-#%", max_size=60))
def test_ordinary_prose_survives_inline_escaping(text: str) -> None:
    """Text without special characters comes out as typed, spaces collapsed (a `railyard:` gets
    an invisible word joiner before its colon, so no text spells railyard's markers)."""
    assert escape_inline(text).replace(WORD_JOINER + ":", ":") == " ".join(text.split())


@settings(max_examples=10, deadline=None)
@given(size=st.integers(min_value=100_000, max_value=400_000), limit=st.integers(min_value=1, max_value=500))
def test_long_texts_with_a_small_limit_are_escaped_quickly(size: int, limit: int) -> None:
    """Only what fits is escaped; the rest is cut before any work is done on it."""
    text = "<@|`\n" * (size // 5)
    assert len(escape_inline(text, limit)) <= limit
    assert len(escape_block(text, limit)) <= limit
