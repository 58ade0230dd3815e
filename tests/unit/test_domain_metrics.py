"""The command counter's names and labels: a command name and `applied`, `unchanged` or a refusal code."""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client import generate_latest

from app.runtime.metrics import Metrics
from handlers.ports import Outcome
from policies.commands import CommandName
from policies.events import Event, EventType
from policies.model import TicketKey
from policies.refusals import Refusal, RefusalCode

KEY = TicketKey("acme/web", 12)


def test_a_command_is_counted_under_its_name_and_its_outcome() -> None:
    """Applied, unchanged and refused outcomes are three series of `railyard_commands_total`."""
    metrics = Metrics()
    applied = Outcome(
        "op-1", KEY, 2, (Event(EventType.CLAIMED, "cody", "runner", datetime.now(UTC), "op-1", "1", {}),)
    )
    refused = Outcome("op-2", KEY, 2, refusal=Refusal(RefusalCode.WRONG_STATE, "no", "later"))
    metrics.count_command(CommandName.CLAIM, applied)
    metrics.count_command(CommandName.CLAIM, refused)
    metrics.count_command(CommandName.CLAIM, refused)
    metrics.count_command(CommandName.PUBLISH, Outcome("op-3", KEY, 2))
    text = generate_latest(metrics.registry).decode()
    assert 'railyard_commands_total{command="claim",outcome="applied"} 1.0' in text
    assert f'railyard_commands_total{{command="claim",outcome="{RefusalCode.WRONG_STATE.value}"}} 2.0' in text
    assert 'railyard_commands_total{command="publish",outcome="unchanged"} 1.0' in text
