"""`POST /webhooks`, the webhook door: verify, store durably, acknowledge (see `app.web.server`
for the statuses)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from app.contracts.traces import TRACING, SpanKind, set_attribute, span, traceparent
from app.contracts.webhook_payloads import UnreadableBody, examine
from app.runtime.metrics import Metrics, event_label
from app.runtime.worker import Worker
from app.settings import Settings
from app.store.delivery_status import PENDING, REJECTED
from app.store.intake import (
    MAX_BODY_BYTES,
    IntakeWriter,
    Received,
    RejectionLog,
    StoreTimeoutError,
    verify_signature,
)
from app.web.bodies import BodyBudget, BodyRefused
from app.web.responses import answer

SETUP_MODE_MESSAGE = "railyard is in setup mode: set APP_ID, PRIVATE_KEY and WEBHOOK_SECRET, then restart it"


class WebhookReceiver:
    """`POST /webhooks`: verify, store durably, acknowledge.

    Everything a delivery needs is looked up once, when the server is built: this runs for
    every webhook, thousands of times a second under load.
    """

    def __init__(
        self,
        settings: Settings,
        writer: IntakeWriter,
        metrics: Metrics,
        routed: frozenset[str],
        clock: Callable[[], float],
        worker: Worker | None,
        bodies: BodyBudget,
    ) -> None:
        self._configured = settings.configured
        self._secrets = [secret.get_secret_value().encode() for secret in settings.webhook_secrets]
        self._writer = writer
        self._metrics = metrics
        self._routed = routed
        self._clock = clock
        self._worker = worker
        self._refusals = RejectionLog()
        self._bodies = bodies

    async def receive(self, request: web.Request) -> web.Response:
        """Answer one delivery (see the module docstring for the statuses)."""
        started = time.perf_counter()
        if not self._configured:
            return answer(503, SETUP_MODE_MESSAGE)
        headers = request.headers
        event = headers.get("X-GitHub-Event", "").strip()
        delivery_id = headers.get("X-GitHub-Delivery", "").strip()
        if (
            not event
            or not delivery_id
            or len(delivery_id) > 200
            or len(event) > 100
            or not _plain(delivery_id + event)
        ):
            return self._reject(event, 400, "missing or malformed X-GitHub-Event / X-GitHub-Delivery headers")
        if headers.get("Content-Encoding", "identity").strip().lower() != "identity":
            return self._reject(event, 415, "Content-Encoding must be identity: GitHub sends plain JSON")
        if (request.content_length or 0) > MAX_BODY_BYTES:
            return self._reject(event, 413, "payload larger than 25 MB")
        try:
            async with self._bodies.body(request, MAX_BODY_BYTES) as body:
                return await self._accept(
                    event, delivery_id, body, started, headers.get("X-Hub-Signature-256")
                )
        except BodyRefused as refused:
            response = self._reject(event, refused.status, refused.message)
            if refused.retry_after is not None:
                response.headers["Retry-After"] = str(refused.retry_after)
            return response

    async def _accept(
        self, event: str, delivery_id: str, body: bytes, started: float, signature: str | None
    ) -> web.Response:
        """Verify the body read whole, store it durably and acknowledge it."""
        if not verify_signature(body, signature, self._secrets):
            return self._reject(event, 401, "missing or wrong X-Hub-Signature-256")
        if not TRACING.on:
            return await self._store(self._received(event, delivery_id), body, started)
        attributes = {
            "railyard.delivery": delivery_id,
            "github.event": event_label(event),
            "http.request.method": "POST",
            "http.route": "/webhooks",
        }
        with span("railyard.intake", attributes, kind=SpanKind.SERVER):
            response = await self._store(self._received(event, delivery_id, traceparent()), body, started)
            set_attribute("http.response.status_code", response.status)
            return response

    def _received(self, event: str, delivery_id: str, parent: str | None = None) -> Received:
        """A verified delivery, as the writer takes it: routed when a handler takes its event."""
        return Received(delivery_id, event, event in self._routed, self._clock(), parent)

    async def _store(self, received: Received, body: bytes, started: float) -> web.Response:
        """Have the writer read the body and store it durably, and acknowledge it (400 when the
        body is not a JSON object; a body without the shape of its event is stored `rejected`,
        answered 202 and never processed)."""
        event, delivery_id = received.event, received.delivery_id
        try:
            stored = await self._writer.store_body(received, body)
        except UnreadableBody as unreadable:
            return self._reject(event, 400, str(unreadable))
        except Exception as error:
            # The writer read nothing (timed out, flooded, gone): a body that is not JSON is
            # still a 400, never a 503 that GitHub would be asked to send again.
            try:
                examine(event, body)
            except UnreadableBody as unreadable:
                return self._reject(event, 400, str(unreadable))
            return self._unavailable(received, error)
        self._metrics.ack_seconds.observe(time.perf_counter() - started)
        if not stored.new:
            self._metrics.count_received(event, "duplicate")
            return web.Response(status=200, body=_ALREADY_STORED, content_type="application/json")
        if stored.status == REJECTED:
            self._metrics.count_received(event, "mismatched")
            self._refusals.refused(stored.reason or "", 202, delivery_id=delivery_id)
            return answer(202, _MISMATCH, reason=stored.reason)
        self._metrics.count_received(event, "stored")
        if stored.status == PENDING and self._worker is not None:
            self._worker.notify()
        return web.Response(status=202, body=_STORED, content_type="application/json")

    def _unavailable(self, delivery: Received, error: Exception) -> web.Response:
        """503: not stored (the database is locked or down); GitHub records the failure."""
        reason = f"could not store a delivery: {type(error).__name__}"
        fields: dict[str, Any] = {"delivery_id": delivery.delivery_id, "error": str(error)[:200]}
        if not isinstance(error, StoreTimeoutError):  # a timeout needs no traceback; the rest do
            fields["exc_info"] = error
        self._refusals.refused(reason, 503, **fields)
        return answer(503, _UNAVAILABLE, delivery=delivery.delivery_id)

    def _reject(self, event: str, status: int, message: str) -> web.Response:
        """Refuse a request, counted under a known event name (or `other`) and logged sparingly."""
        self._metrics.count_received(event, "rejected")
        self._refusals.refused(message, status, github_event=event_label(event))
        return answer(status, message)


def _plain(text: str) -> bool:
    """Printable ASCII, as GitHub's event names and delivery ids are (a header's other bytes
    arrive as escapes that no database or log should be handed)."""
    return text.isascii() and text.isprintable()


_MISMATCH = "rejected: the payload does not have the shape of X-GitHub-Event; stored, never processed"
_UNAVAILABLE = "could not store the delivery (the database is locked or unreachable); GitHub can redeliver it"
_STORED = orjson.dumps({"message": "stored"})
_ALREADY_STORED = orjson.dumps({"message": "already stored"})
