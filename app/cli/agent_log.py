"""Text from GitHub and railyard, made safe for what an Actions runner reads (SPEC: "Answers
that cannot be forged or jammed").

The runner reads a step's stdout and stderr line by line and runs as a workflow command every
line that, after its leading whitespace, starts with `::` (`::warning::`, `::add-mask::`,
`::stop-commands::TOKEN`, and the TOKEN that resumes them), and every line that holds `##[`
*anywhere* (the older form: the runner's `ActionCommand.TryParse` searches the whole line for
it). A refusal's words, GitHub's error message or a URL could hold either, or a `\\r`, a vertical
tab or a U+2028 that some reader takes for a line break. So every line written here starts with
railyard's own prefix: a text is split at every kind of line break and each piece gets the prefix,
terminal escapes and invisible characters are dropped, and then every `##[` becomes `#` U+2060
`#[` (`defused`), which no runner parses. In `$GITHUB_STEP_SUMMARY` text is quoted (every line
starts with `>`), escaped as Markdown when it is plain text, and defused the same way.
"""

from __future__ import annotations

import json
import re

from app.views.markdown import code_span, escape_block
from policies.text import drop_invisible

LINE_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")  # what is left after the line breaks: ESC, tab...
_OLD_FORM = "##["
_BROKEN_OLD_FORM = "#\u2060#["  # a WORD JOINER between the two `#`: shown alike, never parsed


def defused(text: str) -> str:
    """`text` with every `##[` broken by a word joiner: after it, no `##[` is left anywhere
    (the character before each `[` that followed `##` is now a `#` after U+2060)."""
    return text.replace(_OLD_FORM, _BROKEN_OLD_FORM)


def json_line(value: object) -> str:
    """`value` as one line of JSON in which no `##[` and no line-leading `::` can appear: it
    starts with `{` or `[`, escapes every control character (U+2028 and U+2029 too, as ASCII),
    and spells every `#` as `\\u0023` (a `#` is only ever inside a string, so the JSON is the same)."""
    return json.dumps(value, sort_keys=True).replace("#", "\\u0023")


def clean_line(text: str) -> str:
    """`text` on one line: line breaks and tabs become spaces, escapes and invisible characters go,
    and no `##[` is left in it."""
    flat = LINE_BREAKS.sub(" ", drop_invisible(text)).replace("\t", " ")
    return defused(_CONTROLS.sub("", flat))


def prefixed(prefix: str, text: str) -> str:
    """Every line of `text` (at any kind of line break) after `prefix`, each ending in a newline.

    `prefix` must start with a letter: then no line written can start a workflow command.
    """
    assert prefix[:1].isalpha(), "a log line must start with railyard's own word"
    return "".join(f"{prefix}{clean_line(line)}\n" for line in LINE_BREAKS.split(text.strip() or " "))


def quoted(text: str, *, markdown: bool) -> str:
    """`text` as a quoted Markdown block for the step summary: railyard's own Markdown (a reply's
    words, already escaped) kept as written, plain text escaped; every line starts with `>`."""
    if not markdown:
        return defused(escape_block(text, limit=4000))
    lines = [clean_line(line) for line in LINE_BREAKS.split(text.strip())]
    return "\n".join(f"> {line}".rstrip() for line in lines)


def shown_code(text: object) -> str:
    """A value from an answer (a code, a work state) as an inline code span."""
    return code_span(str(text), limit=80)
