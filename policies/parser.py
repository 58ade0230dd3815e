"""The slash-command parser: a comment's text in, at most one command out (SPEC: "Commands").

A command is a line that begins, after at most three spaces, with `/` and a command word
(any case), in text a reader sees as prose. `parse_comment` never raises: whatever the text,
it answers with a `ParsedComment` saying what was found, what was ignored and what was wrong.

Where a reader would not see a line as prose, it is never a command. The scanner follows
CommonMark, simplified in ways that only ever hide more, never less:

- Fenced code: ``` or ~~~ (three or more, up to three spaces of indent, any info string; a
  backtick fence's info string has no backtick) up to a closing fence of the same character
  and at least the same length; an unclosed fence runs to the end.
- Indented code: a line indented four columns or more (a tab counts to the next multiple of
  four) that does not continue a paragraph, i.e. follows a blank line, the start, a heading,
  a fence or other code. Inside list items this also calls the item's indented paragraphs
  code. Such a line can never be a command anyway: commands sit within three spaces.
- Blockquotes: lines starting with `>` (up to three spaces of indent), and their lazy
  continuations: a non-blank line right after quoted paragraph text, unless it starts a
  fence, heading, thematic break, list item or `<!--`. So `> quote` followed directly by
  `/accept` quotes the command, as GitHub shows it; a blank line in between runs it.
- HTML comments: `<!--` anywhere in prose, outside code spans, hides everything up to the
  next `-->`, across lines and blank lines; an unclosed comment hides the rest of the text
  (GitHub shows an unclosed inline `<!--` literally; the parser prefers not running a
  command a reader may not see).
- Raw HTML blocks `<pre>`, `<script>`, `<style>` and `<textarea>` (CommonMark's type 1:
  an opening tag at the start of a line, up to the line holding any of their end tags) are
  code: GitHub shows them preformatted or strips them.
- Code spans are matched within one line; a code span spread over several lines is not
  recognised.

Arguments are the leading tokens of the command line: `#N`, `--flag` (an en or em dash that
a phone put in place of `--` counts), `--flag VALUE` or `--flag=VALUE`, `key=value`; flag and
key names ignore case. The first other token starts the free text, which runs on over every
following line of the comment as a reader sees it (HTML comments and other command lines
left out, code kept as written); `--` ends the arguments early. `/deliver` takes the text as
its summary and `#N` as its linked PR; `/send-back` as feedback; `/reopen` and `/accept` (any
mode) as the reason. `/draft`, `/publish` and `/claim` take no text: an extra word is an
error, as is an unknown flag or key, so a typo never runs a different command. Missing
required text (summary, feedback, reason) is left to the engine, which refuses it knowing
the ticket's state.
"""

from __future__ import annotations

import difflib
import re
import string
from bisect import bisect_left
from dataclasses import dataclass, field
from enum import Enum
from urllib.parse import urlsplit

from policies.commands import (
    Accept,
    AcceptMode,
    Claim,
    Command,
    CommandName,
    Deliver,
    Draft,
    Publish,
    Reopen,
    SendBack,
)

INFORMATIONAL: tuple[str, ...] = ("status", "help")
COMMAND_WORDS: tuple[str, ...] = (*(name.value for name in CommandName), *INFORMATIONAL)
MAX_CHECK_IN_MINUTES = 43_200  # thirty days; longer is a typo, not a plan
NEAR_MISS_CUTOFF = 0.75  # `/hepl` (0.75) and `/acept` are close; `/etc` and `/home` are not

# ---------------------------------------------------------------------------------------------
# Scanning: which parts of a comment a reader sees as prose.


class LineKind(Enum):
    """What a line of a comment is, as a reader sees it."""

    PROSE = "prose"
    CODE = "code"  # fenced or indented code (the fences included), <pre>-like HTML blocks
    QUOTE = "quote"  # blockquote lines and their lazy continuations
    HIDDEN = "hidden"  # entirely inside an HTML comment


