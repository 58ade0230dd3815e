"""Lenient reading of webhook payloads at intake: only the fields railyard needs, never a schema.

Payloads differ between github.com, GitHub Enterprise Server versions and time, so every
reader here tolerates missing, extra and new fields: a wrong type reads as "absent".

Intake reads a handful of values from each body (the installation, the repository, what orders
it, the keys that tell its event) and stores the body as GitHub sent it; the worker parses it
whole later. So intake does not build the body's objects: `WebhookBody` checks the whole body
is JSON (msgspec validates every byte it skips) and reads it in one pass into Structs of only
the members it looks at, leaves kept as raw bytes (`msgspec.Raw`). A body with another type
where intake looks below (`"issue": 5`) fails that pass and is read again level by level: each
member raw, an object below decoded only when a path goes into it. A 13 KB comment took 40 us
to parse whole and is read here in 20 us, and nothing frees a dict of its strings afterwards
(issue 28: the intake's rate is its CPU per request). The one pass, against reading level by
level (which scans each object below again): 32 against 44 us for a 25 KB `pull_request`, 24
against 28 for a 12 KB comment (`docs/benchmarks.md`, twelfth round).

What it reads agrees with parsing the body whole and reading the dicts (`tests/unit/
test_webhook_body.py` holds the two side by side over every real example and generated ones),
with one deliberate difference: an integer outside 64 signed bits reads as absent, as a
database column could not hold it.

What intake accepts, the worker can read (`read_payload`): msgspec accepts numbers that no
double holds (`1e400`, an integer of 400 digits) where orjson refuses them, so the worker reads
such a body with the standard library's parser instead; and a body nested deeper than msgspec
reads on this interpreter's stack (some 900 levels; orjson stops at 1,024) is refused with a
400, never a 500.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import orjson

from app.contracts.webhook_events import SUBSCRIBED_EVENTS, UNLISTED_EVENTS

__all__ = [
    "SUBSCRIBED_EVENTS",
    "UNLISTED_EVENTS",
    "UnreadableBody",
    "WebhookBody",
    "describe",
    "examine",
    "mismatch",
    "read_payload",
]

_Path = tuple[str, ...]
_INT64 = 1 << 63
_NUMBER_STARTS = frozenset(b"-0123456789")
_OBJECT, _ARRAY, _STRING, _NULL = ord("{"), ord("["), ord('"'), ord("n")


class UnreadableBody(ValueError):  # noqa: N818 - it is the answer, not a failure
    """The body is not a JSON object in UTF-8 (the sentence says which)."""


class _Reader:
    """How one level of the body is read: a Struct of the members railyard looks at, each kept
    raw (absent reads as None, JSON null as the raw `null`), and the readers of the objects below.

    `whole_type` reads the level and every level below it in one pass: each member with members
    of its own read below decodes straight into that level's Struct (absent is `UNSET`, null is
    None). A member of another type (`"issue": 5`) fails that pass, and the body is then read
    level by level (`decoder`), which reads any value."""

    def __init__(self, name: str, tree: dict[str, Any]) -> None:
        members = sorted(member for member in tree if member.isidentifier())
        struct = msgspec.defstruct(name, [(member, msgspec.Raw, None) for member in members])
        self.decoder = msgspec.json.Decoder(struct)
        self.members = frozenset(members)
        self.below = {member: _Reader(f"{name}_{member}", tree[member]) for member in members if tree[member]}
        self.whole_type: Any = msgspec.defstruct(
            f"{name}_whole",
            [
                (member, self.below[member].whole_type | None | msgspec.UnsetType, msgspec.UNSET)
                if member in self.below
                else (member, msgspec.Raw, None)
                for member in members
            ],
        )


_EVERY_MEMBER = msgspec.json.Decoder(dict[str, msgspec.Raw])
_SCALAR = msgspec.json.Decoder()


class _Level:
    """One JSON object on a path: its members as its reader read them (or all of them, raw, for
    a member no reader foresaw), and the objects below it read so far. A level read `whole`
    holds the objects below as their Structs, and no raw bytes of its own."""

    __slots__ = ("_below", "_every", "_members", "_raw", "_reader", "whole")

    def __init__(self, raw: Any, reader: _Reader | None, members: Any = None, whole: bool = False) -> None:
        self._raw, self._reader, self.whole = raw, reader, whole
        self._members = members if members is not None or reader is None else reader.decoder.decode(raw)
        self._every: dict[str, msgspec.Raw] | None = None
        self._below: dict[str, _Level | None] = {}

    def member(self, name: str) -> msgspec.Raw | None:
        reader = self._reader
        if reader is not None and name in reader.members:
            value = getattr(self._members, name)
            if not self.whole or name not in reader.below:
                raw: msgspec.Raw | None = value
                return raw
            return None if value is msgspec.UNSET else _NULL_RAW if value is None else _OBJECT_RAW
        if self.whole:
            raise _NotForeseenError
        if self._every is None:
            self._every = _EVERY_MEMBER.decode(self._raw)
        return self._every.get(name)

    def below(self, name: str) -> _Level | None:
        if name in self._below:
            return self._below[name]
        level = None
        reader = self._reader
        if self.whole and reader is not None and name in reader.below:
            value = getattr(self._members, name)
            if value is not None and value is not msgspec.UNSET:
                level = _Level(None, reader.below[name], value, whole=True)
        else:
            raw = self.member(name)
            if raw is not None and memoryview(raw)[0] == _OBJECT:
                level = _Level(raw, reader.below.get(name) if reader is not None else None)
        self._below[name] = level
        return level


class _NotForeseenError(Exception):
    """A path no reader foresaw, asked of a level read whole (which keeps no raw bytes)."""


_OBJECT_RAW = msgspec.Raw(b"{}")
_NULL_RAW = msgspec.Raw(b"null")


class WebhookBody:
    """A webhook's JSON object, read only as deep as the paths asked for (see the module)."""

    __slots__ = ("_body", "_top", "size", "text")

    def __init__(self, body: bytes) -> None:
        """Raises `UnreadableBody` when `body` is not a JSON object in UTF-8."""
        try:
            try:
                self._top = _Level(body, _ROOT, _WHOLE.decode(body), whole=True)
            except msgspec.ValidationError:  # not an object, or another type where intake looks below
                # Read again here, not a frame deeper: how deep a body may nest (the stack's
                # depth) is then the same for both readings.
                self._top = _Level(body, _ROOT, _ROOT.decoder.decode(body))
        except msgspec.ValidationError:
            raise UnreadableBody("body is not a JSON object") from None
        except msgspec.DecodeError:
            raise UnreadableBody("body is not JSON") from None
        try:
            self.text = body.decode()  # msgspec skips strings without checking their UTF-8
        except UnicodeDecodeError:
            raise UnreadableBody("body is not JSON: it is not UTF-8") from None
        self._body = body
        self.size = len(body)

    @property
    def one_pass(self) -> bool:
        """Whether the body was read in one pass (what intake's CPU for it depends on)."""
        return self._top.whole

    def _value(self, *path: str) -> msgspec.Raw | None:
        """The raw value at `path` (JSON null included; an object read whole is `{}`, its members
        read through its path), or None when a step is missing or not an object."""
        try:
            level = self._top
            for step in path[:-1]:
                below = level.below(step)
                if below is None:
                    return None
                level = below
            return level.member(path[-1])
        except _NotForeseenError:  # read whole, this path cannot be answered: read it level by level
            self._top = _Level(self._body, _ROOT)  # its reader decodes the top level
            return self._value(*path)

    def _first(self, path: tuple[str, ...]) -> tuple[msgspec.Raw | None, int]:
        raw = self._value(*path)
        return raw, memoryview(raw)[0] if raw is not None else 0

    def has(self, *path: str) -> bool:
        """Whether a value other than null is at `path`."""
        raw, first = self._first(path)
        return raw is not None and first != _NULL

    def is_object(self, *path: str) -> bool:
        return self._first(path)[1] == _OBJECT

    def is_array(self, *path: str) -> bool:
        return self._first(path)[1] == _ARRAY

    def string(self, *path: str) -> str | None:
        """A string at `path`, or None."""
        raw, first = self._first(path)
        if raw is None or first != _STRING:
            return None
        value: str = _SCALAR.decode(raw)
        return value

    def integer(self, *path: str) -> int | None:
        """An integer of 64 signed bits at `path` (not a boolean, not a float), or None."""
        raw, first = self._first(path)
        if raw is None or first not in _NUMBER_STARTS:
            return None
        try:
            value = _SCALAR.decode(raw)
        except msgspec.ValidationError:  # out of a double's range
            return None
        return value if type(value) is int and -_INT64 <= value < _INT64 else None

    def top_level(self, names: tuple[str, ...]) -> list[str]:
        """Which of `names` the object has as members at all (null included), in their order."""
        try:
            top = self._top
            return [name for name in names if top.member(name) is not None]
        except _NotForeseenError:
            return [name for name in names if self._value(name) is not None]


