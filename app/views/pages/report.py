"""A repository's report page: the figures of `policies.report_figures` as tables, with bar charts
drawn here as inline SVG (no script, no asset)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from markupsafe import Markup

from app.views.pages.document import document
from policies.report_figures import Report

_BAR_HEIGHT, _GAP, _LABEL, _WIDTH = 18, 6, 140, 560
# Series colours with at least 3:1 against white (WCAG non-text contrast); each is also named in text.
_COLOURS = ("#0b4fa8", "#1e7b34", "#b3261e", "#6b4c9a")
_RUNNER_HEADERS = (
    "Runner",
    "Deliveries",
    "Accepted",
    "Sent back",
    "Reopened",
    "Send-back rate",
    "Median min claim → delivery",
    "Median min delivery → acceptance",
)
_REVIEWER_HEADERS = ("Reviewer", "Decisions", "Accepted", "Sent back", "Overrides", "Self-verified")
_SPEND_HEADERS = (
    "Tokens in",
    "Tokens out",
    "Cost (USD)",
    "Accepted tickets",
    "Cost per accepted ticket (USD)",
)
_SPECIFIED_HEADERS = ("Tickets", "Deliveries", "Sent back", "Send-back rate")


def _bars(
    top: int, row: int, label: str, series: Sequence[tuple[str, Sequence[float]]], scale: float
) -> Markup:
    """One label's group: the label, then one bar per series with its value beside it."""
    parts = [
        Markup('<text x="0" y="{}" font-size="13" fill="#1a1a1a">{}</text>').format(
            top + _BAR_HEIGHT - 4, label[:20]
        )
    ]
    for index, (_, values) in enumerate(series):
        y, value = top + index * _BAR_HEIGHT, values[row]
        width = max(1.0, value * scale)
        parts.append(
            Markup(
                '<rect x="{}" y="{}" width="{:.1f}" height="{}" fill="{}"></rect>'
                '<text x="{:.1f}" y="{}" font-size="12" fill="#1a1a1a">{}</text>'
            ).format(
                _LABEL,
                y + 2,
                width,
                _BAR_HEIGHT - 4,
                _COLOURS[index % len(_COLOURS)],
                _LABEL + width + 4,
                y + _BAR_HEIGHT - 4,
                _number(value),
            )
        )
    return Markup("").join(parts)


def _legend(names: Sequence[str], legend_y: int) -> Markup:
    return Markup("").join(
        Markup(
            '<rect x="{}" y="{}" width="12" height="12" fill="{}"></rect>'
            '<text x="{}" y="{}" font-size="12" fill="#1a1a1a">{}</text>'
        ).format(x, legend_y - 10, _COLOURS[index % len(_COLOURS)], x + 16, legend_y, name)
        for index, name in enumerate(names)
        for x in [_LABEL + index * 110]
    )


def bar_chart(title: str, labels: Sequence[str], series: Sequence[tuple[str, Sequence[float]]]) -> Markup:
    """Grouped horizontal bars, one group per label, one bar per series, the value written beside it."""
    largest = max((v for _, values in series for v in values), default=0.0) or 1.0  # all zero: any scale
    group = len(series) * _BAR_HEIGHT + _GAP
    height = max(1, len(labels)) * group + 30
    scale = (_WIDTH - _LABEL - 50) / largest
    parts = [Markup("<title>{}</title>").format(title)]
    parts += [_bars(row * group, row, label, series, scale) for row, label in enumerate(labels)]
    parts.append(_legend([name for name, _ in series], len(labels) * group + 18))
    return Markup(
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" width="{}" role="img" '
        'aria-label="{}">{}</svg>'
    ).format(_WIDTH, height, _WIDTH, title, Markup("").join(parts))


