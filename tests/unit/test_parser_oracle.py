"""The command parser against markdown-it-py (CommonMark) as an oracle: a command runs exactly
where GitHub would render `/accept` as plain text at the start of a line of a paragraph outside
block quotes, code and HTML, on a line that itself begins with the slash (SPEC: "Commands")."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from policies.markdown_blocks import split_lines
from policies.parser import parse_comment

COMMAND = "/accept"
_MARKDOWN = MarkdownIt("commonmark")


def oracle_runs(body: str) -> bool:
    """Whether CommonMark renders `/accept` where a command runs (see the module doc).

    Each line that begins (after whitespace) with the command gets its own word, `/accept3x`
    for line 3: a letter more changes no block or inline structure, and a text token that
    holds it says which source line it came from without counting lines through code spans.
    """
    lines = split_lines(body)
    marked = [_mark(line, index) for index, line in enumerate(lines)]
    tokens = _MARKDOWN.parse("\n".join(marked))
    quoted, found = 0, False
    for position, token in enumerate(tokens):
        if token.type == "blockquote_open":
            quoted += 1
        elif token.type == "blockquote_close":
            quoted -= 1
        elif token.type == "inline" and quoted == 0 and tokens[position - 1].type == "paragraph_open":
            found = found or _opens_a_line(token)
    return found


def _mark(line: str, index: int) -> str:
    stripped = line.lstrip(" \t")
    if not stripped.startswith(COMMAND):
        return line
    return line[: len(line) - len(stripped)] + f"{COMMAND}{index}x" + stripped[len(COMMAND) :]


def _opens_a_line(inline: Token) -> bool:
    """Whether a marked command is a text token that begins the paragraph or follows a break."""
    at_start = True
    for child in inline.children or []:
        if at_start and child.type == "text" and _MARKED.match(child.content):
            return True
        at_start = child.type in ("softbreak", "hardbreak")
    return False


_MARKED = re.compile(re.escape(COMMAND) + r"[0-9]+x(?: |$)")


def parser_runs(body: str) -> bool:
    """Whether the railyard parser finds the command in `body`."""
    return parse_comment(body).word == "accept"


# --- the issue's cases, and neighbours ----------------------------------------------------

FIXED_CORPUS: list[tuple[str, bool]] = [
    ("- > quoted from the review\n/accept", False),  # a lazy continuation of a list item's quote
    ("1. > see above\n   /accept", False),  # the item goes on, its quote lazily
    ("text `start\n/accept\nend` text", False),  # one code span over three lines
    ("Thanks!\n/accept", True),  # a paragraph's continuation line begins with the command
    ("- > quoted\n\n/accept", True),
    ("1. > see above\n\n   /accept", True),  # the item's own paragraph, after the quote
    ("text `start\n/accept", True),  # the backtick is never closed: literal
    ("- item\n  /accept", True),
    ("- /accept", False),  # the line begins with a list marker, not with the slash
    ("<div>\n/accept\n</div>", False),
    ("<span>\n/accept", False),  # a tag alone on its line: an HTML block up to a blank line
    ("x <span\ntitle='\n/accept\n'>", False),  # inside a tag's attribute
    ("x <!--\n/accept\n-->", False),
    ("/accept\n===", False),  # a setext heading, not a paragraph
    ("```\n/accept\n```", False),
    ("    /accept", False),
    ("para\n    /accept", True),  # indented code cannot interrupt a paragraph
    ("> ```\n/accept", True),  # the quote ends, and with it the fence
    ("- ```\n/accept", True),
    ("- ```\n  /accept", False),
]


@pytest.mark.parametrize(("body", "runs"), FIXED_CORPUS)
def test_the_issues_cases_run_as_commonmark_renders_them(body: str, runs: bool) -> None:
    """Each fixed case runs exactly when the oracle says, and the oracle agrees with the table."""
    assert oracle_runs(body) is runs
    assert parser_runs(body) is runs


# --- the generated corpus ------------------------------------------------------------------

_WORDS = st.sampled_from(["text", "see above", "Thanks!", "a *b*", "x_y", "1)", "#", "- [ ]"])
_TICKS = st.sampled_from(["`", "``", "```", "~~~"])
_LINES = st.one_of(
    _WORDS,
    st.just(COMMAND),
    st.builds(lambda w: f"{COMMAND} {w}", _WORDS),
    _TICKS,
    st.builds(lambda t, w: f"{t}{w}", _TICKS, _WORDS),  # a fence with an info string
    st.builds(lambda w: f"text `{w}", _WORDS),  # a code span that may close lines later
    st.builds(lambda w: f"{w}` end", _WORDS),
    st.sampled_from(["", " ", "---", "***", "===", "<!--", "-->", "x <!-- y", "<!-- z -->"]),
    st.sampled_from(["<div>", "</div>", "<pre>", "</pre>", "<span>", "<x-y a='1'>", "x <b>y</b>"]),
    st.sampled_from(["<span title='", "'>", "<?php", "?>", "<![CDATA[", "]]>", "# heading"]),
)
_PREFIXES = st.sampled_from(
    [
        *("", "", "", " ", "  ", "   ", "    ", "	", "> ", ">", "> > ", "- ", "* ", "1. ", "2) "),
        *("- > ", "1. > ", "  - ", "> - ", "   1. ", "-	"),
    ]
)


@st.composite
def comments(draw: st.DrawFn) -> str:
    """A comment of up to eight lines of nested lists, quotes, fences, spans and HTML.

    With nested block quotes, no line is indented four columns: there markdown-it-py departs
    from CommonMark's reference implementation (cmark, which GitHub's cmark-gfm is built on):
    `> > a` then `    b` it reads as indented code, where the spec's lazy continuation (and
    cmark) keep `b` in the inner quote's paragraph, as the scanner does.
    """
    count = draw(st.integers(min_value=1, max_value=8))
    prefixes = [draw(_PREFIXES) for _ in range(count + 1)]
    if any(prefix.startswith("> >") for prefix in prefixes):
        prefixes = ["" if prefix in ("    ", "\t") else prefix for prefix in prefixes]
    lines = [prefix + draw(_LINES) for prefix in prefixes[:count]]
    if COMMAND not in "".join(lines):
        lines.insert(draw(st.integers(0, len(lines))), prefixes[count] + COMMAND)
    return "\n".join(lines)


@settings(max_examples=300, deadline=None)
@given(comments())
def test_the_parser_finds_a_command_exactly_where_commonmark_renders_one(body: str) -> None:
    """Over generated comments, the parser's verdict equals markdown-it-py's."""
    assert parser_runs(body) is oracle_runs(body), body