@dataclass(frozen=True, slots=True)
class ScannedLine:
    """One line of a comment: what it is, what a reader sees of it and where keywords may live.

    `text` is the line with HTML comments removed (prose) or as written (code, quote);
    `plain` is the prose a keyword may live in: code spans blanked, empty for code and hidden
    lines, the quoted content for quote lines. `starts_visible` is false when the line begins
    inside an HTML comment that closes on it.
    """

    index: int
    raw: str
    kind: LineKind
    text: str
    plain: str
    starts_visible: bool


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_QUOTE_MARKERS = re.compile(r"(?: {0,3}>[ \t]?)+")
_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_THEMATIC_BREAK = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})")
_INTERRUPTS_QUOTE = re.compile(r" {0,3}(?:<!--|#{1,6}(?:[ \t]|$)|(?:[-+*]|1[.)])(?:[ \t]|$))")
_RAW_HTML_OPEN = re.compile(r" {0,3}<(?:pre|script|style|textarea)(?:[ \t>]|$)", re.IGNORECASE)
_RAW_HTML_CLOSE = re.compile(r"</(?:pre|script|style|textarea)>", re.IGNORECASE)
_INLINE_SPECIAL = re.compile(r"[\\`<]")
_BACKTICKS = re.compile(r"`+")
_ASCII_PUNCTUATION = frozenset(string.punctuation)


def split_lines(body: str) -> list[str]:
    """The lines of a comment, split on LF, CRLF or CR as GitHub does; a leading BOM dropped."""
    return _LINE_BREAK.split(body.removeprefix("\ufeff"))


def scan_markdown(body: str) -> tuple[ScannedLine, ...]:
    """Every line of `body`, classified as prose, code, quote or hidden (see the module doc)."""
    scanner = _Scanner(nested=False)
    scanned = []
    for index, raw in enumerate(split_lines(body)):
        kind, text, plain, starts_visible = scanner.feed(raw)
        scanned.append(ScannedLine(index, raw, kind, text, plain, starts_visible))
    return tuple(scanned)


def _indent_width(line: str) -> int:
    width = 0
    for char in line:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
        if width >= 4:  # all the scanner needs to know
            break
    return width


def _fence_opening(line: str) -> tuple[str, int] | None:
    match = _FENCE_OPEN.fullmatch(line)
    if match is None:
        return None
    fence, info = match.groups()
    if fence[0] == "`" and "`" in info:
        return None
    return fence[0], len(fence)


def _closes_fence(fence: tuple[str, int], line: str) -> bool:
    match = _FENCE_CLOSE.fullmatch(line)
    if match is None:
        return False
    closing = match.group(1)
    return closing[0] == fence[0] and len(closing) >= fence[1]


def _ends_paragraph(line: str) -> bool:
    return _HEADING.match(line) is not None or _THEMATIC_BREAK.fullmatch(line) is not None


def _interrupts_quote(line: str) -> bool:
    return (
        _fence_opening(line) is not None
        or _INTERRUPTS_QUOTE.match(line) is not None
        or _RAW_HTML_OPEN.match(line) is not None
        or _THEMATIC_BREAK.fullmatch(line) is not None
    )


