"""The audit chain's pure parts (`policies.audit`): the canonical JSON, the digest, where a
stored chain breaks, and CSV cells no spreadsheet runs."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.audit import (
    AuditedEvent,
    canonical_json,
    chain,
    first_break,
    seed,
    spreadsheet_safe,
    ticket_differences,
    utc_text,
)
from policies.model import Ticket, TicketKey
from policies.states import IntegrationState, WorkState

AT = datetime(2026, 12, 1, 9, 30, 0, 120000, tzinfo=UTC)


def an_event(revision: int = 1, **changes: object) -> AuditedEvent:
    """A claimed event at revision `revision`."""
    event = AuditedEvent(
        revision=revision, type="claimed", actor="cody", actor_id=101, role="runner", at=AT,
        operation_id="comment:55", policy_version="cfg:abc", data={"attempt": 1, "via": "comment"},
    )  # fmt: skip
    return replace(event, **changes)  # type: ignore[arg-type]


def chained(ticket_id: int, events: list[AuditedEvent]) -> list[AuditedEvent]:
    """`events` with the digests the door writes."""
    previous, out = seed(ticket_id), []
    for event in events:
        previous = chain(previous, event)
        out.append(replace(event, digest=previous))
    return out


def test_the_canonical_json_has_the_nine_fields_sorted_and_compact() -> None:
    """Exactly the nine fields, keys sorted at every depth, no spaces, the time in UTC with a Z."""
    event = an_event(data={"z": 1, "a": {"y": None, "b": [1, 2]}})
    assert canonical_json(event) == (
        b'{"actor":"cody","actor_id":101,"at":"2026-12-01T09:30:00.120000Z",'
        b'"data":{"a":{"b":[1,2],"y":null},"z":1},"operation_id":"comment:55",'
        b'"policy_version":"cfg:abc","revision":1,"role":"runner","type":"claimed"}'
    )


def test_a_time_in_another_zone_or_without_one_is_written_in_utc() -> None:
    """09:30 UTC written as 10:30+01:00, or naive, gives the same canonical JSON."""
    plus_one = AT.astimezone(timezone(timedelta(hours=1)))
    assert utc_text(plus_one) == utc_text(AT.replace(tzinfo=None)) == "2026-12-01T09:30:00.120000Z"
    assert canonical_json(an_event(at=plus_one)) == canonical_json(an_event())


def test_non_ascii_stays_utf8_and_numbers_read_as_json_reads_them() -> None:
    """é is written as UTF-8, DEL as \\u007f, 1.0 as 1, 0.42 as 0.42; a numeric key as text."""
    text = canonical_json(an_event(data={"s": "é\x7f\n", "n": [1.0, 0.42], 3: "x"})).decode()
    assert '"data":{"3":"x","n":[1,0.42],"s":"é\\u007f\\n"}' in text


def test_the_digest_is_sha256_of_the_previous_digest_a_newline_and_the_canonical_json() -> None:
    """Recomputable with any sha256: the seed `ticket:<id>` for the first event."""
    first = an_event()
    expected = hashlib.sha256(b"ticket:9\n" + canonical_json(first)).hexdigest()
    assert chain(seed(9), first) == expected
    second = an_event(2, type="delivered")
    assert (
        chain(expected, second)
        == hashlib.sha256(expected.encode() + b"\n" + canonical_json(second)).hexdigest()
    )


def test_the_same_events_on_two_tickets_chain_differently() -> None:
    """A ticket's chain cannot be moved to another ticket unnoticed."""
    assert chained(1, [an_event()])[0].digest != chained(2, [an_event()])[0].digest


@pytest.mark.process
@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_jq_rebuilds_the_canonical_json_from_an_exported_line() -> None:
    """The docs' recipe: `jq -cS '{type,...,revision}'` on an export line prints the canonical JSON."""
    event = an_event(data={"s": 'é\x7f\t"q"', "n": [1.0, 0.42, 1e20], "deep": {"b": 1, "a": 2}})
    line = json.dumps({"ticket": "acme/web#1", "digest": "x", **_exported(event)}, ensure_ascii=False)
    program = "{type,actor,actor_id,role,at,operation_id,policy_version,data,revision}"
    printed = subprocess.run(
        ["jq", "-cS", program], input=line.encode(), capture_output=True, check=True
    ).stdout
    assert printed.rstrip(b"\n") == canonical_json(event)


def _exported(event: AuditedEvent) -> dict[str, object]:
    from policies.audit import normal

    return {
        "type": event.type, "actor": event.actor, "actor_id": event.actor_id, "role": event.role,
        "at": utc_text(event.at), "operation_id": event.operation_id,
        "policy_version": event.policy_version, "data": normal(event.data), "revision": event.revision,
    }  # fmt: skip


def test_an_intact_chain_holds() -> None:
    """Every digest recomputes and the last revision is the ticket's: no break."""
    events = chained(4, [an_event(r) for r in range(1, 6)])
    assert first_break(4, events, 5) is None
    assert first_break(4, [], 0) is None


def test_a_missing_digest_breaks_the_chain_at_that_revision() -> None:
    """An event stored without its digest (an old process) is named."""
    events = chained(4, [an_event(r) for r in range(1, 4)])
    events[1] = replace(events[1], digest=None)
    assert first_break(4, events, 3) == 2


