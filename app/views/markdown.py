"""Escaping user text for GitHub comments (SPEC: "What people see").

User text (summaries, feedback, reasons, branch names) is shown literally: Markdown and HTML
in it render as the characters typed, never as markup. Whatever the input, the output has

- no raw HTML: `<`, `>` and `&` become entities, so no tag, no `<!--` or `-->` (a hidden
  marker cannot be forged), no entity the user spelled;
- no live mention: every `@` is followed by U+2060 WORD JOINER, which GitHub does not
  strip and which cannot start a login, so `@octocat` and `@org/team` notify nobody while
  looking the same (`mention` makes the deliberate ones);
- no emphasis, code span, link, image, strikethrough, table cell break or math: the
  characters ``\\ ` * _ [ ] | ~`` are backslash-escaped and `$` becomes `&#36;`;
- no control characters, bidirectional overrides or lone surrogates (those become U+FFFD);
- no invisible text: Unicode tag characters (U+E0000-U+E007F, invisible to people, read by
  language models), zero-width and other invisible characters (U+200B-U+200D, U+2060-U+2064,
  U+FEFF, U+180E, U+00AD, Hangul fillers), the bidi marks U+200E, U+200F and U+061C, and
  variation selectors past the first after a character (runs of them can smuggle bytes) are
  dropped (`policies.text`, the same set dropped from free text when a command is parsed);
- no railyard marker: `railyard` followed by a colon gets a word joiner before the colon, so
  neither the text shown nor the raw body spells `railyard:` (railyard's hidden lines are
  `<!-- railyard:... -->`, and only railyard writes them).

`escape_inline` also collapses all whitespace, newlines included, to single spaces (safe in a
sentence or a table cell). `escape_block` returns a quoted block, every line starting with
`>`, where no line can open a fence, heading, list, table or indented code block: leading
indentation becomes no-break spaces and a line-leading `#`, `-`, `+`, `=` or `1.` is escaped.

`code_span` shows a user's line exactly as typed inside an inline code span (no markup, no
mention, `<` and `>` as themselves, except that `<!` gets a word joiner between its two
characters, so the raw body never spells `<!--`): cleaned and collapsed like
`escape_inline`, fenced by one backtick more than the longest run of backticks it holds,
padded with a space when it starts or ends with a backtick (the renderer strips that space).

With a `limit`, the output is at most `limit` characters, an ellipsis included; it is cut
between escapes, never inside one. `#12` stays as typed (a reference, not a mention).
"""

from __future__ import annotations

import re

from policies.text import drop_invisible

ELLIPSIS = "…"
WORD_JOINER = "\u2060"

_ESCAPES: dict[str, str] = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "$": "&#36;",  # GitHub math; an entity is never a delimiter
    "@": "@" + WORD_JOINER,
    **{char: "\\" + char for char in "\\`*_[]|~"},
}
_LINE_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_BACKTICK_RUNS = re.compile("`+")
_SURROGATES = re.compile("[\ud800-\udfff]")
_MARKER_WORD = re.compile(r"railyard(?=\s*:)", re.IGNORECASE)  # railyard's markers are `railyard:...`
_ORDERED_MARKER = re.compile(r"[0-9]{1,9}(?=[.)])")
_LINE_START_ESCAPED = frozenset("#-+=")
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?(?:\[bot\])?")


def escape_inline(text: str, limit: int | None = None) -> str:
    """`text` on one line, safe inside a sentence or a Markdown table cell."""
    cleaned = " ".join(_clean(text).split())
    kept, cut = _cap(cleaned, limit)
    return _fit([_ESCAPES.get(char, char) for char in kept], limit, cut)


def code_span(text: str, limit: int | None = None) -> str:
    """`text` on one line as an inline code span, shown exactly as typed (at most `limit`
    characters of it, an ellipsis included)."""
    # Entities do not work in a code span: a word joiner keeps `<!` from opening a comment.
    content = " ".join(_clean(text).split()).replace("<!", "<" + WORD_JOINER + "!")
    if limit is not None and len(content) > limit:
        content = content[: max(limit - len(ELLIPSIS), 0)].rstrip() + ELLIPSIS
    if not content:
        return "` `"
    fence = "`" * (max((len(run) for run in _BACKTICK_RUNS.findall(content)), default=0) + 1)
    pad = " " if content[0] == "`" or content[-1] == "`" else ""
    return f"{fence}{pad}{content}{pad}{fence}"


def escape_block(text: str, limit: int | None = None) -> str:
    """`text` as a Markdown quoted block (`> ` lines); place it on its own lines.

    Empty (or all-blank) text, or a limit below two characters, gives an empty string.
    """
    lines = _clean(text).split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    first = next((number for number, line in enumerate(lines) if line.strip()), len(lines))
    kept, cut = _cap("\n".join(lines[first:]), limit)
    units: list[str] = []
    for number, line in enumerate(kept.split("\n") if kept else []):
        units.append("\n>" if number else ">")
        if line.strip():
            units.append(" ")
            units.extend(_line_units(line))
    block = _fit(units, limit, cut)
    return block if block.startswith(">") else ""  # a limit too small for even `>…`


def mention(login: str) -> str:
    """A deliberate, live @-mention of a GitHub login (letters, digits, hyphens, optional `[bot]`).

    Raises ValueError for anything that is not a login, so no text can ride along.
    """
    if _LOGIN.fullmatch(login) is None:
        raise ValueError(f"not a GitHub login: {login[:60]!r}")
    return "@" + login


def _clean(text: str) -> str:
    """Line breaks as `\\n`; control characters and bidi overrides gone; surrogates replaced."""
    text = drop_invisible(_LINE_BREAKS.sub("\n", text))
    return _MARKER_WORD.sub(lambda word: word.group() + WORD_JOINER, _SURROGATES.sub("\ufffd", text))


def _cap(text: str, limit: int | None) -> tuple[str, bool]:
    """At most `limit + 1` characters of `text` (each yields one or more), and whether it was cut.

    Escaping a long text only to throw most of it away would be wasted work.
    """
    if limit is None or len(text) <= limit + 1:
        return text, False
    return text[: max(limit, 0) + 1], True


def _line_units(line: str) -> list[str]:
    """One line's escapes, its indentation kept as no-break spaces so it opens no block."""
    content = line.lstrip(" \t")
    indent = line[: len(line) - len(content)]
    width = 0
    for char in indent:
        width += 4 - width % 4 if char == "\t" else 1
    units = ["\u00a0"] * width
    escaped = [_ESCAPES.get(char, char) for char in content]
    ordered = _ORDERED_MARKER.match(content)
    if ordered is not None:
        escaped[ordered.end()] = "\\" + escaped[ordered.end()]
    elif content[:1] in _LINE_START_ESCAPED:
        escaped[0] = "\\" + escaped[0]
    return units + escaped


def _fit(units: list[str], limit: int | None, cut: bool) -> str:
    """The units joined; with a limit, as many whole units as fit, then an ellipsis if any is left out."""
    joined = "".join(units)
    if limit is None or (len(joined) <= limit and not cut):
        return joined
    if limit < len(ELLIPSIS):
        return ""
    budget, used, kept = limit - len(ELLIPSIS), 0, []
    for unit in units:
        if used + len(unit) > budget:
            break
        kept.append(unit)
        used += len(unit)
    shortened = "".join(kept).rstrip()
    while shortened.endswith("\n>"):  # no trailing empty quote lines before the ellipsis
        shortened = shortened[:-2].rstrip()
    return shortened + ELLIPSIS
