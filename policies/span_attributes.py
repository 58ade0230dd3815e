"""The attributes of a change's span (docs/traces.md): fixed vocabularies and railyard's ids only.

A command is named by its `CommandName`, any other change by its class; the ticket by its key;
the outcome by one of `OUTCOMES`; a refusal by its `RefusalCode`. Nothing a person wrote (a
summary, a reason, feedback) is ever an attribute. The only text taken from a runner is the
model name it reported with a delivery's evidence, cut to `MODEL_CHARS`.
"""

from __future__ import annotations

from policies.commands import Deliver
from policies.door import Change
from policies.model import TicketKey
from policies.refusals import Refusal

Attributes = dict[str, str | int]
OUTCOMES = ("applied", "refused", "replayed", "unchanged")
MODEL_CHARS = 100


def change_span(key: TicketKey, change: Change) -> tuple[str, Attributes]:
    """The span's name and its first attributes: what is being changed, and by which change."""
    command = getattr(change, "name", None)
    attributes: Attributes = {"railyard.ticket": str(key)}
    if command is None:
        attributes["railyard.change"] = type(change).__name__
        return "railyard.change", attributes
    attributes["railyard.command"] = str(command)
    if isinstance(change, Deliver) and change.evidence is not None:
        evidence = change.evidence
        if evidence.model:
            attributes["gen_ai.request.model"] = evidence.model[:MODEL_CHARS]
        if evidence.input_tokens is not None:
            attributes["gen_ai.usage.input_tokens"] = evidence.input_tokens
        if evidence.output_tokens is not None:
            attributes["gen_ai.usage.output_tokens"] = evidence.output_tokens
    return "railyard.command", attributes


def outcome_attributes(refusal: Refusal | None, applied: bool, replayed: bool) -> Attributes:
    """What the change came to: `railyard.outcome`, and `railyard.refusal` when refused."""
    if replayed:
        return {"railyard.outcome": "replayed"}
    if refusal is not None:
        return {"railyard.outcome": "refused", "railyard.refusal": str(refusal.code)}
    return {"railyard.outcome": "applied" if applied else "unchanged"}