def test_a_deleted_last_event_is_named_by_the_tickets_own_revision() -> None:
    """The ticket says revision 3 but the log stops at 2: revision 3 is missing."""
    events = chained(4, [an_event(r) for r in range(1, 4)])
    assert first_break(4, events[:2], 3) == 3


_FIELD_EDITS = {
    "type": st.sampled_from(["accepted", "sent_back", "unclaimed"]),
    "actor": st.text(min_size=1, max_size=8),
    "actor_id": st.integers(min_value=1, max_value=2**40),
    "role": st.sampled_from([None, "maintainer", "reviewer"]),
    "at": st.datetimes(timezones=st.just(UTC)),
    "operation_id": st.text(min_size=1, max_size=8),
    "policy_version": st.text(min_size=1, max_size=8),
    "data": st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=4), max_size=3),
}


@st.composite
def logs(draw: st.DrawFn) -> dict[int, list[AuditedEvent]]:
    """A few tickets, each with a chained log of 1 to 8 events of varied fields."""
    tickets = draw(st.lists(st.integers(min_value=1, max_value=10_000), min_size=1, max_size=4, unique=True))
    log = {}
    for ticket_id in tickets:
        count = draw(st.integers(min_value=1, max_value=8))
        events = [
            an_event(
                r,
                actor=draw(_FIELD_EDITS["actor"]),
                data=draw(_FIELD_EDITS["data"]),
                at=AT + timedelta(seconds=draw(st.integers(0, 10**6))),
            )
            for r in range(1, count + 1)
        ]
        log[ticket_id] = chained(ticket_id, events)
    return log


def first_broken(log: dict[int, list[AuditedEvent]], revisions: dict[int, int]) -> tuple[int, int] | None:
    """(ticket, revision) of the first break, tickets in order, as `railyard audit verify` reports it."""
    for ticket_id in sorted(log):
        broken = first_break(ticket_id, log[ticket_id], revisions[ticket_id])
        if broken is not None:
            return ticket_id, broken
    return None


@settings(max_examples=300)
@given(log=logs(), data=st.data())
def test_the_chain_breaks_at_exactly_the_edited_deleted_or_inserted_row(
    log: dict[int, list[AuditedEvent]], data: st.DataObject
) -> None:
    """One row of a random log edited (any field), deleted or inserted: exactly that ticket and revision."""
    revisions = {ticket_id: len(events) for ticket_id, events in log.items()}
    assert first_broken(log, revisions) is None
    ticket_id = data.draw(st.sampled_from(sorted(log)))
    events = log[ticket_id]
    index = data.draw(st.integers(min_value=0, max_value=len(events) - 1))
    revision = index + 1
    how = data.draw(
        st.sampled_from(["edit", "move", "delete", "delete and renumber", "insert", "forge digest"])
    )
    if how == "edit":
        name = data.draw(st.sampled_from(sorted(_FIELD_EDITS)))
        edited = replace(events[index], **{name: data.draw(_FIELD_EDITS[name])})
        if canonical_json(edited) == canonical_json(events[index]):
            return  # the "edit" changed nothing an auditor could see
        events[index] = edited
    elif how == "move":  # its revision set past the others (unique): read back last
        moved = replace(events.pop(index), revision=len(events) + data.draw(st.integers(2, 50)))
        events.append(moved)
    elif how == "delete":
        del events[index]
    elif how == "delete and renumber":  # the later rows moved down to close the gap
        events[index:] = [replace(e, revision=e.revision - 1) for e in events[index + 1 :]]
    elif how == "insert":  # a new row at `revision`, the later ones moved up, with a plausible digest
        forged = replace(an_event(revision, type="accepted"), digest=events[index].digest)
        events[index:] = [forged, *(replace(e, revision=e.revision + 1) for e in events[index:])]
    else:
        events[index] = replace(events[index], digest=hashlib.sha256(b"forged").hexdigest())
    assert first_broken(log, revisions) == (ticket_id, revision)


@pytest.mark.parametrize("cell", ['=HYPERLINK("x")', "+1", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_a_cell_a_spreadsheet_would_run_as_a_formula_gets_a_leading_apostrophe(cell: str) -> None:
    """OWASP's CSV injection advice: the cell starts with ' and reads as text."""
    assert spreadsheet_safe(cell) == "'" + cell


def test_an_ordinary_cell_is_unchanged() -> None:
    """Logins, types and ids pass through as they are."""
    assert [spreadsheet_safe(c) for c in ("cody", "claimed", "comment:5", "", "a=b")] == [
        "cody", "claimed", "comment:5", "", "a=b",
    ]  # fmt: skip


def test_ticket_differences_names_each_field_and_rail_that_differs_and_ignores_the_key() -> None:
    """A stored ticket against its replay: the differing fields, a rail's as `rails.NAME`, in
    declaration order; the key (no event names it) never counts."""
    replayed = Ticket(TicketKey("acme/web", 12), revision=4, work=WorkState.DELIVERED, attempt=1)
    assert ticket_differences(replace(replayed, key=TicketKey("acme/web", 13)), replayed) == ()
    stored = replace(
        replayed,
        work=WorkState.ACCEPTED,
        revision=5,
        rails=replace(replayed.rails, integration=IntegrationState.MERGED),
    )
    assert ticket_differences(stored, replayed) == ("revision", "work", "rails.integration")
