"""The release owner's report from the event log: per runner and per reviewer, for any period."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from policies.events import EventType
from policies.report_figures import LoggedEvent, report

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
CODY, RITA, MAX = ("cody", 11), ("rita", 22), ("max", 33)


class Log:
    """Builds one ticket's events, a revision each, `minutes` after T0."""

    def __init__(self, ticket: str = "acme/web#12") -> None:
        self.ticket = ticket
        self.events: list[LoggedEvent] = []

    def add(self, kind: EventType, who: tuple[str, int], minutes: float, **data: Any) -> Log:
        """Append an event by `who` at T0 + `minutes`."""
        at = T0 + timedelta(minutes=minutes)
        self.events.append(LoggedEvent(self.ticket, len(self.events) + 1, kind, who[0], who[1], at, data))
        return self


def round_trip(ticket: str = "acme/web#12") -> Log:
    """Claimed at 0, delivered at 30, sent back at 40, delivered at 100, accepted at 160."""
    return (
        Log(ticket)
        .add(EventType.CLAIMED, CODY, 0, attempt=1)
        .add(EventType.DELIVERED, CODY, 30, attempt=1)
        .add(EventType.SENT_BACK, RITA, 40, attempt=2, runner="cody", runner_id=11)
        .add(EventType.DELIVERED, CODY, 100, attempt=2)
        .add(EventType.ACCEPTED, RITA, 160, attempt=2, review="independent")
    )


def test_a_send_back_round_trip() -> None:
    """Two deliveries, one sent back, one accepted; medians of 30 and 60 minutes claim to delivery."""
    figures = report(round_trip().events).to_json()
    assert figures["runners"] == [
        {
            "runner": "cody", "runner_id": 11, "deliveries": 2, "accepted": 1, "sent_back": 1,
            "reopened": 0, "send_back_rate": 0.5, "median_minutes_claim_to_delivery": 45.0,
            "median_minutes_delivery_to_acceptance": 60.0, "input_tokens": 0, "output_tokens": 0,
            "cost_usd": "0", "accepted_tickets": 1, "cost_per_accepted_ticket": "0",
        }
    ]  # fmt: skip
    assert figures["reviewers"] == [
        {
            "reviewer": "rita", "reviewer_id": 22, "decisions": 2, "accepted": 1, "sent_back": 1,
            "overrides": 0, "self_verified": 0,
        }
    ]  # fmt: skip


def test_a_period_counts_what_happened_in_it_and_knows_the_delivery_before_it() -> None:
    """Since minute 90: one delivery and the acceptance (of a delivery made at 100), not the send-back."""
    figures = report(round_trip().events, since=T0 + timedelta(minutes=90)).to_json()
    [runner] = figures["runners"]
    assert (runner["deliveries"], runner["sent_back"], runner["accepted"]) == (1, 0, 1)
    assert runner["median_minutes_claim_to_delivery"] == 60.0  # the attempt opened at 40, before
    until = report(round_trip().events, until=T0 + timedelta(minutes=50)).to_json()
    assert (until["runners"][0]["deliveries"], until["runners"][0]["accepted"]) == (1, 0)


def test_no_deliveries_means_no_rate() -> None:
    """A runner whose ticket was reopened without a delivery has a rate of None, not zero."""
    log = Log().add(EventType.CLAIMED, CODY, 0, attempt=1)
    log.add(EventType.REOPENED, MAX, 10, previous_claimant="cody", previous_claimant_id=11)
    [runner] = report(log.events).to_json()["runners"]
    assert (runner["reopened"], runner["deliveries"], runner["send_back_rate"]) == (1, 0, None)
    assert runner["median_minutes_claim_to_delivery"] is None


def test_overrides_and_self_verification_are_the_deciders_own() -> None:
    """An override is max's decision, a self-verification cody's; both accept cody's delivery."""
    first = (
        Log("acme/web#1")
        .add(EventType.CLAIMED, CODY, 0, attempt=1)
        .add(EventType.DELIVERED, CODY, 5, attempt=1)
    )
    first.add(EventType.ACCEPTED, MAX, 10, review="override")
    second = (
        Log("acme/web#2")
        .add(EventType.CLAIMED, CODY, 0, attempt=1)
        .add(EventType.DELIVERED, CODY, 5, attempt=1)
    )
    second.add(EventType.ACCEPTED, CODY, 20, review="self_verified")
    figures = report(first.events + second.events).to_json()
    assert figures["runners"][0]["accepted"] == 2
    by_name = {r["reviewer"]: r for r in figures["reviewers"]}
    assert (by_name["max"]["overrides"], by_name["cody"]["self_verified"]) == (1, 1)


