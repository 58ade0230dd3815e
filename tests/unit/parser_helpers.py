"""What the slash-command parser's tests share: parsing a comment that must parse, or must not."""

from __future__ import annotations

from policies.parser import parse_comment


def command_of(body: str) -> object:
    """The command `body` parses to, asserting it parsed cleanly."""
    parsed = parse_comment(body)
    assert parsed.error is None, parsed.error
    return parsed.command


def error_of(body: str) -> str:
    """The argument error `body` parses to, asserting no command came with it."""
    parsed = parse_comment(body)
    assert parsed.command is None
    assert parsed.error is not None
    return parsed.error
