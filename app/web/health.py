"""`GET /healthz` (the database, the loops, the queue) and `GET /metrics` (Prometheus)."""

from __future__ import annotations

import asyncio
import hmac
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.store.database import Database
from app.store.effects import effect_counts
from app.version import railyard_version
from app.web.app_keys import DATABASE, DOMAIN_GAUGES, METRICS, SETTINGS, SUPERVISOR, WORKER, WRITER
from app.web.responses import answer


async def health(request: web.Request) -> web.Response:
    """Database reachability, each background loop's last good iteration, queue lag; 503 when degraded.

    Degraded: the database does not answer, or a loop (worker, outbox, watchdog,
    housekeeping) has ended or not completed an iteration for longer than its limit.
    """
    app = request.app
    report: dict[str, Any] = {
        "mode": "running" if app[SETTINGS].configured else "setup",
        "version": railyard_version(),
    }
    try:
        await asyncio.to_thread(_ping, app[DATABASE])
        report["database"] = "ok"
    except Exception as error:
        report["database"] = f"unreachable: {type(error).__name__}"
    healthy = report["database"] == "ok"
    if WRITER in app:
        report["intake_writer"] = app[WRITER].describe()
    if SUPERVISOR in app:
        loops_ok, report["loops"] = app[SUPERVISOR].report()
        healthy = healthy and loops_ok
    if WORKER in app and report["database"] == "ok":
        depth, lag = await app[WORKER].refresh_gauges()
        report["queue"] = {"pending": depth, "lag_seconds": round(lag, 3)}
    report["status"] = "ok" if healthy else "degraded"
    return web.json_response(report, status=200 if healthy else 503, dumps=lambda o: orjson.dumps(o).decode())


def _ping(database: Database) -> None:
    database.ping()


async def serve_metrics(request: web.Request) -> web.Response:
    """Prometheus text format, behind `METRICS_TOKEN` when one is set."""
    token = request.app[SETTINGS].metrics_token
    if token is not None:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip().encode()
        if not hmac.compare_digest(given, token.get_secret_value().encode()):
            return answer(401, "metrics need Authorization: Bearer METRICS_TOKEN")
    if WORKER in request.app:
        await request.app[WORKER].refresh_gauges()
    counts = await asyncio.to_thread(effect_counts, request.app[DATABASE])
    request.app[METRICS].outbox_pending.set(counts.get("pending", 0))
    request.app[METRICS].outbox_failed_total.set(counts.get("failed", 0))
    if DOMAIN_GAUGES in request.app:
        await request.app[DOMAIN_GAUGES].refresh()
    body = generate_latest(request.app[METRICS].registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