class _Scanner:
    """Line-by-line block state: fences, indented code, quotes, HTML comments."""

    def __init__(self, nested: bool) -> None:
        self._nested = nested  # inside a quote, all `>` markers were already removed
        self._fence: tuple[str, int] | None = None
        self._in_raw_html = False
        self._in_comment = False
        self._quote: _Scanner | None = None
        self.paragraph_open = False

    def feed(self, line: str) -> tuple[LineKind, str, str, bool]:
        if self._fence is not None:
            if _closes_fence(self._fence, line):
                self._fence = None
            return LineKind.CODE, line, "", True
        if self._in_raw_html:
            self._in_raw_html = _RAW_HTML_CLOSE.search(line) is None
            return LineKind.CODE, line, "", True
        if self._in_comment:
            return self._comment_continues(line)
        if self._quote is not None:
            if self._is_quote(line) or self._is_lazy(line, self._quote):
                return self._quoted(line, self._quote)
            self._quote = None
        if self._is_quote(line):
            self._quote = _Scanner(nested=True)
            return self._quoted(line, self._quote)
        return self._block(line)

    def _block(self, line: str) -> tuple[LineKind, str, str, bool]:
        if not line.strip(" \t"):
            self.paragraph_open = False
            return LineKind.PROSE, "", "", True
        fence = _fence_opening(line)
        if fence is not None:
            self._fence, self.paragraph_open = fence, False
            return LineKind.CODE, line, "", True
        if _indent_width(line) >= 4 and not self.paragraph_open:
            return LineKind.CODE, line, "", True
        if _RAW_HTML_OPEN.match(line) is not None:
            self._in_raw_html, self.paragraph_open = _RAW_HTML_CLOSE.search(line) is None, False
            return LineKind.CODE, line, "", True
        text, plain, self._in_comment = _inline(line, in_comment=False)
        self.paragraph_open = not self._in_comment and not _ends_paragraph(line)
        return LineKind.PROSE, text, plain, True

    def _comment_continues(self, line: str) -> tuple[LineKind, str, str, bool]:
        text, plain, self._in_comment = _inline(line, in_comment=True)
        self.paragraph_open = bool(text.strip())
        if self._in_comment or not text.strip():
            return LineKind.HIDDEN, "", "", False
        return LineKind.PROSE, text, plain, False

    def _is_quote(self, line: str) -> bool:
        return not self._nested and line.lstrip(" ")[:1] == ">" and _indent_width(line) < 4

    def _is_lazy(self, line: str, quote: _Scanner) -> bool:
        return bool(line.strip(" \t")) and quote.paragraph_open and not _interrupts_quote(line)

    def _quoted(self, line: str, quote: _Scanner) -> tuple[LineKind, str, str, bool]:
        markers = _QUOTE_MARKERS.match(line) if self._is_quote(line) else None
        content = line[markers.end() :] if markers is not None else line
        kind, _, plain, _ = quote.feed(content)
        self.paragraph_open = False
        return LineKind.QUOTE, line, plain if kind is LineKind.PROSE else "", True


def _inline(line: str, in_comment: bool) -> tuple[str, str, bool]:
    """The visible text of one prose line, the same with code spans blanked, and whether an
    HTML comment is still open at its end."""
    text: list[str] = []
    plain: list[str] = []
    runs: dict[int, list[int]] | None = None
    position, length = 0, len(line)
    while position < length:
        if in_comment:
            end = line.find("-->", position)
            if end < 0:
                break
            position, in_comment = end + 3, False
            continue
        special = _INLINE_SPECIAL.search(line, position)
        start = special.start() if special is not None else length
        text.append(line[position:start])
        plain.append(line[position:start])
        if special is None:
            break
        char = line[start]
        if char == "\\":
            escaped = start + 1 < length and line[start + 1] in _ASCII_PUNCTUATION
            piece = line[start : start + 2] if escaped else "\\"
            text.append(piece)
            plain.append(piece)
            position = start + len(piece)
        elif char == "`":
            if runs is None:
                runs = _backtick_runs(line)
            position = _code_span(line, start, runs, text, plain)
        elif line.startswith("<!--", start):
            # `-->` is searched from the second dash on, so `<!-->` and `<!--->` close at once.
            position, in_comment = start + 2, True
        else:
            text.append("<")
            plain.append("<")
            position = start + 1
    return "".join(text), "".join(plain), in_comment


def _backtick_runs(line: str) -> dict[int, list[int]]:
    runs: dict[int, list[int]] = {}
    for match in _BACKTICKS.finditer(line):
        runs.setdefault(match.end() - match.start(), []).append(match.start())
    return runs


