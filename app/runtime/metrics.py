"""Prometheus metrics, in a registry of the process's own (nothing global).

Labels take known values only: a label taken from a request would let anyone who can reach
the server add series until `/metrics` (and the process's memory) grows without bound. The
domain metrics' labels are values of fixed vocabularies: `CommandName`, `Outcome.label`
(`applied`, `unchanged`, a `RefusalCode`), `WorkState`, `attention.CODES`, `InvalidReason`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from app.contracts.webhook_events import SUBSCRIBED_EVENTS, UNLISTED_EVENTS
from policies.commands import CommandName
from policies.refusals import RefusalCode

if TYPE_CHECKING:
    from handlers.ports import Outcome

T = TypeVar("T")

KNOWN_EVENTS = frozenset((*SUBSCRIBED_EVENTS, *UNLISTED_EVENTS))
OTHER_EVENT = "other"
COMMAND_OUTCOMES = frozenset(("applied", "unchanged", *(code.value for code in RefusalCode)))
"""Every `Outcome.label`: the outcome label of `railyard_commands_total`."""


def event_label(event: str) -> str:
    """`event` if railyard knows it, else `other`: `X-GitHub-Event` is never signed."""
    return event if event in KNOWN_EVENTS else OTHER_EVENT


class _EventCounter(Counter):
    """A counter whose first label is an event name, always passed through `event_label`."""

    def labels(self: T, *values: object, **named: object) -> T:
        """The child for these labels, the event mapped to a known name or `other`."""
        if values:
            values = (event_label(str(values[0])), *values[1:])
        return super().labels(*values, **named)  # type: ignore[misc]


class _EventHistogram(Histogram):
    """A histogram whose first label is an event name, always passed through `event_label`."""

    def labels(self: T, *values: object, **named: object) -> T:
        """The child for these labels, the event mapped to a known name or `other`."""
        if values:
            values = (event_label(str(values[0])), *values[1:])
        return super().labels(*values, **named)  # type: ignore[misc]


class Metrics:
    """Every metric railyard exports."""

    def count_received(self, event: str, outcome: str) -> None:
        """One more webhook answered, under `event_label(event)` (each child is looked up once)."""
        key = (event_label(event), outcome)
        child = self._received.get(key)
        if child is None:
            child = self._received[key] = self.received.labels(*key)
        child.inc()

    def count_command(self, command: CommandName, outcome: Outcome) -> None:
        """One more command that reached the one door, by its name and `Outcome.label`."""
        label = outcome.label if outcome.label in COMMAND_OUTCOMES else OTHER_EVENT
        self.commands.labels(CommandName(command).value, label).inc()

    def __init__(self) -> None:
        self._received: dict[tuple[str, str], Counter] = {}
        self.registry = CollectorRegistry()
        r = self.registry
        self.received = Counter(
            "railyard_webhook_deliveries_received",
            "Webhook deliveries answered, by event (a known one, else other) and outcome (stored, "
            "duplicate, rejected: refused; mismatched: stored as rejected, its payload not of its event)",
            ["event", "outcome"],
            registry=r,
        )
        # The worker labels these with a stored delivery's event; `railyard redeliver` can hand
        # it one whose (unsigned) event header names no event railyard knows.
        self.processed = _EventCounter(
            "railyard_webhook_deliveries_processed",
            "Webhook deliveries processed, by event and final status (done, ignored, failed, retry)",
            ["event", "status"],
            registry=r,
        )
        self.ack_seconds = Histogram(
            "railyard_webhook_ack_seconds",
            "Time from request to durable acknowledgement",
            buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0),
            registry=r,
        )
        self.processing_seconds = _EventHistogram(
            "railyard_webhook_processing_seconds",
            "Time to process one delivery, by event",
            ["event"],
            registry=r,
        )
        self.queue_depth = Gauge("railyard_queue_depth", "Pending webhook deliveries", registry=r)
        self.queue_lag = Gauge(
            "railyard_queue_lag_seconds", "Age of the oldest pending webhook delivery", registry=r
        )
        self.github_calls = Counter(
            "railyard_github_api_calls", "GitHub API calls, by status code", ["status"], registry=r
        )
        self.outbox_done = Counter(
            "railyard_outbox_effects_done", "GitHub writes performed, by kind", ["kind"], registry=r
        )
        self.outbox_failed = Counter(
            "railyard_outbox_effects_failed", "GitHub writes given up after the last retry", registry=r
        )
        self.outbox_pending = Gauge("railyard_outbox_effects_pending", "GitHub writes waiting", registry=r)
        self.outbox_failed_total = Gauge(
            "railyard_outbox_effects_failed_stored", "Failed GitHub writes kept for an operator", registry=r
        )
        self.commands = Counter(
            "railyard_commands",
            "Commands that reached the one door in this process, by command and outcome (applied, "
            "unchanged, or the refusal code)",
            ["command", "outcome"],
            registry=r,
        )
        self.tickets = Gauge("railyard_tickets", "Tickets by work state", ["work"], registry=r)
        self.attention = Gauge(
            "railyard_tickets_attention", "Tickets showing each attention code", ["code"], registry=r
        )
        self.invalidated = Gauge(
            "railyard_acceptances_invalidated_recorded",
            "Recorded acceptance_invalidated events, by reason",
            ["reason"],
            registry=r,
        )
        self.rate_limit_remaining = Gauge(
            "railyard_github_rate_limit_remaining",
            "GitHub's x-ratelimit-remaining, by installation",
            ["installation"],
            registry=r,
        )
