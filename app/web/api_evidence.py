"""The API's `evidence` object on a `/deliver`: `{"model", "input_tokens", "output_tokens",
"cost_usd"}` (SPEC *Evidence and telemetry*), read as the same arguments a comment writes
(`model=`, `tokens_in=`, `tokens_out=`, `cost=`), so one grammar validates both and the
idempotency digest covers the evidence with the command text."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from policies.evidence import ARGUMENT_OF as FIELDS


class EvidenceError(ValueError):
    """The `evidence` object is not one railyard can read (400)."""


def with_evidence(text: str, evidence: Any) -> str:
    """`text` with the evidence as arguments right after its command word (`/deliver model=m1 ...`)."""
    if evidence is None:
        return text
    if not isinstance(evidence, dict):
        raise EvidenceError(
            '"evidence" must be an object: {"model", "input_tokens", "output_tokens", "cost_usd"}'
        )
    if unknown := set(evidence) - set(FIELDS):
        raise EvidenceError(f"unknown evidence fields: {', '.join(sorted(map(str, unknown)))}")
    head, _, rest = text.lstrip().partition("\n")
    word, _, arguments = head.partition(" ")
    if word.lower() != "/deliver":
        raise EvidenceError('"evidence" goes with a /deliver command only')
    tokens = [
        f"{FIELDS[name]}={_value(name, value)}" for name, value in evidence.items() if value is not None
    ]
    line = " ".join([word, *tokens, arguments]).rstrip()
    return f"{line}\n{rest}" if rest else line


def _value(name: str, value: Any) -> str:
    if name == "model":
        if not isinstance(value, str) or not value or any(c.isspace() for c in value):
            raise EvidenceError('"evidence.model" must be a model name without spaces, like "gpt-5"')
        return value
    if name in ("input_tokens", "output_tokens"):
        if type(value) is not int or value < 0:
            raise EvidenceError(f'"evidence.{name}" must be a whole number of tokens (0 or more)')
        return str(value)
    if type(value) not in (int, float) or value < 0 or value != value:  # NaN is not a cost
        raise EvidenceError('"evidence.cost_usd" must be a number of US dollars (0 or more), like 0.42')
    return format(Decimal(str(value)), "f")