def _code_span(line: str, start: int, runs: dict[int, list[int]], text: list[str], plain: list[str]) -> int:
    """Append the code span (or literal backticks) at `start`; return where scanning goes on."""
    end = start
    while end < len(line) and line[end] == "`":
        end += 1
    width = end - start
    closers = runs.get(width, [])
    found = bisect_left(closers, end)
    if found == len(closers):
        text.append(line[start:end])
        plain.append(line[start:end])
        return end
    close = closers[found] + width
    text.append(line[start:close])
    plain.append(" ")
    return close


# ---------------------------------------------------------------------------------------------
# Parsing: the command lines, their arguments and the free text.


@dataclass(frozen=True)
class ParsedComment:
    """What a comment asks for.

    `command` is the state-changing command, built from its arguments (None when the comment
    has none, only an informational one, or `error` says what is wrong with its arguments).
    `word` is THE command's word ("accept", "status"...); `informational` is "status" or
    "help" when that is all the comment asks. `target` is the ticket a `#N` argument names.
    `ignored` lists the words of every further command line. `near_miss` is (typed,
    suggestion) for the first line that looks like a mistyped command, words without the
    slash. `line` is THE command's line as written, for quoting in replies.
    """

    command: Command | None = None
    word: str | None = None
    informational: str | None = None
    target: int | None = None
    ignored: tuple[str, ...] = ()
    near_miss: tuple[str, str] | None = None
    error: str | None = None
    line: str | None = None


@dataclass(frozen=True)
class _Grammar:
    usage: str
    flags: frozenset[str] = frozenset()  # flags without a value
    valued_flags: frozenset[str] = frozenset()  # flags taking the next token (or `=value`)
    keys: frozenset[str] = frozenset()  # `key=value` arguments
    takes_text: bool = False  # free text follows the arguments


_GRAMMARS: dict[CommandName, _Grammar] = {
    CommandName.DRAFT: _Grammar("/draft [#N]"),
    CommandName.PUBLISH: _Grammar("/publish [--no-code] [#N]", flags=frozenset({"no-code"})),
    CommandName.CLAIM: _Grammar(
        "/claim [--check-in MINUTES] [branch=NAME] [#N]",
        valued_flags=frozenset({"check-in"}),
        keys=frozenset({"branch"}),
    ),
    CommandName.DELIVER: _Grammar(
        "/deliver [branch=NAME] [commit=SHA] [artifact=URL ...] [#PR] SUMMARY",
        keys=frozenset({"branch", "commit", "artifact"}),
        takes_text=True,
    ),
    CommandName.ACCEPT: _Grammar(
        "/accept [--self | --override REASON] [#N]", flags=frozenset({"self", "override"}), takes_text=True
    ),
    CommandName.SEND_BACK: _Grammar("/send-back [#N] FEEDBACK", takes_text=True),
    CommandName.REOPEN: _Grammar("/reopen [#N] REASON", takes_text=True),
}

USAGE: dict[str, str] = {
    **{name.value: grammar.usage for name, grammar in _GRAMMARS.items()},
    "status": "/status [#N]",
    "help": "/help",
}

_COMMAND_START = re.compile(r" {0,3}/")
_SLASH_TOKEN = re.compile(r" {0,3}/(\S*)")
_TOKEN = re.compile(r"\s*(\S+)")
_NUMBER = re.compile(r"#([0-9]+)", re.ASCII)
_FLAG = re.compile(r"(?:--|\u2014|\u2013)([A-Za-z][A-Za-z0-9-]*)(?:=(.*))?", re.ASCII | re.DOTALL)
_KEY_VALUE = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)=(.*)", re.ASCII | re.DOTALL)
_MINUTES = re.compile(r"[0-9]{1,6}", re.ASCII)
_COMMIT = re.compile(r"[0-9a-fA-F]{7,40}", re.ASCII)
_NEAR_MISS_SHAPE = re.compile(r"[A-Za-z][A-Za-z_-]{1,29}", re.ASCII)
_BRANCH_FORBIDDEN = frozenset(" ~^:?*[\\")
_MAX_BRANCH = 255
_MAX_URL = 2048
_MAX_NUMBER_DIGITS = 9


