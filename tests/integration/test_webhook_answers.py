"""The webhook door's answer when the writer fails: a body that is not JSON is still a 400."""

from __future__ import annotations

import time

import pytest

from app.runtime.metrics import Metrics
from app.store.intake import Received, Stored, StoreTimeoutError
from app.store.intake_process import IntakeWriteError
from app.web.bodies import BodyBudget
from app.web.webhook_door import WebhookReceiver
from support.servers import app_settings


class FailingWriter:
    """A writer that read nothing: it timed out, was flooded, or went away."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def store_body(self, received: Received, body: bytes) -> Stored:
        raise self.error


def door(error: Exception) -> WebhookReceiver:
    settings = app_settings("sqlite:///unused.db")
    writer = FailingWriter(error)
    return WebhookReceiver(settings, writer, Metrics(), frozenset({"ping"}), time.time, None, BodyBudget())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "error",
    [
        StoreTimeoutError(4.0, "d", withdrawn=False),
        IntakeWriteError("flooded"),
        RuntimeError("shutting down"),
    ],
    ids=["timeout", "flooded", "closing"],
)
@pytest.mark.parametrize(
    ("body", "status"),
    [(b"{not json", 400), (b"[1, 2]", 400), (b'{"zen": "z", "hook": {}, "hook_id": 1}', 503)],
    ids=["not-json", "not-an-object", "json"],
)
async def test_a_writer_that_read_nothing_leaves_bad_input_a_400_and_the_rest_a_503(
    error: Exception, body: bytes, status: int
) -> None:
    """GitHub is asked to send a delivery again (503) only when it could be stored."""
    received = Received("d", "ping", True, time.time())
    response = await door(error)._store(received, body, time.perf_counter())
    assert response.status == status
