"""Which lines of a comment a reader sees as prose, as GitHub renders its Markdown.

Commands (`policies.parser`) and links (`policies.links`) live only in prose: where a reader
would not see a line as prose, it holds neither. The scanner follows CommonMark, simplified
in ways that only ever hide more, never less:

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
"""

from __future__ import annotations

import re
import string
from bisect import bisect_left
from dataclasses import dataclass
from enum import Enum


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