@dataclass(frozen=True)
class _CommandLine:
    index: int
    word: str
    rest: str  # the visible text after the command word
    written: str


@dataclass
class _Arguments:
    number: int | None = None
    flags: set[str] = field(default_factory=set)
    values: dict[str, list[str]] = field(default_factory=dict)
    text: str = ""


def parse_comment(body: str) -> ParsedComment:
    """The command a new comment runs, what it ignores and what is wrong; never raises."""
    lines = scan_markdown(body)
    found: list[_CommandLine] = []
    near_miss: tuple[str, str] | None = None
    for line in lines:
        slash = _slash_token(line)
        if slash is None:
            continue
        token, rest = slash
        if token.isascii() and token.lower() in COMMAND_WORDS:
            found.append(_CommandLine(line.index, token.lower(), rest, line.raw.strip()))
        elif near_miss is None:
            near_miss = _near_miss(token)
    chosen = _choose(found)
    if chosen is None:
        return ParsedComment(near_miss=near_miss)
    ignored = tuple(other.word for other in found if other is not chosen)
    if chosen.word in INFORMATIONAL:
        return ParsedComment(
            word=chosen.word,
            informational=chosen.word,
            target=_leading_number(chosen.rest),
            ignored=ignored,
            near_miss=near_miss,
            line=chosen.written,
        )
    following = _following_text(lines, chosen, {other.index for other in found})
    built = _build(CommandName(chosen.word), chosen.rest, following)
    if isinstance(built, str):
        return ParsedComment(
            word=chosen.word, ignored=ignored, near_miss=near_miss, error=built, line=chosen.written
        )
    command, target = built
    return ParsedComment(
        command=command,
        word=chosen.word,
        target=target,
        ignored=ignored,
        near_miss=near_miss,
        line=chosen.written,
    )


def _slash_token(line: ScannedLine) -> tuple[str, str] | None:
    """The word after the slash and the rest, for a prose line that begins with `/`."""
    if line.kind is not LineKind.PROSE or not line.starts_visible:
        return None
    if _COMMAND_START.match(line.raw) is None:
        return None
    match = _SLASH_TOKEN.match(line.text)
    if match is None or not match.group(1):
        return None
    return match.group(1), line.text[match.end() :]


def _near_miss(token: str) -> tuple[str, str] | None:
    """(typed, suggestion) when `token` is a command word mistyped; None for paths and prose."""
    bare = token.rstrip(".,:;!?")
    if _NEAR_MISS_SHAPE.fullmatch(bare) is None:
        return None
    lowered = bare.lower()
    if lowered in COMMAND_WORDS:  # `/accept.` or `/claim:`
        return token, lowered
    close = difflib.get_close_matches(lowered, COMMAND_WORDS, n=1, cutoff=NEAR_MISS_CUTOFF)
    return (token, close[0]) if close else None


def _choose(found: list[_CommandLine]) -> _CommandLine | None:
    """The first state-changing command line, else the first informational one."""
    for candidate in found:
        if candidate.word not in INFORMATIONAL:
            return candidate
    return found[0] if found else None


def _leading_number(rest: str) -> int | None:
    match = _TOKEN.match(rest)
    number = _NUMBER.fullmatch(match.group(1)) if match is not None else None
    if number is None or len(number.group(1)) > _MAX_NUMBER_DIGITS:
        return None
    return int(number.group(1)) or None


