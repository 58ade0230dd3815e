"""Intake's lazy reading of a body agrees with parsing it whole and reading the dicts.

The oracle is the reading intake did before `WebhookBody` (orjson, then `dig` over the dicts),
kept here: over every real example, each under every event name, and over generated bodies
that put values of every JSON type, nulls, duplicate keys and escaped keys where intake looks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.contracts.webhook_payloads import (
    EXAMINED,
    SHAPES,
    DeliveryFacts,
    UnreadableBody,
    WebhookBody,
    describe,
    examine,
    mismatch,
    read_payload,
)
from handlers.payloads import dig
from tests.fakes import FIXTURES

EXAMPLES = sorted(FIXTURES.glob("*/*/*.json"))
EVENTS = [*SHAPES, "star", "pull_request_review"]
INT64 = 1 << 63


def _int(value: Any) -> int | None:
    """`dig_int`, bounded to what a database column holds (the one deliberate difference)."""
    plain = isinstance(value, int) and not isinstance(value, bool)
    return value if plain and -INT64 <= value < INT64 else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def oracle_describe(event: str, payload: dict[str, Any]) -> DeliveryFacts:
    """What intake stored before, from the parsed dicts."""
    installation_id = _int(dig(payload, "installation", "id"))
    repository = _str(dig(payload, "repository", "full_name"))
    repository = repository.casefold() if repository else None
    repository_id = _int(dig(payload, "repository", "id")) if repository else None
    named = str(repository_id) if repository_id is not None else repository  # the key's repository
    key: str | None = None
    if event in ("installation", "installation_repositories"):
        key = f"installation:{installation_id}" if installation_id is not None else None
    elif named is not None:
        repository = named
        if event in ("issues", "issue_comment"):
            number = _int(dig(payload, "issue", "number"))
            key = f"{repository}#{number}" if number is not None else None
        elif event == "pull_request":
            part = _int(dig(payload, "pull_request", "number")) or _int(dig(payload, "number"))
            key = f"{repository}!{part}" if part is not None else None
        elif event in ("check_run", "check_suite", "merge_group"):
            sha = (
                _str(dig(payload, event, "head_sha"))
                or _str(dig(payload, "check_run", "check_suite", "head_sha"))
                or _str(dig(payload, "merge_group", "head_sha"))
            )
            key = f"{repository}@{sha}" if sha else None
        elif event == "push":
            ref = _str(dig(payload, "ref"))
            key = f"{repository}:{ref}" if ref else None
        elif event in ("deployment", "deployment_status"):
            deployment = _int(dig(payload, "deployment", "id"))
            key = f"{repository}^{deployment}" if deployment is not None else None
    stored = repository_name(payload)
    return DeliveryFacts(_str(dig(payload, "action")), installation_id, stored, key, repository_id)


def repository_name(payload: dict[str, Any]) -> str | None:
    """The repository's name as intake stores it: casefolded."""
    name = _str(dig(payload, "repository", "full_name"))
    return name.casefold() if name else None


def oracle_mismatch(event: str, payload: dict[str, Any]) -> str | None:
    """The shape check as it read the parsed dicts."""
    shape = SHAPES.get(event)
    if shape is None:
        return None
    for path, steps, kind in shape.needs:
        value = dig(payload, *steps)
        if kind is int:
            value = _int(value)
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"{event} payload lacks {path}"
    carried = [path for path, steps in shape.betrays_nested if dig(payload, *steps) is not None]
    carried += sorted(set(shape.betrays).intersection(payload))
    if carried:
        return f"{event} payload carries {carried[0]}, which belongs to another event"
    return None


def assert_agrees(body: bytes, label: str = "") -> None:
    payload = orjson.loads(body)
    read = WebhookBody(body)
    assert read.text == body.decode() and read.size == len(body)
    for event in EVENTS:
        assert describe(event, read) == oracle_describe(event, payload), (label, event)
        assert mismatch(event, read) == oracle_mismatch(event, payload), (label, event)


def test_every_real_example_reads_as_its_parsed_dicts_do_under_every_event() -> None:
    """All 245 of them (one test: each takes a millisecond, a test of its own costs more)."""
    assert len(EXAMPLES) >= 245  # a moved fixtures folder must fail this test, not empty it
    for path in EXAMPLES:
        assert_agrees(path.read_bytes(), str(path.relative_to(FIXTURES)))


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=8),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["id", "number", "head_sha", "x"]), inner),
    ),
    max_leaves=6,
)
KEYS = st.sampled_from(
    [
        "action", "installation", "repository", "issue", "comment", "pull_request", "number",
        "check_run", "check_suite", "merge_group", "ref", "deployment", "deployment_status",
        "hook", "hook_id", "zen", "repositories_added", "repositories_removed", "review", "thread",
        "deployment_callback_url", "environment", "before", "after", "id", "full_name", "account",
        "head_sha", "other",
    ]
)  # fmt: skip