def read_payload(text: str) -> Any:
    """A stored payload, parsed whole: orjson, or the standard library's parser for what intake
    accepted and orjson refuses (numbers past a double's range, read as infinities)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


@dataclass(frozen=True)
class DeliveryFacts:
    """What intake reads from a payload: enough to store, route and order it."""

    action: str | None
    installation_id: int | None
    repository: str | None
    ordering_key: str | None
    repository_id: int | None = None


def _ordering_key(
    event: str,
    body: WebhookBody,
    repository: str | None,
    installation_id: int | None,
    repository_id: int | None,
) -> str | None:
    """Deliveries with the same key are processed in the order received; others in parallel.

    A repository is named in the key by GitHub's id (its name when a payload gives none): a
    rename between two deliveries of one issue or pull request keeps them in one order. A name
    always has a `/`, an id never, so the two cannot meet."""
    if event in ("installation", "installation_repositories"):
        return f"installation:{installation_id}" if installation_id is not None else None
    if repository_id is not None:
        repository = str(repository_id)
    if repository is None:
        return None
    if event in ("issues", "issue_comment"):
        number = body.integer("issue", "number")
        return f"{repository}#{number}" if number is not None else None
    part: object = None
    if event == "pull_request":
        part = body.integer("pull_request", "number") or body.integer("number")
        return f"{repository}!{part}" if part is not None else None
    if event in ("check_run", "check_suite", "merge_group"):
        part = (
            body.string(event, "head_sha")
            or body.string("check_run", "check_suite", "head_sha")
            or body.string("merge_group", "head_sha")
        )
        return f"{repository}@{part}" if part else None
    if event == "push":
        part = body.string("ref")
        return f"{repository}:{part}" if part else None
    if event in ("deployment", "deployment_status"):
        part = body.integer("deployment", "id")
        return f"{repository}^{part}" if part is not None else None
    return None


_DESCRIBED: tuple[_Path, ...] = (
    ("action",),
    ("installation", "id"),
    ("repository", "full_name"),
    ("repository", "id"),
    ("issue", "number"),
    ("pull_request", "number"),
    ("number",),
    ("check_run", "head_sha"),
    ("check_suite", "head_sha"),
    ("merge_group", "head_sha"),
    ("check_run", "check_suite", "head_sha"),
    ("ref",),
    ("deployment", "id"),
)
"""The paths `describe` reads (the readers are built for them; a path left out still reads, slower)."""


def describe(event: str, body: WebhookBody) -> DeliveryFacts:
    """The facts intake stores alongside the raw payload."""
    installation_id = body.integer("installation", "id")
    repository = body.string("repository", "full_name")
    repository = repository.casefold() if repository else None
    repository_id = body.integer("repository", "id") if repository else None
    return DeliveryFacts(
        action=body.string("action"),
        installation_id=installation_id,
        repository=repository,
        ordering_key=_ordering_key(event, body, repository, installation_id, repository_id),
        repository_id=repository_id,
    )


@dataclass(frozen=True)
class Shape:
    """What a payload of one event carries: the keys it needs, and keys that betray another event.

    GitHub signs the body, not `X-GitHub-Event`, so a body signed for one event can be posted
    again under another event's name. Each subscribed or unlisted event has keys no other one
    of them has (an installation event alone names `installation.account`), and the shape
    checks those, nothing more: fields GitHub may add or drop stay free. Paths are dotted
    names, kept split too (this runs for every webhook).
    """

    needs: tuple[tuple[str, tuple[str, ...], type], ...]
    """(dotted path, its steps, type) for each value the payload must hold."""
    betrays: tuple[str, ...]
    """Top-level keys that, present, say the body is another event's (sorted)."""
    betrays_nested: tuple[tuple[str, tuple[str, ...]], ...]
    """(dotted path, its steps) for each nested value that, present, says the same."""


