"""Traces through the real server (docs/traces.md): one trace per webhook delivery, from the
intake through the worker, the command, every GitHub call and the effects it caused, read from
the SDK's in-memory exporter; and once over OTLP/HTTP into a receiver written here."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import text

from app.contracts.traces import TRACING
from app.store.database import Database
from app.store.queue_admin import requeue
from github_standin import running_standin
from support.world import FIX, World, standin_state
from tests.fakes import app_settings, running_server

THROUGH_THE_WRITER_PROCESS = pytest.mark.parametrize("world", ["process"], indirect=True)
"""SQLite's default intake: the trace context crosses the writer process with each delivery."""

SECRET_WORDS = "Uploads now resume after a dropped connection"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on for this test, every finished span kept in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    TRACING.use(provider.get_tracer("railyard"))
    try:
        yield exporter
    finally:
        TRACING.use(None)
        provider.shutdown()


def _trace_of(spans: InMemorySpanExporter, delivery_id: str) -> list[ReadableSpan]:
    """Every span of the trace whose intake span stored `delivery_id`."""
    finished = spans.get_finished_spans()
    [intake] = [
        s for s in finished if s.name == "railyard.intake" and _attrs(s)["railyard.delivery"] == delivery_id
    ]
    assert intake.context is not None
    return [s for s in finished if s.context is not None and s.context.trace_id == intake.context.trace_id]


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _last_delivery_id(database: Database) -> str:
    with database.engine.connect() as connection:
        return str(
            connection.execute(text("SELECT delivery_id FROM webhook_deliveries ORDER BY seq DESC")).first()[
                0
            ]
        )  # type: ignore[index]


@THROUGH_THE_WRITER_PROCESS
async def test_a_commands_webhook_is_one_trace_from_intake_to_its_effects(
    world: World, spans: InMemorySpanExporter
) -> None:
    """/deliver's delivery: the intake, the worker's run, the command (ticket, outcome, the
    runner's evidence), GitHub's calls and the effects, all in one trace, no comment text in it."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say(
        "cody", f"/deliver commit={FIX} model=m1 tokens_in=1200 tokens_out=300 cost=0.42\n{SECRET_WORDS}."
    )
    delivery_id = _last_delivery_id(world.database)
    for _ in range(200):  # the outbox marks an effect done just before its span ends
        trace = _trace_of(spans, delivery_id)
        names = {s.name for s in trace}
        if "railyard.effect" in names:
            break
        await asyncio.sleep(0.01)
    assert {"railyard.intake", "railyard.delivery", "railyard.command", "railyard.effect"} <= names
    [command] = [s for s in trace if s.name == "railyard.command"]
    assert _attrs(command) == {
        "railyard.ticket": "acme/web#12",
        "railyard.command": "deliver",
        "railyard.outcome": "applied",
        "gen_ai.request.model": "m1",
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 300,
    }
    calls = [s for s in trace if "http.request.method" in _attrs(s) and "url.full" in _attrs(s)]
    assert calls, names
    for call in calls:
        attributes = _attrs(call)
        assert attributes["server.address"] == "127.0.0.1" and "?" not in attributes["url.full"]
        assert isinstance(attributes["http.response.status_code"], int)
    [worker] = [s for s in trace if s.name == "railyard.delivery"]
    assert _attrs(worker)["railyard.outcome"] == "done"
    for span in trace:
        assert not any(SECRET_WORDS in str(value) for value in _attrs(span).values()), span.name


async def test_a_refused_command_names_its_refusal_code_on_the_command_span(
    world: World, spans: InMemorySpanExporter
) -> None:
    """/claim on a draft is refused: the command span says `refused` and the refusal's code."""
    await world.say("cody", "/claim")
    [command] = [s for s in spans.get_finished_spans() if s.name == "railyard.command"]
    attributes = _attrs(command)
    assert attributes["railyard.outcome"] == "refused"
    assert attributes["railyard.refusal"] and " " not in str(attributes["railyard.refusal"])


@THROUGH_THE_WRITER_PROCESS
async def test_a_retried_delivery_and_its_effects_continue_the_trace_stored_with_them(
    world: World, spans: InMemorySpanExporter
) -> None:
    """The traceparent stored with a delivery and its effects: run again (as after a restart,
    from the row alone), the delivery's new spans are in the first trace."""
    await world.say("rachel", "/publish")
    delivery_id = _last_delivery_id(world.database)
    [intake] = [s for s in _trace_of(spans, delivery_id) if s.name == "railyard.intake"]
    assert intake.context is not None
    trace_id = f"{intake.context.trace_id:032x}"
    with world.database.engine.connect() as connection:
        stored = connection.execute(
            text("SELECT traceparent FROM webhook_deliveries WHERE delivery_id = :d"), {"d": delivery_id}
        ).scalar_one()
        effects = connection.execute(text("SELECT traceparent FROM outbox_effects")).scalars().all()
    assert stored.split("-")[1] == trace_id
    assert effects and all(parent is not None and parent.split("-")[1] == trace_id for parent in effects)
    spans.clear()
    requeue(world.database, [delivery_id], time.time())
    await world.settle()
    again = [s for s in spans.get_finished_spans() if s.name == "railyard.delivery"]
    assert again and all(s.context is not None and f"{s.context.trace_id:032x}" == trace_id for s in again)


