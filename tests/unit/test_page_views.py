"""The web pages' views as pure functions: data in, HTML out, no server and no database."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from markupsafe import Markup

from app.views.pages.board import Board, board_page, card
from app.views.pages.document import document
from app.views.pages.report import bar_chart, report_page
from app.views.pages.ticket import ticket_page
from handlers.ports import RecordedEvent
from policies.events import Event, EventType
from policies.model import Evidence, Ticket, TicketKey
from policies.rails import Rails
from policies.report_figures import (
    LabelFigures,
    ModelFigures,
    Report,
    RequesterFigures,
    ReviewerFigures,
    RunnerFigures,
    Specified,
)
from policies.states import IntegrationState, WorkState

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Item:
    """A board item as the store lists it: the ticket and when its record began."""

    ticket: Ticket
    created_at: datetime


def a_ticket(work: WorkState = WorkState.DELIVERED, claimant: str | None = "cody") -> Ticket:
    """acme/web#12 in `work`, held by `claimant`, a branch reported."""
    return Ticket(
        TicketKey("acme/web", 12), 4, work, claimant=claimant, attempt=1,
        rails=Rails(integration=IntegrationState.BRANCH_REPORTED),
    )  # fmt: skip


def bars(svg: str) -> list[tuple[float, str]]:
    """Each data bar of an SVG chart (the legend's 12-wide squares left out): width and colour."""
    found = re.findall(r'<rect x="\d+" y="\d+" width="([\d.]+)" height="(\d+)" fill="(#[0-9a-f]{6})">', svg)
    return [(float(width), fill) for width, height, fill in found if height != "12"]


def test_a_card_escapes_hostile_text_in_the_holder_and_the_repository_name() -> None:
    """A login and a repository name carrying markup reach the card as text, never as tags."""
    html = str(
        card(HOSTILE, Item(a_ticket(claimant=HOSTILE), T0), ["awaiting_review"], T0 + timedelta(hours=3))
    )
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    assert "awaiting review" in html and "age 3 h" in html and "repository: branch reported" in html


def test_the_ticket_page_shows_a_hostile_summary_branch_and_artifact_as_text() -> None:
    """What an agent wrote in its delivery is escaped wherever the ticket page shows it."""
    delivered = Event(
        EventType.DELIVERED, "cody", "runner", T0, "op-1", "1",
        {"attempt": 1, "summary": HOSTILE, "branch": HOSTILE, "artifacts": [HOSTILE]},
    )  # fmt: skip
    html = str(ticket_page("acme/web", a_ticket(), [RecordedEvent(4, delivered)], login="olivia", csrf="t"))
    assert "<script" not in html and "<img" not in html
    assert html.count("&lt;script&gt;") == 3
    assert "Attempt 1 (current)" in html


def test_the_runners_chart_draws_one_bar_per_figure_scaled_to_the_largest() -> None:
    """cody's 2 deliveries take the full 370 px, 1 accepted and 1 sent back half; rita's 0 stays 1 px wide."""
    report = Report(
        [RunnerFigures("cody", 1, deliveries=2, accepted=1, sent_back=1), RunnerFigures("rita", 2)],
        [ReviewerFigures("olivia", 3, accepted=1, sent_back=1)],
    )
    html = str(report_page("acme/web", report, None))
    runners_svg = re.findall(r"<svg.*?</svg>", html)[0]
    assert bars(runners_svg) == [
        (370.0, "#0b4fa8"), (185.0, "#1e7b34"), (185.0, "#b3261e"),
        (1.0, "#0b4fa8"), (1.0, "#1e7b34"), (1.0, "#b3261e"),
    ]  # fmt: skip
    assert "the whole record" in html and "Decisions per reviewer" in html


def test_the_report_page_charts_reported_cost_per_runner_and_model_and_rates_per_requester_and_label() -> (
    None
):
    """Spend per runner and model (the largest cost the full bar), then requesters and labels with rates."""
    cody = RunnerFigures("cody", 1, deliveries=2, accepted=1)
    cody.spend.add(Evidence("m1", 1200, 300, "0.42"))
    cody.spend.accepted_tickets.add("acme/web#12")
    m1, unnamed = ModelFigures("m1", deliveries=1), ModelFigures(None, deliveries=1)
    m1.spend.add(Evidence("m1", 1200, 300, "0.42"))
    asker = RequesterFigures("rachel", 4, Specified({"acme/web#12"}, deliveries=2, sent_back=1))
    label = LabelFigures("<b>bug</b>", Specified({"acme/web#12"}, deliveries=2, sent_back=1))
    html = str(
        report_page("acme/web", Report([cody], [], [m1, unnamed], [asker], [label, LabelFigures(None)]), None)
    )
    svgs = re.findall(r"<svg.*?</svg>", html)
    cost_per_runner, cost_per_model = (svg for svg in svgs if "Reported cost" in svg)
    assert bars(cost_per_runner) == [(370.0, "#0b4fa8")]
    assert bars(cost_per_model) == [(370.0, "#0b4fa8"), (1.0, "#0b4fa8")]
    assert "(none reported)" in cost_per_model and "not a bill" in html
    assert "<td>0.42</td>" in html and "<td>1200</td>" in html
    assert '<th scope="row">rachel</th><td>1</td><td>2</td><td>1</td><td>50 %</td>' in html
    assert "<b>bug</b>" not in html and "&lt;b&gt;bug&lt;/b&gt;" in html and "(no label recorded)" in html


def test_a_chart_label_with_markup_stays_text_inside_the_svg() -> None:
    """A runner's login and the chart's title are escaped inside the SVG."""
    svg = str(bar_chart("Per <runner>", ["<b>x</b>"], [("deliveries", [3.0])]))
    assert "<b>" not in svg and "<runner>" not in svg and bars(svg) == [(370.0, "#0b4fa8")]


def test_an_empty_board_shows_every_column_with_none_and_no_page_links() -> None:
    """No ticket: five columns each saying none, the count 0, and no link to other pages."""
    html = str(board_page(Board("acme/web", [], T0, total=0)))
    columns = re.findall(r'<section class="column" aria-labelledby="col-([a-z]+)">', html)
    assert columns == [s.value for s in WorkState]
    assert html.count('<li class="muted">none</li>') == len(WorkState)
    assert '<li class="card">' not in html and 'aria-label="pages"' not in html
    assert "0 tickets" in html


def test_the_board_page_links_keep_the_filters() -> None:
    """A later, filtered page links to the newest page and the next older one, both filtered."""
    board = Board("acme/web", [], T0, code="awaiting_review", work_asked="delivered", newer=True, older="abc")
    html = str(board_page(board))
    assert 'href="/tickets/acme/web?work=delivered&amp;attention=awaiting_review">Newest' in html
    assert (
        'href="/tickets/acme/web?work=delivered&amp;attention=awaiting_review&amp;after=abc" rel="next"'
        in html
    )


def test_the_document_shows_sign_out_only_to_a_signed_in_person_with_values_escaped() -> None:
    """Signed in: the login and the CSRF token are escaped into the header's form; signed out: no form."""
    signed_in = str(document("Board", Markup("<p>x</p>"), login=HOSTILE, csrf='"><x'))
    assert (
        'action="/logout"' in signed_in
        and "<script" not in signed_in
        and 'value="&#34;&gt;&lt;x"' in signed_in
    )
    assert 'action="/logout"' not in str(document("Board", Markup("<p>x</p>")))