_DEFINING = (
    "issue",
    "comment",
    "pull_request",
    "review",
    "thread",
    "check_run",
    "check_suite",
    "deployment",
    "deployment_status",
    "merge_group",
    "ref",
    "hook",
    "repositories_added",
    "installation.account",
    "deployment_callback_url",
)
"""Paths that identify an event. Some belong to events railyard does not subscribe to, whose
bodies a shared secret could still sign: `review` and `thread` (pull request reviews) and
`deployment_callback_url` (deployment protection rules, which carry a `deployment`)."""


def _shape(*needs: tuple[str, type], allows: tuple[str, ...] = ()) -> Shape:
    own = {path for path, _ in needs} | set(allows)
    others = [path for path in _DEFINING if path not in own]
    return Shape(
        tuple((path, tuple(path.split(".")), kind) for path, kind in needs),
        tuple(sorted(path for path in others if "." not in path)),
        tuple((path, tuple(path.split("."))) for path in others if "." in path),
    )


SHAPES: dict[str, Shape] = {
    "issue_comment": _shape(("issue", dict), ("comment", dict)),
    "issues": _shape(("issue", dict)),
    "pull_request": _shape(("pull_request", dict), ("number", int)),
    "push": _shape(("ref", str), ("before", str), ("after", str)),
    "check_suite": _shape(("check_suite", dict)),
    "check_run": _shape(("check_run", dict)),
    "deployment": _shape(("deployment", dict)),
    # A deployment status set by an Actions job names the job's check run.
    "deployment_status": _shape(("deployment", dict), ("deployment_status", dict), allows=("check_run",)),
    "merge_group": _shape(("merge_group", dict)),
    # A protection rule carries its deployment (or null, when the job creates none) and the ref.
    "deployment_protection_rule": _shape(
        ("deployment_callback_url", str), ("environment", str), allows=("deployment", "ref")
    ),
    # Renamed, transferred (and the actions railyard ignores): the repository itself, no more.
    "repository": _shape(("repository", dict), ("action", str)),
    "installation": _shape(("installation.account", dict)),
    "installation_repositories": _shape(
        ("installation.account", dict), ("repositories_added", list), ("repositories_removed", list)
    ),
    "ping": _shape(("zen", str), ("hook", dict), ("hook_id", int)),
}
"""The shape of every subscribed and unlisted event (tests check it against every real example)."""


