"""Which lines of a comment a reader sees as prose, as GitHub renders its Markdown.

Commands (`policies.parser`) and links (`policies.links`) live only in prose. The scanner
is CommonMark's block algorithm (0.31, the one markdown-it-py follows; the tests check it
against markdown-it-py over a generated corpus): containers (block quotes, list items) are
matched line by line, then new blocks start, then what is left continues a paragraph, lazily
when its containers did not all match (`- > quoted` then `/accept`: the quote's paragraph
goes on, so `/accept` is quoted). Leaf blocks:

- fenced code (``` or ~~~, any info string, unclosed runs to the end of its container),
  indented code (four columns, not interrupting a paragraph): CODE;
- HTML blocks (CommonMark's seven kinds: <pre>-like, comments, processing instructions,
  declarations, CDATA, block-level tags, any complete tag alone on its line): CODE for
  <pre>, <script>, <style> and <textarea>, which GitHub shows preformatted or strips; HTML
  for block-level and lone tags (`<details>`: GitHub renders the text in them, so links
  there count, but a command there is raw HTML and does not run); HIDDEN for the others.
  A lone tag cannot interrupt a paragraph, but on a lazy line it ends the containers left
  unmatched and starts its block (cmark's reading, so GitHub's: `- a` then `<span>`);
- ATX and setext headings and thematic breaks: PROSE that never starts a command;
- paragraphs: PROSE outside block quotes, QUOTE inside. Their inline content
  (`policies.markdown_inline`) says which characters are code spans, tags or comments, over
  several lines if need be.

Anything inside a block quote is QUOTE. Link reference definitions, tables and other GFM
extensions are read as paragraphs. Past `MAX_NESTING` containers no reader follows the text
any more (only a scanner made slow would): from that line on the comment is HIDDEN.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from policies.markdown_inline import CODE, COMMENT, PLAIN, classify


class LineKind(Enum):
    """What a line of a comment is, as a reader sees it."""

    PROSE = "prose"
    CODE = "code"  # fenced or indented code (the fences included), <pre>-like HTML blocks
    QUOTE = "quote"  # anything inside a block quote, lazy continuations included
    HTML = "html"  # block-level or lone tags and the lines up to a blank one: rendered, never commands
    HIDDEN = "hidden"  # HTML comments, processing instructions, declarations, CDATA blocks


@dataclass(frozen=True, slots=True)
class ScannedLine:
    """One line of a comment: what it is, what a reader sees of it and where keywords may live.

    `start` is where the line's content begins, after container markers and indentation.
    `text` is the line with HTML comments removed (prose) or as written (code, quote);
    `plain` is the text a keyword may live in: code spans blanked, comments dropped, empty
    for code and hidden lines. `opens_line` is true when the content is a paragraph line
    outside block quotes whose first character GitHub shows as plain text (not inside a code
    span, tag or comment begun on an earlier line).
    """

    index: int
    raw: str
    kind: LineKind
    text: str
    plain: str
    start: int = 0
    opens_line: bool = False


MAX_NESTING = 64  # deeper containers are there only to slow the scanner down: hide the rest
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_NONSPACE = re.compile(r"[^ \t]")
_ATX = re.compile(r"#{1,6}(?:[ \t]|$)")
_FENCE_OPEN = re.compile(r"(`{3,})(?!.*`)|(~{3,})")
_FENCE_CLOSE = re.compile(r"(`{3,}|~{3,})[ \t]*$")
_SETEXT = re.compile(r"(?:=+|-+)[ \t]*$")
_THEMATIC = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_THEMATIC_CHARS = ("*", "-", "_")
_MAYBE_SPECIAL = frozenset("#`~<>*+-_=0123456789")
_LIST_MARKER = re.compile(r"[*+-]|([0-9]{1,9})[.)]")
_BLOCK_NAMES = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|"
    "dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|"
    "h6|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|"
    "option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul"
)
_TAG_ALONE = (
    r"(?:<[A-Za-z][A-Za-z0-9-]*(?:\s+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:\s*=\s*(?:[^\"'=<>`\x00-\x20]+|"
    r"'[^']*'|\"[^\"]*\"))?)*\s*/?>|</[A-Za-z][A-Za-z0-9-]*\s*>)\s*$"
)
# (start, end) of CommonMark's HTML block kinds 1 to 7; kinds 6 and 7 end at a blank line.
_HTML_KINDS: tuple[tuple[re.Pattern[str], re.Pattern[str] | None], ...] = (
    (
        re.compile(r"<(?:script|pre|style|textarea)(?=\s|>|$)", re.I | re.A),
        re.compile(r"</(?:script|pre|style|textarea)>", re.I | re.A),
    ),
    (re.compile(r"<!--"), re.compile(r"-->")),
    (re.compile(r"<\?"), re.compile(r"\?>")),
    (re.compile(r"<![A-Za-z]"), re.compile(r">")),
    (re.compile(r"<!\[CDATA\["), re.compile(r"\]\]>")),
    (re.compile(r"</?(?:" + _BLOCK_NAMES + r")(?=\s|/?>|$)", re.I | re.A), None),
    (re.compile(_TAG_ALONE), None),
)  # fmt: skip


def split_lines(body: str) -> list[str]:
    """The lines of a comment, split on LF, CRLF or CR as GitHub does; a leading BOM dropped."""
    return _LINE_BREAK.split(body.removeprefix("\ufeff"))


def scan_markdown(body: str) -> tuple[ScannedLine, ...]:
    """Every line of `body`, classified as prose, code, quote or hidden (see the module doc)."""
    lines = split_lines(body)
    blocks = _Blocks()
    for index, raw in enumerate(lines):
        blocks.feed(index, raw)
    return _lines(lines, blocks.roles)


@dataclass
class _Box:
    """A container: the document, a block quote or a list item."""

    quoted: bool
    quote: bool = False  # a block quote, else the document or a list item
    width: int = 0  # a list item's content indent, in columns
    empty: bool = True  # no block in it yet: an item begun by a blank line ends at the next


@dataclass
class _Paragraph:
    quoted: bool
    lines: list[int] = field(default_factory=list)
    heading: bool = False


@dataclass
class _Leaf:
    kind: str  # "paragraph", "fence", "indented" or "html"
    paragraph: _Paragraph | None = None
    fence: tuple[str, int, int] = ("", 0, 0)  # character, length, indent
    html_end: re.Pattern[str] | None = None  # the end condition of kinds 1 to 5
    role: str = "html"  # "pre" (kind 1), "html" (kinds 2 to 5) or "tags" (kinds 6 and 7)


@dataclass(frozen=True)
class _Role:
    what: str  # "paragraph", "heading", "code", "pre", "html", "tags", "blank" or "break"
    quoted: bool
    start: int
    paragraph: _Paragraph | None = None


class _Cursor:
    """A position in one line, in characters and in columns (tabs stop every four columns)."""

    def __init__(self, raw: str) -> None:
        self.raw, self.position, self.column, self.pad = raw, 0, 0, 0  # pad: columns of a split tab
        self._strays: dict[str, int] = {}

    def thematic(self, first: int) -> bool:
        """Whether the line from `first` is a thematic break, linear over all calls on a line:
        nested list markers (`* * * x`) ask at every level, so where a stray character was
        found is remembered."""
        char = self.raw[first]
        stray = self._strays.get(char, -1)
        if stray < first:
            found = _STRAY[char].search(self.raw, first)
            stray = self._strays[char] = found.start() if found is not None else len(self.raw)
        return stray == len(self.raw) and self.raw.count(char, first) >= 3

    def indent(self) -> tuple[int, int]:
        """Columns of whitespace ahead and the index of the first other character."""
        if not self.pad and self.raw[self.position : self.position + 1] not in (" ", "\t", ""):
            return 0, self.position  # the common case, kept cheap
        found = _NONSPACE.search(self.raw, self.position)
        end = found.start() if found is not None else len(self.raw)
        column = self.column + self.pad
        for char in self.raw[self.position : min(end, self.position + 8)]:
            column += 1 if char == " " else 4 - column % 4
        if end > self.position + 8:
            column += end - self.position - 8  # only "four or more" matters beyond this
        return column - self.column, end

    def blank(self) -> bool:
        if self.raw[self.position : self.position + 1] not in (" ", "\t", ""):
            return False
        return _NONSPACE.search(self.raw, self.position) is None

    def skip_columns(self, count: int) -> None:
        """Move past `count` columns of whitespace, splitting a tab if need be."""
        while count > 0:
            if self.pad:
                taken = min(self.pad, count)
                self.pad, self.column, count = self.pad - taken, self.column + taken, count - taken
                continue
            char = self.raw[self.position : self.position + 1]
            if char == " ":
                self.position, self.column, count = self.position + 1, self.column + 1, count - 1
            elif char == "\t":
                width = 4 - self.column % 4
                self.position += 1
                self.pad = max(width - count, 0)
                self.column, count = self.column + min(width, count), count - min(width, count)
            else:
                return

    def skip_chars(self, count: int) -> None:
        """Move past `count` characters that are not whitespace."""
        self.position, self.column, self.pad = self.position + count, self.column + self.pad + count, 0


class _Blocks:
    """CommonMark's block phase, one line at a time, recording each line's role."""

    def __init__(self) -> None:
        self.stack: list[_Box] = [_Box(quoted=False)]  # the document, then the open containers
        self.leaf: _Leaf | None = None
        self.roles: list[_Role] = []
        self.too_deep = False  # past MAX_NESTING containers: every line from here is hidden

    def feed(self, index: int, raw: str) -> None:
        if self.too_deep:
            self.roles.append(_Role("html", False, 0))
            return
        cursor = _Cursor(raw)
        matched = 1
        while matched < len(self.stack) and self._continues(self.stack[matched], cursor):
            matched += 1
        boxes_matched = matched == len(self.stack)
        if boxes_matched and self.leaf is not None and self._leaf_takes(cursor):
            return
        self._starts(cursor, matched, boxes_matched)

    def _record(self, what: str, cursor: _Cursor, paragraph: _Paragraph | None = None) -> None:
        start = cursor.indent()[1] if what != "code" else cursor.position
        self.roles.append(_Role(what, self.stack[-1].quoted, start, paragraph))

    def _continues(self, box: _Box, cursor: _Cursor) -> bool:
        if box.quote:
            columns, first = cursor.indent()
            if columns > 3 or cursor.raw[first : first + 1] != ">":
                return False
            self._enter_quote(cursor, columns)
            return True
        if cursor.blank():
            return not box.empty
        columns, _ = cursor.indent()
        if columns < box.width:
            return False
        cursor.skip_columns(box.width)
        return True

    @staticmethod
    def _enter_quote(cursor: _Cursor, columns: int) -> None:
        cursor.skip_columns(columns)
        cursor.skip_chars(1)
        if cursor.raw[cursor.position : cursor.position + 1] in (" ", "\t"):
            cursor.skip_columns(1)

    def _leaf_takes(self, cursor: _Cursor) -> bool:
        """Whether the open fence, HTML block or indented code takes the line whole."""
        leaf = self.leaf
        assert leaf is not None
        columns, first = cursor.indent()
        if leaf.kind == "fence":
            closing = _FENCE_CLOSE.match(cursor.raw, first) if columns < 4 else None
            char, length, indent = leaf.fence
            if closing is not None and closing.group(1)[0] == char and len(closing.group(1)) >= length:
                self.leaf = None
            cursor.skip_columns(min(columns, indent))
            self._record("code", cursor)
            return True
        if leaf.kind == "html":
            if leaf.html_end is None and cursor.blank():
                self.leaf = None
                self._record("blank", cursor)
                return True
            self._record(leaf.role, cursor)
            if leaf.html_end is not None and leaf.html_end.search(cursor.raw, cursor.position):
                self.leaf = None
            return True
        if leaf.kind == "indented":
            if columns >= 4 or cursor.blank():
                cursor.skip_columns(4)
                self._record("code", cursor)
                return True
            self.leaf = None
        return False

    def _starts(self, cursor: _Cursor, matched: int, boxes_matched: bool) -> None:
        """New containers and blocks, then the paragraph text that is left (CommonMark 4 and 5)."""
        paragraph = self.leaf.paragraph if self.leaf is not None else None
        blank = cursor.blank()
        tip_is_paragraph = paragraph is not None
        in_paragraph = tip_is_paragraph and boxes_matched and not blank
        while True:
            columns, first = cursor.indent()
            if columns >= 4:
                if tip_is_paragraph or blank:
                    break
                self._close(matched)
                cursor.skip_columns(4)
                self._open(_Leaf("indented"))
                self._record("code", cursor)
                return
            if columns < 4 and cursor.raw[first : first + 1] not in _MAYBE_SPECIAL:
                break  # no block starts with this character: paragraph text (most lines)
            if len(self.stack) > MAX_NESTING:
                self.too_deep = True
                self.roles.append(_Role("html", False, 0))
                return
            if cursor.raw[first : first + 1] == ">":
                self._close(matched)
                self.stack[-1].empty = False
                self.stack.append(_Box(quoted=True, quote=True))
                matched = len(self.stack)
                self._enter_quote(cursor, columns)
                tip_is_paragraph = in_paragraph = False
                blank = cursor.blank()
                continue
            if self._leaf_start(cursor, first, matched, tip_is_paragraph, in_paragraph):
                return
            width = _list_item(cursor, columns, first, in_paragraph)
            if width is None:
                break
            self._close(matched)
            self.stack[-1].empty = False
            self.stack.append(_Box(quoted=self.stack[-1].quoted, width=width))
            matched = len(self.stack)
            tip_is_paragraph = in_paragraph = False
            blank = cursor.blank()
        self._text(cursor, matched, boxes_matched, blank, tip_is_paragraph)

    def _leaf_start(
        self, cursor: _Cursor, first: int, matched: int, tip_is_paragraph: bool, in_paragraph: bool
    ) -> bool:
        """Start a heading, fence, HTML block, setext underline or thematic break, if one starts.

        Patterns match at `first` in the whole line, never on a copy of its rest: a line of
        100,000 nested list markers would copy the line at every level."""
        raw = cursor.raw
        if _ATX.match(raw, first):
            self._close(matched)
            self.stack[-1].empty = False  # `- #`: an item holding a heading goes on past a blank line
            heading = _Paragraph(quoted=self.stack[-1].quoted, lines=[len(self.roles)], heading=True)
            self._record("heading", cursor, heading)
            return True
        fence = _FENCE_OPEN.match(raw, first)
        if fence is not None:
            self._close(matched)
            run = fence.group(1) or fence.group(2)
            self._open(_Leaf("fence", fence=(run[0], len(run), cursor.indent()[0])))
            self._record("code", cursor)
            return True
        # A lone tag (kind 7) cannot interrupt a paragraph, but, as cmark (and so GitHub)
        # reads it, it does start a block on a lazy line: `- a` then `<span>` ends the item.
        kind = _html_kind(raw, first, can_be_tag=not in_paragraph)
        if kind is not None:
            self._close(matched)
            end = _HTML_KINDS[kind][1]
            role = "pre" if kind == 0 else "html" if kind < 5 else "tags"
            self._open(_Leaf("html", html_end=end, role=role))
            self._record(role, cursor)
            if end is not None and end.search(raw, first):
                self.leaf = None
            return True
        if in_paragraph and _SETEXT.match(raw, first):
            assert self.leaf is not None and self.leaf.paragraph is not None
            self.leaf.paragraph.heading = True
            self.leaf = None
            self._record("break", cursor)
            return True
        if raw[first : first + 1] in _THEMATIC_CHARS and cursor.thematic(first):
            self._close(matched)
            self.stack[-1].empty = False  # as for a heading: `- ***` is an item that is not empty
            self._record("break", cursor)
            return True
        return False

    def _text(
        self, cursor: _Cursor, matched: int, boxes_matched: bool, blank: bool, tip_is_paragraph: bool
    ) -> None:
        leaf = self.leaf
        if leaf is not None and leaf.paragraph is not None and tip_is_paragraph and not blank:
            # A continuation, or a lazy one when the containers did not all match.
            leaf.paragraph.lines.append(len(self.roles))
            role = _Role("paragraph", leaf.paragraph.quoted, cursor.indent()[1], leaf.paragraph)
            self.roles.append(role)
            return
        self._close(matched)
        self.leaf = None
        if blank:
            self._record("blank", cursor)
            return
        paragraph = _Paragraph(quoted=self.stack[-1].quoted, lines=[len(self.roles)])
        self._open(_Leaf("paragraph", paragraph=paragraph))
        self._record("paragraph", cursor, paragraph)

    def _close(self, matched: int) -> None:
        """Close the containers that did not match, and the open leaf block."""
        del self.stack[matched:]
        self.leaf = None

    def _open(self, leaf: _Leaf) -> None:
        self.stack[-1].empty = False
        self.leaf = leaf


def _html_kind(raw: str, first: int, can_be_tag: bool) -> int | None:
    """Which HTML block the line starts at `first` (0 to 6 for CommonMark's kinds 1 to 7), or None.

    Kind 7 (any complete tag alone on its line) cannot interrupt a paragraph (`can_be_tag`
    is false only where the line would continue one with all its containers matched)."""
    if raw[first : first + 1] != "<":
        return None
    for kind, (start, _) in enumerate(_HTML_KINDS):
        if start.match(raw, first) and (kind < 6 or can_be_tag):
            return kind
    return None


def _list_item(cursor: _Cursor, columns: int, first: int, in_paragraph: bool) -> int | None:
    """The content indent of the list item starting here (moving past its marker), or None."""
    marker = _LIST_MARKER.match(cursor.raw, first)
    if marker is None:
        return None
    after = cursor.raw[marker.end() : marker.end() + 1]
    if after not in ("", " ", "\t"):
        return None
    empty = _NONSPACE.search(cursor.raw, marker.end()) is None
    if in_paragraph and (empty or (marker.group(1) is not None and int(marker.group(1)) != 1)):
        return None
    cursor.skip_columns(columns)
    cursor.skip_chars(marker.end() - first)
    spaces, _ = cursor.indent()
    length = marker.end() - first
    if empty or spaces >= 5:
        cursor.skip_columns(1)
        return columns + length + 1
    cursor.skip_columns(spaces)
    return columns + length + spaces


_RUNS = re.compile(rb"\x00+|\x01+|\x02+|\x03+")


def _lines(lines: list[str], roles: list[_Role]) -> tuple[ScannedLine, ...]:
    """The scanned lines, once every paragraph's inline content is known."""
    inline: dict[int, tuple[str, str, bool]] = {}
    for role in roles:
        if role.paragraph is not None and role.paragraph.lines[0] not in inline:
            inline.update(_paragraph(lines, roles, role.paragraph))
    return tuple(_line(index, raw, roles[index], inline.get(index)) for index, raw in enumerate(lines))


def _paragraph(
    lines: list[str], roles: list[_Role], paragraph: _Paragraph
) -> dict[int, tuple[str, str, bool]]:
    """(visible text, plain text, opens the line) of each line of one paragraph."""
    contents = [lines[index][roles[index].start :] for index in paragraph.lines]
    marks = classify("\n".join(contents))
    found: dict[int, tuple[str, str, bool]] = {}
    offset = 0
    for index, content in zip(paragraph.lines, contents, strict=True):
        visible, plain = [], []
        for run in _RUNS.finditer(marks, offset, offset + len(content)):
            mark, piece = run.group()[0], content[run.start() - offset : run.end() - offset]
            if mark != COMMENT:
                visible.append(piece)
            if mark != COMMENT:
                plain.append(" " if mark == CODE else piece)
        opens = not paragraph.quoted and not paragraph.heading and (not content or marks[offset] == PLAIN)
        found[index] = "".join(visible), "".join(plain), opens
        offset += len(content) + 1
    return found


def _line(index: int, raw: str, role: _Role, inline: tuple[str, str, bool] | None) -> ScannedLine:
    if inline is not None:
        visible, plain, opens = inline
        kind = LineKind.QUOTE if role.quoted else LineKind.PROSE
        text = raw if role.quoted else raw[: role.start] + visible
        return ScannedLine(index, raw, kind, text, plain, role.start, opens)
    if role.quoted:
        plain = raw[role.start :] if role.what == "break" else ""
        return ScannedLine(index, raw, LineKind.QUOTE, raw, plain, role.start)
    if role.what in ("code", "pre"):
        return ScannedLine(index, raw, LineKind.CODE, raw, "", role.start)
    if role.what == "tags":
        return ScannedLine(index, raw, LineKind.HTML, raw, raw, role.start)
    if role.what == "html":
        return ScannedLine(index, raw, LineKind.HIDDEN, "", "", role.start)
    if role.what == "break":
        return ScannedLine(index, raw, LineKind.PROSE, raw, raw, role.start)
    return ScannedLine(index, raw, LineKind.PROSE, "", "", role.start)


_STRAY = {char: re.compile("[^ \t" + re.escape(char) + "]") for char in _THEMATIC_CHARS}