def test_accounts_are_told_apart_by_id_and_shown_by_current_login() -> None:
    """A renamed runner is one account; `logins` names it as it is called now."""
    log = round_trip()
    renamed = Log("acme/web#13").add(EventType.CLAIMED, ("cody-renamed", 11), 200, attempt=1)
    renamed.add(EventType.DELIVERED, ("cody-renamed", 11), 210, attempt=1)
    figures = report(log.events + renamed.events).to_json()
    [runner] = figures["runners"]
    assert (runner["runner"], runner["deliveries"]) == ("cody-renamed", 3)
    named = report(log.events, logins={11: "cody-now"}).to_json()
    assert named["runners"][0]["runner"] == "cody-now"


@given(st.lists(st.integers(0, 3), max_size=12), st.integers(0, 400))
def test_any_split_of_time_adds_up(rounds: list[int], cut: int) -> None:
    """Counts before a moment plus counts from it equal the counts of all time."""
    events: list[LoggedEvent] = []
    for index, sends in enumerate(rounds):
        log = Log(f"acme/web#{index}").add(EventType.CLAIMED, CODY, index, attempt=1)
        for attempt in range(1, sends + 2):
            log.add(EventType.DELIVERED, CODY, index + attempt * 10, attempt=attempt)
            if attempt <= sends:
                log.add(
                    EventType.SENT_BACK,
                    RITA,
                    index + attempt * 10 + 5,
                    attempt=attempt + 1,
                    runner="cody",
                    runner_id=11,
                )
        log.add(EventType.ACCEPTED, RITA, index + 100, review="independent")
        events += log.events
    moment = T0 + timedelta(minutes=cut)
    whole, before, after = report(events), report(events, until=moment), report(events, since=moment)
    for field in ("deliveries", "sent_back", "accepted"):
        total = sum(getattr(r, field) for r in whole.runners)
        assert total == sum(getattr(r, field) for r in before.runners) + sum(
            getattr(r, field) for r in after.runners
        )
    assert sum(r.deliveries for r in whole.runners) == sum(rounds) + len(rounds)


def evidence(model: str | None, tokens_in: int, tokens_out: int, cost: str) -> dict[str, Any]:
    """A delivery's recorded evidence, as `policies.evidence.evidence_to_data` stores it."""
    return {"model": model, "input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": cost}


def test_cost_and_tokens_sum_per_runner_and_per_model_with_cost_per_accepted_ticket() -> None:
    """Every delivery's reported cost counts, and is divided by the tickets accepted on it."""
    log = (
        Log()
        .add(EventType.CLAIMED, CODY, 0, attempt=1)
        .add(EventType.DELIVERED, CODY, 30, attempt=1, evidence=evidence("m1", 1200, 300, "0.42"))
        .add(EventType.SENT_BACK, RITA, 40, attempt=2, runner="cody", runner_id=11)
        .add(EventType.DELIVERED, CODY, 100, attempt=2, evidence=evidence("m2", 100, 50, "0.08"))
        .add(EventType.ACCEPTED, RITA, 160, attempt=2, review="independent")
    )
    other = Log("acme/web#13").add(EventType.CLAIMED, MAX, 0, attempt=1)
    other.add(EventType.DELIVERED, MAX, 10, attempt=1, evidence=evidence("m1", 10, 5, "1"))
    figures = report(log.events + other.events).to_json()
    by_runner = {r["runner"]: r for r in figures["runners"]}
    assert (by_runner["cody"]["input_tokens"], by_runner["cody"]["output_tokens"]) == (1300, 350)
    assert by_runner["cody"]["cost_usd"] == "0.5"
    assert by_runner["cody"]["cost_per_accepted_ticket"] == "0.5"
    assert (by_runner["max"]["cost_usd"], by_runner["max"]["cost_per_accepted_ticket"]) == ("1", None)
    by_model = {m["model"]: m for m in figures["models"]}
    assert (by_model["m1"]["deliveries"], by_model["m1"]["cost_usd"]) == (2, "1.42")
    assert by_model["m1"]["cost_per_accepted_ticket"] is None  # m1's deliveries were not the accepted ones
    assert (by_model["m2"]["accepted_tickets"], by_model["m2"]["cost_per_accepted_ticket"]) == (1, "0.08")


