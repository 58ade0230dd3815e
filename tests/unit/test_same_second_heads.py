"""Two pushes in one second (GitHub's `updated_at` has whole seconds): the record cannot tell
which head came last, so it keeps both, and the check follows the ticket on each of them."""

from __future__ import annotations

from itertools import permutations

from app.contracts.effect_types import EffectKind, surfaces_for
from app.store.codec import rails_from_data, rails_to_data
from policies.model import Ticket, TicketKey
from policies.rails import SAME_SECOND_HEADS
from tests.unit.rail_builders import fold, pull_request

OLD, FIX, AMENDED = "1" * 40, "f" * 40, "a" * 40


def heads_after(*shas: str, at: int = 1) -> tuple[str, ...]:
    return fold([pull_request(head=sha, at=at) for sha in shas]).rails.pull_requests[34].heads


def test_both_heads_of_one_second_are_kept_whatever_the_order() -> None:
    for order in permutations((FIX, AMENDED)):
        rails = fold([pull_request(head=OLD, at=0), *(pull_request(head=sha, at=1) for sha in order)]).rails
        pr = rails.pull_requests[34]
        assert pr.heads == (AMENDED, FIX)
        assert pr.head_sha == FIX  # the rank's pick: the larger sha, not necessarily the newer


def test_a_later_second_has_its_own_head_alone() -> None:
    later = [pull_request(head=FIX, at=1), pull_request(head=AMENDED, at=1), pull_request(head=OLD, at=2)]
    for order in permutations(later):
        assert fold(order).rails.pull_requests[34].heads == (OLD,)


def test_a_second_keeps_a_bounded_number_of_heads() -> None:
    shas = [f"{n:x}" * 40 for n in range(1, 16)]
    assert heads_after(*shas) == tuple(sorted(shas)[-SAME_SECOND_HEADS:])


def test_the_check_follows_the_ticket_on_every_head_of_the_last_second() -> None:
    rails = fold([pull_request(head=FIX, at=1), pull_request(head=AMENDED, at=1)]).rails
    ticket = Ticket(TicketKey("acme/app", 12), rails=rails)
    checks = [e for e in surfaces_for(7, ticket) if e.kind is EffectKind.CHECK_RUN]
    assert sorted(e.payload["head_sha"] for e in checks) == [AMENDED, FIX]


def test_a_snapshot_keeps_the_heads_and_one_from_before_reads_as_its_head() -> None:
    rails = fold([pull_request(head=FIX, at=1), pull_request(head=AMENDED, at=1)]).rails
    assert rails_from_data(rails_to_data(rails)) == rails
    data = rails_to_data(fold([pull_request(head=FIX, at=1)]).rails)
    for pr in data["pull_requests"]:
        del pr["same_second_heads"]  # stored before they were kept
    assert rails_from_data(data).pull_requests[34].heads == (FIX,)