def _number(value: float | None) -> str:
    if value is None:
        return "–"
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def table(caption: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> Markup:
    """A table whose first column heads each row; numbers written short, a missing one as a dash."""
    head = Markup("").join(Markup('<th scope="col">{}</th>').format(h) for h in headers)
    body = Markup("").join(
        Markup("<tr>{}</tr>").format(
            Markup('<th scope="row">{}</th>').format(row[0])
            + Markup("").join(
                Markup("<td>{}</td>").format(_number(v) if isinstance(v, float | int) or v is None else v)
                for v in row[1:]
            )
        )
        for row in rows
    )
    return Markup(
        '<div class="table-wrap"><table><caption>{}</caption><thead><tr>{}</tr></thead>'
        "<tbody>{}</tbody></table></div>"
    ).format(caption, head, body)


def _runners(runners: Sequence[dict[str, Any]]) -> Markup:
    rows = [
        (
            r["runner"],
            r["deliveries"],
            r["accepted"],
            r["sent_back"],
            r["reopened"],
            f"{r['send_back_rate'] * 100:.0f} %" if r["send_back_rate"] is not None else "–",
            r["median_minutes_claim_to_delivery"],
            r["median_minutes_delivery_to_acceptance"],
        )
        for r in runners
    ]
    chart = bar_chart(
        "Deliveries, acceptances and send-backs per runner",
        [r["runner"] for r in runners],
        [
            ("deliveries", [r["deliveries"] for r in runners]),
            ("accepted", [r["accepted"] for r in runners]),
            ("sent back", [r["sent_back"] for r in runners]),
        ],
    )
    return chart + table("Per runner", _RUNNER_HEADERS, rows)


def _rate(value: float | None) -> str:
    return f"{value * 100:.0f} %" if value is not None else "–"


def _spend_cells(item: dict[str, Any]) -> tuple[object, ...]:
    per_ticket = item["cost_per_accepted_ticket"]
    return (
        item["input_tokens"],
        item["output_tokens"],
        item["cost_usd"],
        item["accepted_tickets"],
        per_ticket if per_ticket is not None else "–",
    )


def _spend(runners: Sequence[dict[str, Any]], models: Sequence[dict[str, Any]]) -> Markup:
    """Cost per runner and per model, as the runners reported it."""
    runner_chart = bar_chart(
        "Reported cost in US dollars per runner",
        [r["runner"] for r in runners],
        [("cost (USD)", [float(r["cost_usd"]) for r in runners])],
    )
    names = [m["model"] or "(none reported)" for m in models]
    model_chart = bar_chart(
        "Reported cost in US dollars per model",
        names,
        [("cost (USD)", [float(m["cost_usd"]) for m in models])],
    )
    runner_rows = [(r["runner"], *_spend_cells(r)) for r in runners]
    model_rows = [(name, m["deliveries"], *_spend_cells(m)) for name, m in zip(names, models, strict=True)]
    return (
        Markup("<p>Tokens and cost are what each runner reported with its delivery, not a bill.</p>")
        + runner_chart
        + table("Spend per runner", ("Runner", *_SPEND_HEADERS), runner_rows)
        + model_chart
        + table("Spend per model", ("Model", "Deliveries", *_SPEND_HEADERS), model_rows)
    )


def _specified(kind: str, names: Sequence[str], items: Sequence[dict[str, Any]]) -> Markup:
    """Tickets and send-back rate per requester or per label."""
    chart = bar_chart(
        f"Deliveries and send-backs per {kind}",
        names,
        [("deliveries", [i["deliveries"] for i in items]), ("sent back", [i["sent_back"] for i in items])],
    )
    rows = [
        (name, i["tickets"], i["deliveries"], i["sent_back"], _rate(i["send_back_rate"]))
        for name, i in zip(names, items, strict=True)
    ]
    return chart + table(f"Per {kind}", (kind.capitalize(), *_SPECIFIED_HEADERS), rows)


def _reviewers(reviewers: Sequence[dict[str, Any]]) -> Markup:
    rows = [
        (r["reviewer"], r["decisions"], r["accepted"], r["sent_back"], r["overrides"], r["self_verified"])
        for r in reviewers
    ]
    chart = bar_chart(
        "Decisions per reviewer",
        [r["reviewer"] for r in reviewers],
        [("decisions", [r["decisions"] for r in reviewers])],
    )
    return chart + table("Per reviewer", _REVIEWER_HEADERS, rows)


def report_page(full_name: str, report: Report, since: datetime | None, **who: str | None) -> Markup:
    """The report of `full_name` from `since` (None: the whole record), with its period form."""
    period = Markup("since {}").format(since.date().isoformat()) if since else Markup("the whole record")
    form = Markup(
        '<form class="filters" method="get" action="/tickets/{}/report"><label for="since">Since (YYYY-MM-DD)'
        '<input id="since" name="since" value="{}" inputmode="numeric"></label>'
        '<button type="submit">Show</button></form>'
    ).format(full_name, since.date().isoformat() if since else "")
    figures = report.to_json()
    requesters, labels = figures["requesters"], figures["labels"]
    body = Markup(
        "<h1>{} report</h1><p>"
        '<a href="/tickets/{}">Board</a> · {}</p>{}<h2>Runners</h2>{}<h2>Reviewers</h2>{}'
        "<h2>Spend</h2>{}<h2>Requesters</h2>{}<h2>Labels</h2>{}"
    ).format(
        full_name,
        full_name,
        period,
        form,
        _runners(figures["runners"]),
        _reviewers(figures["reviewers"]),
        _spend(figures["runners"], figures["models"]),
        _specified("requester", [r["requester"] for r in requesters], requesters),
        _specified("label", [b["label"] or "(no label recorded)" for b in labels], labels),
    )
    return document(f"{full_name} report", body, **who)