def _objects(depth: int) -> st.SearchStrategy[list[tuple[str, Any]]]:
    """An object's members as pairs (keys may repeat: the last one counts, as in orjson)."""
    value = VALUES if depth == 0 else st.one_of(VALUES, _objects(depth - 1).map(_Members))
    return st.lists(st.tuples(KEYS, value), max_size=8)


class _Members(list[tuple[str, Any]]):
    """An object kept as pairs, so it can be written with duplicate and escaped keys."""


def _write(value: Any, escape: bool) -> str:
    if isinstance(value, _Members):
        members = []
        for key, member in value:
            name = "".join(f"\\u{ord(c):04x}" for c in key) if escape and key.startswith("a") else key
            members.append(f'"{name}": {_write(member, escape)}')
        return "{" + ", ".join(members) + "}"
    return json.dumps(value)


@settings(max_examples=120, deadline=None)
@given(members=_objects(2), escape=st.booleans())
def test_generated_bodies_read_as_their_parsed_dicts_do(members: list[tuple[str, Any]], escape: bool) -> None:
    """Nulls, wrong types, huge integers, nested objects where intake looks, repeated and escaped keys."""
    assert_agrees(_write(_Members(members), escape).encode())


READ_PATHS = sorted({path[: depth + 1] for path in EXAMINED for depth in range(len(path))})
"""Every path intake reads, and each object on the way to one."""
DELETE = object()


def _members_of(value: Any, decoys: bool) -> Any:
    """A parsed value as pairs; with `decoys`, each key first written with a null (the last counts)."""
    if isinstance(value, dict):
        pairs = _Members()
        for key, member in value.items():
            if decoys:
                pairs.append((key, None))
            pairs.append((key, _members_of(member, decoys)))
        return pairs
    return value


@settings(max_examples=200, deadline=None)
@given(
    example=st.sampled_from(EXAMPLES),
    changes=st.lists(st.tuples(st.sampled_from(READ_PATHS), st.one_of(st.just(DELETE), VALUES)), max_size=4),
    decoys=st.booleans(),
    escape=st.booleans(),
)
def test_real_examples_changed_where_intake_looks_read_as_their_parsed_dicts_do(
    example: Path, changes: list[tuple[tuple[str, ...], Any]], decoys: bool, escape: bool
) -> None:
    """A real body with the values intake reads removed, nulled or of another type."""
    payload = json.loads(example.read_bytes())
    for path, value in changes:
        parent = payload
        for step in path[:-1]:
            parent = parent.setdefault(step, {}) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):
            continue
        if value is DELETE:
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = value
    assert_agrees(_write(_members_of(payload, decoys), escape).encode())


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "body is not JSON"),
        (b"not json", "body is not JSON"),
        (b'{"a": [1, 2,]}', "body is not JSON"),
        (b'{"a": 1} trailing', "body is not JSON"),
        (b'{"a": {"b": "\\ud800"}}', "body is not JSON"),
        (b'{"a": {"b": "line\nbreak"}}', "body is not JSON"),
        (b"[1, 2]", "body is not a JSON object"),
        (b'"text"', "body is not a JSON object"),
        (b"null", "body is not a JSON object"),
        (b'{"comment": {"body": "\xff\xfe"}}', "body is not JSON: it is not UTF-8"),
    ],
)
def test_a_body_that_is_not_a_json_object_in_utf8_is_refused_with_its_reason(
    body: bytes, reason: str
) -> None:
    """Every byte is checked, deep in members intake never reads too."""
    with pytest.raises(UnreadableBody) as refused:
        WebhookBody(body)
    assert str(refused.value) == reason


def test_an_integer_past_64_bits_reads_as_absent_so_no_row_fails_its_batch() -> None:
    """An installation id no INTEGER column holds would fail the whole batch's insert."""
    body = WebhookBody(b'{"installation": {"id": 18446744073709551615}, "action": "created"}')
    assert describe("installation", body).installation_id is None
    assert (
        WebhookBody(b'{"installation": {"id": 9223372036854775807}}').integer("installation", "id")
        == (1 << 63) - 1
    )
    assert WebhookBody(b'{"installation": {"id": 1e400}}').integer("installation", "id") is None


