"""Traces are configured by the standard OTEL_* variables only, and off when none is set."""

from __future__ import annotations

import pytest

from app.bootstrap import start_tracing, tracing_wanted
from app.contracts.traces import TRACING, span, traceparent
from policies.commands import Claim, Deliver
from policies.model import Evidence, TicketKey
from policies.refusals import Refusal, RefusalCode
from policies.span_attributes import change_span, outcome_attributes


@pytest.mark.parametrize(
    "environ",
    [
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"},
        {"OTEL_SERVICE_NAME": "railyard-prod"},
        {"OTEL_TRACES_EXPORTER": "console"},
    ],
)
def test_any_standard_otel_variable_turns_traces_on(environ: dict[str, str]) -> None:
    """An OTLP endpoint, a service name or an exporter: traces are wanted."""
    assert tracing_wanted(environ)


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"PATH": "/usr/bin", "OTEL_EXPORTER_OTLP_ENDPOINT": " "},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
    ],
)
def test_traces_are_off_with_no_variable_or_when_disabled(environ: dict[str, str]) -> None:
    """None set, OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none: no tracer is installed."""
    assert not tracing_wanted(environ)
    assert start_tracing(environ) is None and not TRACING.on


def test_an_unknown_exporter_is_a_clear_error() -> None:
    """OTEL_TRACES_EXPORTER=zipkin names what railyard knows instead of sending nowhere."""
    with pytest.raises(ValueError, match="otlp, console, none"):
        tracing_wanted({"OTEL_TRACES_EXPORTER": "zipkin"})


async def test_started_tracing_installs_a_tracer_and_its_stop_removes_it() -> None:
    """With an endpoint the tracer records and spans get a traceparent; stopping turns it off."""
    stop = start_tracing({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert stop is not None and TRACING.on
    try:
        with span("railyard.test"):
            parent = traceparent()
        assert parent is not None and parent.startswith("00-")
    finally:
        await stop()
    assert not TRACING.on and traceparent() is None


def test_off_a_span_is_the_one_shared_do_nothing_context() -> None:
    """Tracing off: no span object is made, whatever is asked for."""
    assert span("a") is span("b", {"railyard.ticket": "o/r#1"})


def test_a_command_span_carries_the_command_the_ticket_and_the_runners_evidence() -> None:
    """Deliver with evidence: GenAI attributes; its summary is never an attribute."""
    evidence = Evidence(model="m1", input_tokens=1200, output_tokens=300, cost_usd="0.42")
    name, attributes = change_span(TicketKey("o/r", 3), Deliver(summary="secret words", evidence=evidence))
    assert name == "railyard.command"
    assert attributes == {
        "railyard.ticket": "o/r#3",
        "railyard.command": "deliver",
        "gen_ai.request.model": "m1",
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 300,
    }
    assert change_span(TicketKey("o/r", 3), Claim())[1] == {
        "railyard.ticket": "o/r#3",
        "railyard.command": "claim",
    }


def test_an_outcome_is_one_word_and_a_refusal_its_code_never_its_reason() -> None:
    """Refused: `refused` and the code; the reason (which may quote a person) is left out."""
    refusal = Refusal(RefusalCode(next(iter(RefusalCode))), reason="you wrote: secret words")
    assert outcome_attributes(refusal, False, False) == {
        "railyard.outcome": "refused",
        "railyard.refusal": str(next(iter(RefusalCode))),
    }
    assert outcome_attributes(None, True, False) == {"railyard.outcome": "applied"}
    assert outcome_attributes(None, True, True) == {"railyard.outcome": "replayed"}