def _following_text(lines: tuple[ScannedLine, ...], chosen: _CommandLine, commands: set[int]) -> str:
    """What follows THE command's line as a reader sees it; other command lines left out."""
    return "\n".join(
        line.text
        for line in lines[chosen.index + 1 :]
        if line.index not in commands
        and line.kind is not LineKind.HIDDEN
        and (line.text.strip() or not line.raw.strip())  # a line that was all comment goes
    )


def _build(name: CommandName, rest: str, following: str) -> tuple[Command, int | None] | str:
    """The command value and its `#N` target, or a message saying what is wrong."""
    grammar = _GRAMMARS[name]
    arguments = _arguments(name, grammar, rest)
    if isinstance(arguments, str):
        return arguments
    text = "\n".join((arguments.text, following)).strip()
    values = arguments.values
    match name:
        case CommandName.DRAFT:
            return Draft(), arguments.number
        case CommandName.PUBLISH:
            return Publish(no_code="no-code" in arguments.flags), arguments.number
        case CommandName.CLAIM:
            minutes = values.get("check-in", [None])[0]
            branch = values.get("branch", [None])[0]
            return Claim(check_in_minutes=int(minutes) if minutes else None, branch=branch), arguments.number
        case CommandName.DELIVER:
            commit = values.get("commit", [None])[0]
            deliver = Deliver(
                summary=text,
                branch=values.get("branch", [None])[0],
                commit=commit.lower() if commit else None,
                pull_request=arguments.number,
                artifacts=tuple(values.get("artifact", [])),
            )
            return deliver, None
        case CommandName.ACCEPT:
            accept = _accept(arguments.flags, text, grammar)
            return accept if isinstance(accept, str) else (accept, arguments.number)
        case CommandName.SEND_BACK:
            return SendBack(feedback=text), arguments.number
        case CommandName.REOPEN:
            return Reopen(reason=text), arguments.number


def _accept(flags: set[str], text: str, grammar: _Grammar) -> Accept | str:
    if {"self", "override"} <= flags:
        return f"/accept takes --self or --override, not both. Use: {grammar.usage}"
    if "override" in flags:
        return Accept(mode=AcceptMode.OVERRIDE, reason=text)
    if "self" in flags:
        return Accept(mode=AcceptMode.SELF, reason=text)
    return Accept(reason=text)


def _arguments(name: CommandName, grammar: _Grammar, rest: str) -> _Arguments | str:
    """The leading arguments of a command line; the text after them; or what is wrong."""
    arguments = _Arguments()
    position = 0
    while (match := _TOKEN.match(rest, position)) is not None:
        piece, position = match.group(1), match.end()
        if piece == "--":  # everything after is text, even `--flag` or `#12`
            arguments.text = rest[position:]
            break
        if (number := _NUMBER.fullmatch(piece)) is not None:
            problem = _take_number(arguments, number.group(1), name)
        elif (flag := _FLAG.fullmatch(piece)) is not None:
            problem, position = _take_flag(arguments, grammar, name, flag, rest, position)
        elif (pair := _KEY_VALUE.fullmatch(piece)) is not None and (grammar.keys or not grammar.takes_text):
            # On /claim and /deliver `pr=12` is a typo worth reporting; on /send-back it is text.
            key = pair.group(1).lower()
            if key not in grammar.keys:
                known = [f"{known}=" for known in sorted(grammar.keys)]
                return _unknown(f"{key}=", name, grammar, known)
            problem = _take_value(arguments, name, key, pair.group(2))
        elif grammar.takes_text:
            arguments.text = rest[match.start(1) :]
            break
        else:
            problem = (
                f"/{name} takes no text after its arguments ({_shown(piece)}); "
                f"write remarks on the next line. Use: {grammar.usage}"
            )
        if problem is not None:
            return problem
    return arguments


def _take_number(arguments: _Arguments, digits: str, name: CommandName) -> str | None:
    what = "pull request" if name is CommandName.DELIVER else "ticket"
    if len(digits) > _MAX_NUMBER_DIGITS or int(digits) == 0:
        return f"{_shown('#' + digits)} is not a {what} number."
    if arguments.number is not None:
        return f"/{name} names one {what}; #{arguments.number} and #{int(digits)} were given."
    arguments.number = int(digits)
    return None


