"""Where railyard's spans go: nowhere until `app.bootstrap` installs a tracer (docs/traces.md).

One trace per webhook delivery: the intake's span, the worker's, the command's, every GitHub
call's and the outbox effects'. Its context travels in the W3C `traceparent` string stored with
the delivery and with each effect, so a retry after a restart continues the same trace.

Off (no `OTEL_*` variable set) every helper here returns at its first test of `TRACING.on`: no
span object, no context lookup, nothing from the SDK. Span attributes are railyard's own ids
and words from fixed vocabularies, never user text (a comment, a summary, a title).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NoOpTracer, SpanKind, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

Attribute = str | int | float | bool
__all__ = [
    "TRACING",
    "Attribute",
    "SpanKind",
    "Tracing",
    "context_of",
    "set_attribute",
    "set_attributes",
    "span",
    "traceparent",
]
_PROPAGATOR = TraceContextTextMapPropagator()
_OFF: AbstractContextManager[None] = nullcontext()


@dataclass
class Tracing:
    """The process's tracer; `on` is False (and the tracer a no-op) until one is installed."""

    tracer: Tracer = field(default_factory=NoOpTracer)
    on: bool = False

    def use(self, tracer: Tracer | None) -> None:
        """Send spans to `tracer` from now on (None: stop tracing)."""
        self.tracer = tracer if tracer is not None else NoOpTracer()
        self.on = tracer is not None


TRACING = Tracing()


def span(
    name: str,
    attributes: Mapping[str, Attribute] | None = None,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    parent: str | None = None,
) -> AbstractContextManager[None]:
    """A span around a block, a child of `parent` (a stored traceparent) when given, else of the
    current span; a shared do-nothing context when tracing is off."""
    if not TRACING.on:
        return _OFF
    return _span(name, attributes, kind, parent)


@contextmanager
def _span(
    name: str, attributes: Mapping[str, Attribute] | None, kind: SpanKind, parent: str | None
) -> Iterator[None]:
    context = context_of(parent) if parent else None
    # No exception event: its message may quote what a person wrote. Only the class is kept.
    with TRACING.tracer.start_as_current_span(
        name,
        context=context,
        kind=kind,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield
        except BaseException as error:
            current.set_attribute("error.type", type(error).__qualname__)
            current.set_status(StatusCode.ERROR)
            raise


def set_attributes(attributes: Mapping[str, Attribute | None]) -> None:
    """Set attributes on the current span (those given as None are left out)."""
    if not TRACING.on:
        return
    current = trace.get_current_span()
    if current.is_recording():
        current.set_attributes({k: v for k, v in attributes.items() if v is not None})


def set_attribute(name: str, value: Attribute | None) -> None:
    """Set one dotted attribute on the current span (None: nothing)."""
    if TRACING.on and value is not None:
        current = trace.get_current_span()
        if current.is_recording():
            current.set_attribute(name, value)


def traceparent() -> str | None:
    """The current span's W3C traceparent, to store beside a delivery or an effect (None: off)."""
    if not TRACING.on:
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent")


def context_of(parent: str) -> Context:
    """The context a stored traceparent names (an empty one when it cannot be read)."""
    return _PROPAGATOR.extract({"traceparent": parent})
