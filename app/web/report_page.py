"""`/tickets/{owner}/{repo}/report`: the report (`app.store.listing.Listing.report`, computed
from the event log) as tables, with bar charts drawn here as inline SVG (no script, no asset)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

from aiohttp import web
from markupsafe import Markup

from app.store.listing import Listing
from app.web.pages import document, html_response

_BAR_HEIGHT, _GAP, _LABEL, _WIDTH = 18, 6, 140, 560
# Series colours with at least 3:1 against white (WCAG non-text contrast); each is also named in text.
_COLOURS = ("#0b4fa8", "#1e7b34", "#b3261e", "#6b4c9a")


def bar_chart(title: str, labels: Sequence[str], series: Sequence[tuple[str, Sequence[float]]]) -> Markup:
    """Grouped horizontal bars, one group per label, one bar per series, the value written beside it."""
    largest = max([v for _, values in series for v in values] + [1.0])
    group = len(series) * _BAR_HEIGHT + _GAP
    height = max(1, len(labels)) * group + 30
    scale = (_WIDTH - _LABEL - 50) / largest
    parts = [Markup("<title>{}</title>").format(title)]
    for row, label in enumerate(labels):
        top = row * group
        parts.append(
            Markup('<text x="0" y="{}" font-size="13" fill="#1a1a1a">{}</text>').format(
                top + _BAR_HEIGHT - 4, label[:20]
            )
        )
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
    legend_y = len(labels) * group + 18
    for index, (name, _) in enumerate(series):
        x = _LABEL + index * 110
        parts.append(
            Markup(
                '<rect x="{}" y="{}" width="12" height="12" fill="{}"></rect>'
                '<text x="{}" y="{}" font-size="12" fill="#1a1a1a">{}</text>'
            ).format(x, legend_y - 10, _COLOURS[index % len(_COLOURS)], x + 16, legend_y, name)
        )
    return Markup(
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" width="{}" role="img" '
        'aria-label="{}">{}</svg>'
    ).format(_WIDTH, height, _WIDTH, title, Markup("").join(parts))


def _number(value: float | None) -> str:
    if value is None:
        return "–"
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _table(caption: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> Markup:
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


def parse_since(text: str) -> datetime | None:
    """`since=YYYY-MM-DD` as midnight UTC; anything else is no lower bound."""
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC) if text else None
    except ValueError:
        return None


async def report_page(
    request: web.Request, listing: Listing, full_name: str, who: dict[str, str]
) -> web.Response:
    """The repository's report for `?since=` (default: the whole record)."""
    since = parse_since(request.query.get("since", ""))
    report = await asyncio.to_thread(listing.report, full_name, since)
    runners = [r.to_json() for r in report.runners]
    reviewers = [r.to_json() for r in report.reviewers]
    runner_rows = [
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
    reviewer_rows = [
        (r["reviewer"], r["decisions"], r["accepted"], r["sent_back"], r["overrides"], r["self_verified"])
        for r in reviewers
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
    decisions = bar_chart(
        "Decisions per reviewer",
        [r["reviewer"] for r in reviewers],
        [("decisions", [r["decisions"] for r in reviewers])],
    )
    period = Markup("since {}").format(since.date().isoformat()) if since else Markup("the whole record")
    form = Markup(
        '<form class="filters" method="get" action="/tickets/{}/report"><label for="since">Since (YYYY-MM-DD)'
        '<input id="since" name="since" value="{}" inputmode="numeric"></label>'
        '<button type="submit">Show</button></form>'
    ).format(full_name, since.date().isoformat() if since else "")
    body = Markup(
        "<h1>{} report</h1><p>"
        '<a href="/tickets/{}">Board</a> · {}</p>{}<h2>Runners</h2>{}{}<h2>Reviewers</h2>{}{}'
    ).format(
        full_name,
        full_name,
        period,
        form,
        chart,
        _table(
            "Per runner",
            (
                "Runner",
                "Deliveries",
                "Accepted",
                "Sent back",
                "Reopened",
                "Send-back rate",
                "Median min claim → delivery",
                "Median min delivery → acceptance",
            ),
            runner_rows,
        ),
        decisions,
        _table(
            "Per reviewer",
            ("Reviewer", "Decisions", "Accepted", "Sent back", "Overrides", "Self-verified"),
            reviewer_rows,
        ),
    )
    return html_response(document(f"{full_name} report", body, **who))
