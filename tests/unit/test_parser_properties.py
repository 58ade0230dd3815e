"""The slash-command parser (SPEC: "Commands"): properties over any text and random Markdown mixtures."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.parser import COMMAND_WORDS, ParsedComment, parse_comment

PROPERTY_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


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
    # The line is kept for a command and for a near miss (the reply quotes it whole).
    assert (parsed.word is None and not parsed.near_miss) == (parsed.line is None)
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
