"""Mergeability is an answer about one head into one base (SPEC *The repository rail*, *The base
moves*): a PR retargeted to another base no longer shows its old base's answer, in any order, and
what was recorded before bases were kept still reads as it did."""

from __future__ import annotations

from dataclasses import replace
from itertools import permutations

import pytest

from app.store.codec import ticket_from_data, ticket_to_data
from policies.model import Ticket, TicketKey
from policies.rails import (
    MergeabilityObserved,
    PullRequestObserved,
    fingerprint,
    observation_from_data,
    observation_to_data,
)
from tests.unit.rail_builders import IS, fold, mergeability, pull_request


def in_every_order(*observations: PullRequestObserved | MergeabilityObserved) -> set[IS]:
    """The repository rail after each arrival order of `observations`."""
    return {fold(order).rails.integration for order in permutations(observations)}


@pytest.mark.parametrize(
    ("merges_into_main", "merges_into_release", "shown"),
    [(False, True, IS.PULL_REQUEST_OPEN), (True, False, IS.BLOCKED)],
)
def test_a_retargeted_pull_request_shows_its_new_bases_answer(
    merges_into_main: bool, merges_into_release: bool, shown: IS
) -> None:
    """#34 is answered about `main` (an answer newer than the retarget: a base push read just
    before), then retargeted to `release-1`: the rail follows `release-1`'s answer (a conflict
    there blocks, a clean merge there is open), whatever the arrival order."""
    assert in_every_order(
        pull_request(base="main", at=1),
        mergeability(merges_into_main, base="main", at=3),
        pull_request(base="release-1", at=2),
        mergeability(merges_into_release, base="release-1", at=2),
    ) == {shown}


def test_an_answer_recorded_before_bases_were_kept_still_blocks() -> None:
    """An answer logged without a base stands for the PR's base until one for that base arrives:
    a PR blocked before the upgrade stays blocked when its next event names its base."""
    old = mergeability(False, at=2)
    assert in_every_order(pull_request(at=1), old, pull_request(base="main", at=3)) == {IS.BLOCKED}
    newer = mergeability(True, base="main", at=4)
    assert in_every_order(pull_request(base="main", at=3), old, newer) == {IS.PULL_REQUEST_OPEN}


def test_a_pull_request_recorded_before_bases_were_kept_reads_the_newest_answer() -> None:
    """A PR whose base is not known (logged before bases were kept) reads the newest answer
    about its head, whichever base it names, as before."""
    assert in_every_order(
        pull_request(at=1), mergeability(True, at=2), mergeability(False, base="main", at=4)
    ) == {IS.BLOCKED}


def test_events_logged_before_bases_were_kept_read_back_with_their_fingerprints() -> None:
    """Stored observations without `base_ref` read back as base-less, and write back the same
    data: their fingerprints (the `seen` set of every stored ticket) do not change."""
    for observation in (pull_request(), mergeability(False)):
        data = observation_to_data(observation)
        assert "base_ref" not in data
        restored = observation_from_data(data)
        assert restored == observation and restored.base_ref is None
        assert fingerprint(restored) == fingerprint(observation)
    with_base = observation_to_data(mergeability(False, base="main"))
    assert with_base["base_ref"] == "main"
    assert fingerprint(mergeability(False, base="main")) != fingerprint(mergeability(False))


def test_a_snapshot_written_before_bases_were_kept_reads_back() -> None:
    """A stored snapshot whose PR and mergeability facts lack `base_ref` reads back as the same
    rails (answers keyed with no base), still blocked."""
    rails = fold([pull_request(), mergeability(False)]).rails
    ticket = replace(Ticket(TicketKey("acme/app", 12)), rails=rails)
    data = ticket_to_data(ticket)
    for fact in (*data["rails"]["pull_requests"], *data["rails"]["mergeability"]):
        del fact["base_ref"]
    restored = ticket_from_data(ticket.key, ticket.revision, data)
    assert restored == ticket
    assert list(restored.rails.mergeability) == [(34, "h1", None)]
    assert restored.rails.integration is IS.BLOCKED
