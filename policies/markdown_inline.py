"""What each character of a paragraph is, as CommonMark's inline rules read it.

A paragraph's text (its lines joined by newlines, each line's leading whitespace removed)
holds code spans, raw HTML and HTML comments, and any of them may run over several lines:
"text `start\\n/accept\\nend` text" holds `/accept` in a code span. `classify` marks every
character as plain text, code, an HTML tag or an HTML comment, following CommonMark 0.31:

- a backslash before ASCII punctuation escapes it (an escaped backtick opens nothing);
- a run of N backticks opens a code span closed by the next run of exactly N backticks; with
  no such run the backticks are literal;
- `<` opens raw HTML when a complete comment, processing instruction, declaration, CDATA
  section, open tag or closing tag starts there; else it is literal.

Links, emphasis and entities do not change which lines start with plain text, so they are
left out. Every search is linear: a terminator searched once and not found is not searched
for again.
"""

from __future__ import annotations

import re
import string

PLAIN, CODE, TAG, COMMENT = 0, 1, 2, 3

_SPECIAL = re.compile(r"[\\`<]")
_BACKTICKS = re.compile(r"`+")
_PUNCTUATION = frozenset(string.punctuation)
_ATTRIBUTE = (
    r"(?:\s+[a-zA-Z_:][a-zA-Z0-9:._-]*"
    r"(?:\s*=\s*(?:[^\"'=<>`\x00-\x20]+|'[^']*'|\"[^\"]*\"))?)"
)
_TAG = re.compile(r"<[A-Za-z][A-Za-z0-9-]*" + _ATTRIBUTE + r"*\s*/?>|</[A-Za-z][A-Za-z0-9-]*\s*>")
_COMMENT = re.compile(r"<!---?>|<!--(?:[^-]|-[^-]|--[^>])*-->")
_DECLARATION_START = re.compile(r"<![A-Za-z]")


class _Finder:
    """`str.find` that remembers each terminator's next place, so repeated misses stay linear."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._found: dict[str, int] = {}

    def find(self, needle: str, start: int) -> int:
        known = self._found.get(needle)
        if known is not None and (known < 0 or known >= start):
            return known
        found = self._text.find(needle, start)
        self._found[needle] = found
        return found


def classify(text: str) -> bytearray:
    """One mark per character of `text`: PLAIN, CODE, TAG or COMMENT."""
    marks = bytearray(len(text))
    finder = _Finder(text)
    runs: dict[int, list[int]] | None = None
    position, length = 0, len(text)
    while (special := _SPECIAL.search(text, position)) is not None:
        start = special.start()
        char = text[start]
        if char == "\\":
            position = start + (2 if start + 1 < length and text[start + 1] in _PUNCTUATION else 1)
        elif char == "`":
            if runs is None:
                runs = _backtick_runs(text)
            position = _code_span(text, start, runs, marks)
        else:
            end, mark = _html(text, start, finder)
            if end > start:
                marks[start:end] = bytes([mark]) * (end - start)
                position = end
            else:
                position = start + 1
    return marks


def _backtick_runs(text: str) -> dict[int, list[int]]:
    runs: dict[int, list[int]] = {}
    for match in _BACKTICKS.finditer(text):
        runs.setdefault(match.end() - match.start(), []).append(match.start())
    for starts in runs.values():
        starts.reverse()  # nearest last, so passing one is a pop
    return runs


def _code_span(text: str, start: int, runs: dict[int, list[int]], marks: bytearray) -> int:
    """Mark the code span opened at `start`, if it closes; return where scanning goes on.

    Scanning only moves forward, so each width's closers are consumed from the front: the
    runs are maximal, so none starts inside the opener.
    """
    end = start
    while end < len(text) and text[end] == "`":
        end += 1
    closers = runs.get(end - start)
    while closers and closers[-1] < end:
        closers.pop()
    if not closers:
        return end
    close = closers.pop() + (end - start)
    marks[start:close] = bytes([CODE]) * (close - start)
    return close


def _html(text: str, start: int, finder: _Finder) -> tuple[int, int]:
    """(end, mark) of the raw HTML starting at `start`, or (start, PLAIN) when none does."""
    if text.startswith("<!--", start):
        if text.startswith(("<!-->", "<!--->"), start):
            return text.index(">", start) + 1, COMMENT
        close = finder.find("-->", start + 4)
        if close >= 0 and _COMMENT.fullmatch(text, start, close + 3):
            return close + 3, COMMENT
        return start, PLAIN
    for opener, closer in (("<?", "?>"), ("<![CDATA[", "]]>")):
        if text.startswith(opener, start):
            close = finder.find(closer, start + len(opener))
            return (close + len(closer), TAG) if close >= 0 else (start, PLAIN)
    if _DECLARATION_START.match(text, start):
        close = finder.find(">", start + 2)
        return (close + 1, TAG) if close >= 0 else (start, PLAIN)
    match = _TAG.match(text, start)
    return (match.end(), TAG) if match is not None else (start, PLAIN)
