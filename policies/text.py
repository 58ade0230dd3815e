"""Characters people cannot see, dropped from user text before it is kept (SPEC: "Answers that
cannot be forged or jammed").

A free text a command stores (a summary, feedback, a reason) reaches people through the status
comment, which drops these characters, and reaches programs through the status object, the API
and the hidden status line, which show the text as stored. Dropping them once, when the command
is parsed, makes both readers see the same text: an instruction spelled in Unicode tag
characters (invisible to a reviewer, read by a language model) is never stored at all.

The set: control characters other than tab and line breaks, bidirectional overrides and
isolates, Unicode tag characters (U+E0000-U+E007F), zero-width and other invisible characters
(U+200B-U+200D, U+2060-U+2064, U+FEFF, U+180E, U+00AD, U+034F, the Hangul fillers), the bidi
marks U+200E, U+200F and U+061C, variation selectors other than the text and emoji presentation
selectors, and any run of those two past its first.
"""

from __future__ import annotations

import re

INVISIBLE = re.compile(
    "[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f\u202a-\u202e\u2066-\u2069]"  # controls, bidi overrides
    "|[\U000e0000-\U000e007f]"  # tag characters: invisible text
    "|[\u200b-\u200f\u2060-\u2064\ufeff\u180e\u00ad\u061c\u115f\u1160\u3164\uffa0\u034f]"  # invisible
    "|[\u180b-\u180d\u180f\u17b4\u17b5]"  # Mongolian free variation selectors, Khmer inherent vowels
    "|[\U000e0100-\U000e01ef\ufe00-\ufe0d]"  # variation selectors beyond text/emoji presentation
)
_SELECTOR_RUNS = re.compile("(?<=[\ufe0e\ufe0f])[\ufe0e\ufe0f]+")  # after the drop: keep the first


def drop_invisible(text: str) -> str:
    """`text` without the characters people cannot see (the set above)."""
    return _SELECTOR_RUNS.sub("", INVISIBLE.sub("", text))


def has_invisible(text: str) -> bool:
    """Whether `text` holds a character people cannot see."""
    return drop_invisible(text) != text