def _take_flag(
    arguments: _Arguments, grammar: _Grammar, name: CommandName, flag: re.Match[str], rest: str, position: int
) -> tuple[str | None, int]:
    """Record one `--flag` (reading its value from the next token if it takes one)."""
    flag_name, value = flag.group(1).lower(), flag.group(2)
    if flag_name in grammar.flags:
        if value is not None:
            return f"--{flag_name} takes no value. Use: {grammar.usage}", position
        arguments.flags.add(flag_name)
        return None, position
    if flag_name not in grammar.valued_flags:
        known = [f"--{known}" for known in sorted(grammar.flags | grammar.valued_flags)]
        return _unknown(f"--{flag_name}", name, grammar, known), position
    if value is None:
        following = _TOKEN.match(rest, position)
        if following is None:
            return f"--{flag_name} needs a value. Use: {grammar.usage}", position
        value, position = following.group(1), following.end()
    return _take_value(arguments, name, flag_name, value), position


def _unknown(typed: str, name: CommandName, grammar: _Grammar, known: list[str]) -> str:
    close = difflib.get_close_matches(typed.lower()[:40], known, n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]}?" if close else ""
    return f"/{name} does not know {_shown(typed)}.{hint} Use: {grammar.usage}"


def _take_value(arguments: _Arguments, name: CommandName, key: str, value: str) -> str | None:
    """Validate and record `key=value` (or a valued flag's value)."""
    problem = _invalid_value(key, value)
    if problem is not None:
        return problem
    existing = arguments.values.setdefault(key, [])
    if existing and key != "artifact":
        return f"/{name} takes {_spelled(key)} once."
    existing.append(value)
    return None


def _spelled(key: str) -> str:
    return f"--{key}" if key == "check-in" else f"{key}="


def _invalid_value(key: str, value: str) -> str | None:
    if key == "check-in":
        if _MINUTES.fullmatch(value) is None or not 1 <= int(value) <= MAX_CHECK_IN_MINUTES:
            return (
                f"--check-in takes whole minutes from 1 to {MAX_CHECK_IN_MINUTES}, "
                f"like --check-in 90; got {_shown(value)}."
            )
    elif key == "branch":
        if not valid_branch_name(value):
            return f"branch= takes a git branch name, like branch=agent/12-fix; got {_shown(value)}."
    elif key == "commit":
        if _COMMIT.fullmatch(value) is None:
            return f"commit= takes a hex commit sha of 7 to 40 characters; got {_shown(value)}."
    elif key == "artifact" and not valid_artifact_url(value):
        return (
            f"artifact= takes an http or https URL, like artifact=https://example.com/r; got {_shown(value)}."
        )
    return None


def _shown(value: str) -> str:
    """A user's token, quoted and cut short, for an error message."""
    return repr(value if len(value) <= 40 else value[:40] + "…")


def valid_branch_name(name: str) -> bool:
    """Whether `name` is a branch name git would accept (`git check-ref-format --branch`, roughly)."""
    if not name or len(name) > _MAX_BRANCH or name == "@":
        return False
    if name.startswith(("-", "/")) or name.endswith(("/", ".")):
        return False
    if ".." in name or "//" in name or "@{" in name:
        return False
    if any(char in _BRANCH_FORBIDDEN or ord(char) < 32 or ord(char) == 127 for char in name):
        return False
    return not any(part.startswith(".") or part.endswith(".lock") for part in name.split("/"))


def valid_artifact_url(url: str) -> bool:
    """Whether `url` is an absolute http(s) URL with a host, printable and of sane length."""
    if len(url) > _MAX_URL or not url.isprintable():
        return False
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced IPv6 bracket
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