_HOLDS: dict[type, Callable[..., bool]] = {dict: WebhookBody.is_object, list: WebhookBody.is_array}


def _holds(body: WebhookBody, steps: _Path, kind: type) -> bool:
    if kind is str:
        return body.string(*steps) is not None
    if kind is int:
        return body.integer(*steps) is not None
    return _HOLDS[kind](body, *steps)


def mismatch(event: str, body: WebhookBody) -> str | None:
    """Why `body` is not a payload of `event` (None when it is, or when the event is not known).

    The reason names the event and the path, never a value from the payload.
    """
    shape = SHAPES.get(event)
    if shape is None:
        return None
    for path, steps, kind in shape.needs:
        if not _holds(body, steps, kind):
            return f"{event} payload lacks {path}"
    carried = [path for path, steps in shape.betrays_nested if body.has(*steps)]
    carried += body.top_level(shape.betrays)
    if carried:
        return f"{event} payload carries {carried[0]}, which belongs to another event"
    return None


def _tree(paths: list[_Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in paths:
        level = tree
        for step in path:
            level = level.setdefault(step, {})
    return tree


EXAMINED: tuple[_Path, ...] = (
    *_DESCRIBED,
    *(steps for shape in SHAPES.values() for _, steps, _ in shape.needs),
    *(steps for shape in SHAPES.values() for _, steps in shape.betrays_nested),
    *((name,) for shape in SHAPES.values() for name in shape.betrays),
)
"""Every path intake reads."""
_ROOT = _Reader("WebhookBody", _tree(list(EXAMINED)))
"""Their readers, built once."""
_WHOLE = msgspec.json.Decoder(_ROOT.whole_type)


@dataclass(frozen=True)
class Examined:
    """What intake keeps of a signed body: its text, its size, its facts, and why it does not
    have the shape of its event (None when it does)."""

    text: str
    size: int
    facts: DeliveryFacts
    mismatch: str | None


def examine(event: str, body: bytes) -> Examined:
    """Read a signed body whole or not at all: `UnreadableBody` (a 400), never another error."""
    try:
        read = WebhookBody(body)
        return Examined(read.text, read.size, describe(event, read), mismatch(event, read))
    except RecursionError:  # msgspec's depth limit is the interpreter's stack
        raise UnreadableBody("body is not JSON railyard can read: it is nested too deeply") from None