@THROUGH_THE_WRITER_PROCESS
async def test_with_tracing_off_nothing_is_stored_for_a_trace(world: World) -> None:
    """No OTEL_* variable: no traceparent on the delivery nor on its effects."""
    await world.say("rachel", "/publish")
    with world.database.engine.connect() as connection:
        rows = (
            connection.execute(
                text(
                    "SELECT traceparent FROM webhook_deliveries"
                    " UNION ALL SELECT traceparent FROM outbox_effects"
                )
            )
            .scalars()
            .all()
        )
    assert rows and set(rows) == {None}


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """A local OTLP/HTTP receiver: POST /v1/traces, protobuf, every request kept decoded."""
    received: list[ExportTraceServiceRequest] = []

    async def traces(request: web.Request) -> web.Response:
        assert request.content_type == "application/x-protobuf"
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.read())
        received.append(message)
        return web.Response(status=200, content_type="application/x-protobuf", body=b"")

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", received
    finally:
        await runner.cleanup()


async def test_otel_exporter_otlp_endpoint_sends_a_commands_trace_to_a_local_receiver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: tuple[str, list[ExportTraceServiceRequest]]
) -> None:
    """OTEL_EXPORTER_OTLP_ENDPOINT set: /claim's webhook reaches the receiver as one trace with
    the intake, the command (`railyard.ticket` set) and the GitHub calls, and no comment text."""
    endpoint, received = receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    state = standin_state()
    async with running_standin(state) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings) as server:
            assert TRACING.on
            world = World(server, state, Database(url))
            await world.say("rachel", f"/publish\n{SECRET_WORDS}")
            delivery_id = _last_delivery_id(world.database)
            for _ in range(200):  # the batch leaves every 50 ms
                if any(s.name == "railyard.command" for s in _received_spans(received)):
                    break
                await asyncio.sleep(0.05)
    assert not TRACING.on  # the server's stop flushed and removed the tracer
    every = _received_spans(received)
    [intake] = [
        s for s in every if s.name == "railyard.intake" and _value(s, "railyard.delivery") == delivery_id
    ]
    trace = [s for s in every if s.trace_id == intake.trace_id]
    names = {s.name for s in trace}
    assert {"railyard.intake", "railyard.delivery", "railyard.command"} <= names
    [command] = [s for s in trace if s.name == "railyard.command"]
    assert _value(command, "railyard.ticket") == "acme/web#12"
    assert any(_value(s, "http.request.method") and _value(s, "url.full") for s in trace), names
    for span in every:
        assert not any(SECRET_WORDS in str(a.value) for a in span.attributes), span.name


def _received_spans(received: list[ExportTraceServiceRequest]) -> list[Any]:
    return [s for m in received for r in m.resource_spans for ss in r.scope_spans for s in ss.spans]


def _value(span: Any, key: str) -> Any:
    for attribute in span.attributes:
        if attribute.key == key:
            kind = attribute.value.WhichOneof("value")
            return getattr(attribute.value, kind) if kind else None
    return None


async def test_a_branch_name_the_runner_wrote_never_lands_in_a_span(
    world: World, spans: InMemorySpanExporter
) -> None:
    """The runner's `/deliver branch=NAME` is text from a comment: the GitHub call that resolves it
    carries only the endpoint's template in `url.full`, so no span holds the branch's words."""
    words = "agent/12-acquisition-of-globex-confidential"
    world.github.repositories["acme/web"].branches[words] = "f" * 40
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", f"/deliver branch={words}\nDone.")
    assert world.ticket().work.value == "delivered", world.replies()
    leaked = [
        (s.name, k) for s in spans.get_finished_spans() for k, v in _attrs(s).items() if "globex" in str(v)
    ]
    assert leaked == []


async def test_a_delivery_of_an_event_railyard_does_not_know_names_no_such_event_in_its_span(
    world: World, spans: InMemorySpanExporter
) -> None:
    """`X-GitHub-Event` is not signed: a delivery stored under a made-up event name and run again
    by an operator (`railyard redeliver`) puts `other` on its span, never the name sent."""
    body = json.dumps({"action": "created", "installation": {"id": 7}}).encode()
    answer = await world.server.deliver("made_up_event_name", body)
    assert answer.status < 300
    delivery_id = _last_delivery_id(world.database)
    requeue(world.database, [delivery_id], time.time())
    await world.settle()
    ran = [s for s in spans.get_finished_spans() if s.name == "railyard.delivery"]
    assert ran and {_attrs(s)["github.event"] for s in ran} == {"other"}