def test_a_delivery_without_evidence_counts_under_no_model_and_costs_nothing() -> None:
    """A delivery that reported nothing is a delivery of model `null`, at zero cost."""
    log = Log().add(EventType.CLAIMED, CODY, 0, attempt=1).add(EventType.DELIVERED, CODY, 5, attempt=1)
    [model] = report(log.events).to_json()["models"]
    assert model == {
        "model": None, "deliveries": 1, "input_tokens": 0, "output_tokens": 0, "cost_usd": "0",
        "accepted_tickets": 0, "cost_per_accepted_ticket": None,
    }  # fmt: skip


def test_requesters_and_labels_count_tickets_and_send_backs() -> None:
    """The publisher's and each recorded label's tickets, with the send-back rate of their deliveries."""
    spec = round_trip().events
    spec.insert(
        0, LoggedEvent("acme/web#12", 0, EventType.PUBLISHED, "max", 33, T0, {"labels": ["api", "bug"]})
    )
    old = Log("acme/web#13").add(EventType.PUBLISHED, MAX, 0)  # published before labels were recorded
    old.add(EventType.CLAIMED, CODY, 1, attempt=1).add(EventType.DELIVERED, CODY, 2, attempt=1)
    figures = report(spec + old.events).to_json()
    assert figures["requesters"] == [
        {"requester": "max", "requester_id": 33, "tickets": 2, "deliveries": 3, "sent_back": 1,
         "send_back_rate": 0.3333}
    ]  # fmt: skip
    by_label = {item["label"]: item for item in figures["labels"]}
    assert set(by_label) == {"api", "bug", None}
    assert (by_label["api"]["tickets"], by_label["api"]["send_back_rate"]) == (1, 0.5)
    assert (by_label[None]["tickets"], by_label[None]["send_back_rate"]) == (1, 0.0)


def test_a_requester_period_counts_only_what_happened_in_it() -> None:
    """A ticket published before the period counts for its requester only by what happened since."""
    log = Log().add(EventType.PUBLISHED, MAX, 0, labels=["api"]).add(EventType.CLAIMED, CODY, 10, attempt=1)
    log.add(EventType.DELIVERED, CODY, 100, attempt=1)
    [requester] = report(log.events, since=T0 + timedelta(minutes=50)).to_json()["requesters"]
    assert (requester["tickets"], requester["deliveries"]) == (1, 1)
    assert report(log.events, until=T0 + timedelta(minutes=5)).to_json()["requesters"][0]["deliveries"] == 0


_COSTS = st.decimals(min_value=0, max_value=1000, places=6, allow_nan=False, allow_infinity=False)


@given(
    st.lists(
        st.tuples(st.sampled_from([CODY, RITA, MAX]), st.sampled_from(["m1", "m2", None]), _COSTS),
        max_size=20,
    )
)
def test_per_runner_costs_sum_to_the_per_model_costs(
    deliveries: list[tuple[tuple[str, int], str | None, Any]],
) -> None:
    """Every delivery counts under one runner and one model, so both columns add up to the same dollars."""
    events: list[LoggedEvent] = []
    for index, (who, model, cost) in enumerate(deliveries):
        log = Log(f"acme/web#{index}").add(EventType.CLAIMED, who, 0, attempt=1)
        log.add(EventType.DELIVERED, who, 1, attempt=1, evidence=evidence(model, 1, 1, str(cost)))
        events += log.events
    figures = report(events).to_json()
    runners = sum((Decimal(r["cost_usd"]) for r in figures["runners"]), Decimal(0))
    models = sum((Decimal(m["cost_usd"]) for m in figures["models"]), Decimal(0))
    assert runners == models == sum((Decimal(str(c)) for _, _, c in deliveries), Decimal(0))


def test_a_renewed_acceptance_is_not_a_second_acceptance_of_the_delivery() -> None:
    """cody's delivery is accepted 60 minutes after it; its acceptance expires and rita renews it
    (SPEC *Acceptance that stays true*: `accepted` with `renews: REVISION`) 30 days later. The
    delivery was accepted once, 60 minutes after it was made: the runner's `accepted` is 1 and the
    median delivery-to-acceptance is 60, not a month; the renewal is no new independent review."""
    log = round_trip()
    log.add(EventType.ACCEPTED, RITA, 160 + 30 * 24 * 60, attempt=2, review="independent", renews=5)
    figures = report(log.events).to_json()
    [runner] = figures["runners"]
    assert (runner["accepted"], runner["median_minutes_delivery_to_acceptance"]) == (1, 60.0), runner
