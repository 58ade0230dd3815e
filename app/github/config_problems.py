"""The messages a broken `.github/railyard.yml` is reported with, one line per problem.

Each problem names where it is (`roles.runner[1]`) and, when the YAML shows it, its line
(`line 3: ...`); an unknown key gets a "did you mean" from the keys known at its level. The
server (status comment, replies, check summary) and `railyard validate` print these same lines.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence

import yaml
from pydantic_core import ErrorDetails

from policies.states import Role

SHOWN_CHARS = 40
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")

Loc = Sequence[int | str]
KnownKeys = Callable[[Loc], Sequence[str]]
"""The keys a mapping at a location may hold (empty when any key is allowed or it is unknown)."""


def show(value: object) -> str:
    """A short, single-line rendering of a value from the file."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, str) and len(value) > SHOWN_CHARS:
        return repr(value[:SHOWN_CHARS] + "...")
    return repr(value)


def _key(part: int | str) -> str:
    if isinstance(part, str) and len(part) <= SHOWN_CHARS and _PLAIN_KEY.fullmatch(part):
        return part
    return show(part)


def _location(loc: Loc) -> str:
    """`('roles', 'runner', 1)` as `roles.runner[1]`."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{_key(part)}" if text else _key(part)
    return text or "the file"


def _key_location(loc: Loc) -> str:
    """The location of a key: its last part is a key, even when YAML read it as a number."""
    parent = _location(loc[:-1]) if loc[:-1] else ""
    return f"{parent}.{_key(loc[-1])}" if parent else _key(loc[-1])


def _suggestion(key: int | str, known: Sequence[str]) -> str | None:
    """The known key closest to a misspelt one, if one is close."""
    close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
    return close[0] if close else None


class Lines:
    """Finds the line of a location in the YAML node tree the file was read from."""

    def __init__(self, root: yaml.Node | None) -> None:
        """`root` is the composed document (None: no line is known)."""
        self._root = root

    def line_of(self, loc: Loc) -> int | None:
        """The 1-based line of the deepest part of `loc` the file shows (a key's own line)."""
        node, line = self._root, None
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                # The last of duplicate keys is the one YAML keeps.
                found = [
                    (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)
                ]
                if not found:
                    return line
                key, node = found[-1]
                line = key.start_mark.line + 1
            elif (
                isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value)
            ):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                return line
        return line


_EXPECTED = {
    "int_type": "expected a whole number",
    "int_parsing": "expected a whole number",
    "int_from_float": "expected a whole number",
    "string_type": "expected a string",
    "tuple_type": "expected a list",
    "list_type": "expected a list",
    "dict_type": "expected a mapping of keys to values",
    "model_type": "expected a mapping of keys to values",
    "model_attributes_type": "expected a mapping of keys to values",
}


def _unknown_key(loc: Loc, known: KnownKeys) -> str:
    close = _suggestion(loc[-1], known(loc[:-1]))
    return f"unknown key: {_key_location(loc)}" + (f" (did you mean {close}?)" if close else "")


def _unknown_role(loc: Loc) -> str:
    roles = [role.value for role in Role]
    close = _suggestion(loc[-1], roles)
    hint = f"did you mean {close}? " if close else ""
    return f"unknown role: {_key_location(loc)} ({hint}roles are {', '.join(roles)})"


def problem(error: ErrorDetails, known: KnownKeys) -> tuple[Loc, str]:
    """One pydantic error as a short line that names where in the file it is, and its location."""
    kind, loc, value, ctx = error["type"], error["loc"], error.get("input"), error.get("ctx", {})
    where = _location(loc)
    if kind in ("extra_forbidden", "invalid_key"):
        return loc, _unknown_key(loc, known)
    if loc[-1:] == ("[key]",):
        return loc[:-1], _unknown_role(loc[:-1])
    if kind in _EXPECTED:
        hint = " (write [] for nobody)" if loc[:1] == ("roles",) and value is None else ""
        return loc, f"{where}: {_EXPECTED[kind]}, got {show(value)}{hint}"
    if kind == "enum":
        return loc, f"{where}: expected {ctx.get('expected')}, got {show(value)}"
    if kind == "greater_than":
        return loc, f"{where}: must be greater than {ctx.get('gt')}, got {show(value)}"
    if kind == "greater_than_equal":
        return loc, f"{where}: must be at least {ctx.get('ge')}, got {show(value)}"
    if kind == "less_than_equal":
        return loc, f"{where}: must be at most {ctx.get('le')}, got {show(value)}"
    if kind == "string_too_short":
        return loc, f"{where}: must not be empty"
    return loc, f"{where}: {error['msg']}"


def located(errors: Sequence[ErrorDetails], lines: Lines, known: KnownKeys) -> list[str]:
    """Every error as `line N: message`, in the order of the file (unknown lines first)."""
    found = []
    for error in errors:
        loc, text = problem(error, known)
        line = lines.line_of(loc)
        found.append((line or 0, f"line {line}: {text}" if line else text))
    return [text for _, text in sorted(found, key=lambda item: item[0])]


def yaml_problem(error: yaml.YAMLError, text: str) -> str:
    """A YAML syntax error as one line with its line number."""
    if isinstance(error, yaml.MarkedYAMLError):
        what = error.problem or error.context or "invalid YAML"
        if error.problem and error.context:
            what = f"{error.problem} ({error.context})"
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        return f"{where}could not parse YAML: {what}"
    if isinstance(error, yaml.reader.ReaderError):
        line = text[: error.position].count("\n") + 1
        return f"line {line}: could not parse YAML: a character YAML does not allow"
    return "could not parse YAML"