def test_every_real_example_is_read_in_one_pass() -> None:
    """Real payloads hold an object wherever intake looks below, so none is read level by level
    (the slower reading, kept for bodies of other types there)."""
    assert all(WebhookBody(path.read_bytes()).one_pass for path in EXAMPLES)


def test_a_member_of_another_type_where_intake_looks_below_is_read_level_by_level() -> None:
    """`"issue": 5` fails the one pass; the body is read again, member by member, and reads as
    its parsed dicts do (the generated bodies check this for every such case)."""
    body = b'{"action": "created", "issue": 5, "repository": {"full_name": "Octo/Hello"}}'
    read = WebhookBody(body)
    assert not read.one_pass
    assert describe("issue_comment", read) == oracle_describe("issue_comment", orjson.loads(body))
    assert describe("issue_comment", read).repository == "octo/hello"
    assert mismatch("issue_comment", read) == "issue_comment payload lacks issue"


def test_a_path_no_reader_foresaw_still_reads() -> None:
    """The readers are an optimisation: any path reads, through every member of its objects."""
    body = WebhookBody(b'{"sender": {"login": "octocat", "id": 1}, "repository": {"owner": {"id": 7}}}')
    assert body.string("sender", "login") == "octocat"
    assert body.integer("repository", "owner", "id") == 7
    assert not body.has("sender", "missing")


def _from_deep_in_the_stack(levels: int, call: Any) -> Any:
    """`call()` with `levels` more Python frames beneath it (a door called from deep code)."""
    return call() if levels == 0 else _from_deep_in_the_stack(levels - 1, call)


@pytest.mark.parametrize("depth", [900, 990, 1100, 5000])
@pytest.mark.parametrize("stack", [0, 150])
def test_a_body_nested_past_what_msgspec_reads_is_refused_never_a_crash(depth: int, stack: int) -> None:
    """msgspec's depth limit is the interpreter's stack, so where it falls moves with the caller;
    wherever it falls the body is read whole or refused (a 400), never a `RecursionError` (a 500)."""
    body = b'{"issue": {"number": 1}, "comment": {"body": ' + b"[" * depth + b"]" * depth + b"}}"
    try:
        examined = _from_deep_in_the_stack(stack, lambda: examine("issue_comment", body))
    except UnreadableBody as refused:
        assert str(refused) == "body is not JSON railyard can read: it is nested too deeply"
        return
    assert examined.mismatch is None and examined.text == body.decode()
    assert depth < 1024  # anything accepted, the worker's parser reads (orjson stops at 1,024)
    assert read_payload(examined.text)["issue"] == {"number": 1}


@pytest.mark.parametrize("number", [b"1e400", b"-1e400", b"1.7976931348623159e308", b"9" * 400])
def test_a_number_no_double_holds_is_accepted_and_the_worker_reads_it(number: bytes) -> None:
    """orjson refuses what msgspec accepts here: the worker falls back to the standard parser,
    so nothing acknowledged is left unreadable (before, such a delivery failed for good)."""
    body = b'{"action": "created", "issue": {"number": 1}, "comment": {"id": ' + number + b"}}"
    examined = examine("issue_comment", body)
    assert examined.mismatch is None and examined.facts.action == "created"
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(examined.text)
    assert read_payload(examined.text)["comment"]["id"] in (float("inf"), float("-inf"), int(b"9" * 400))


def test_a_rename_keeps_an_issues_deliveries_under_one_ordering_key() -> None:
    """Two comments on issue #12, one sent before the repository's rename and one after: one
    key (by GitHub's id), so the worker keeps them in order; a payload without an id keys by name."""
    before = {"repository": {"id": 1001, "full_name": "acme/web"}, "issue": {"number": 12}}
    after = {"repository": {"id": 1001, "full_name": "acme/site"}, "issue": {"number": 12}}
    keys = [
        describe("issue_comment", WebhookBody(json.dumps(p).encode())).ordering_key for p in (before, after)
    ]
    assert keys == ["1001#12", "1001#12"]
    nameless = {"repository": {"full_name": "Acme/Web"}, "issue": {"number": 12}}
    assert describe("issue_comment", WebhookBody(json.dumps(nameless).encode())).ordering_key == "acme/web#12"
