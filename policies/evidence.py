"""Delivery evidence: what a runner reports a run used (model, tokens, cost), as it reports it.

Evidence is the runner's word and is labelled so wherever it is shown; it never decides
acceptance. It does feed the cost budgets (SPEC *Watchdog, budgets and loops*): a ticket past
`limits.cost_per_ticket` needs a person's attention, and a runner whose recorded cost this
month reached `limits.cost_per_runner_month` cannot claim. Pure: the standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from policies.model import Evidence

ARGUMENT_OF = {
    "model": "model",
    "input_tokens": "tokens_in",
    "output_tokens": "tokens_out",
    "cost_usd": "cost",
}
"""Each evidence field (the API's `evidence` object, the agent's options) and its `/deliver` argument."""
EVIDENCE_KEYS = frozenset(ARGUMENT_OF.values())
"""The `/deliver` arguments that report evidence."""

MAX_TOKENS = 10**12
MAX_COST = Decimal("1000000")  # USD per delivery: more is a typo (and budgets are bounded likewise)
_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,99}", re.ASCII)
_TOKENS = re.compile(r"[0-9]{1,13}", re.ASCII)
_COST = re.compile(r"[0-9]{1,7}(?:\.[0-9]{1,6})?", re.ASCII)


def evidence_problem(key: str, value: str) -> str | None:
    """What is wrong with one evidence argument, in words, or None."""
    shown = repr(value if len(value) <= 40 else value[:40] + "…")
    if key == "model" and _MODEL.fullmatch(value) is None:
        return (
            f"model= takes a model name (letters, digits, ._:/@+-; up to 100), like model=gpt-5; got {shown}."
        )
    tokens = key in ("tokens_in", "tokens_out")
    if tokens and (_TOKENS.fullmatch(value) is None or int(value) > MAX_TOKENS):
        return f"{key}= takes a whole number of tokens up to {MAX_TOKENS:,}, like {key}=1200; got {shown}."
    if key == "cost" and (_COST.fullmatch(value) is None or Decimal(value) > MAX_COST):
        return (
            f"cost= takes US dollars (at most 6 decimals, up to {MAX_COST:,}), like cost=0.42; got {shown}."
        )
    return None


def evidence_from(
    *,
    model: str | None = None,
    input_tokens: int | str | None = None,
    output_tokens: int | str | None = None,
    cost: Decimal | float | str | None = None,
) -> Evidence | None:
    """The evidence of values already checked (`evidence_problem`, or the API's schema); None when
    nothing was reported."""
    if model is None and input_tokens is None and output_tokens is None and cost is None:
        return None
    return Evidence(
        model=model,
        input_tokens=int(input_tokens) if input_tokens is not None else None,
        output_tokens=int(output_tokens) if output_tokens is not None else None,
        cost_usd=canonical_cost(cost) if cost is not None else None,
    )


def canonical_cost(cost: Decimal | float | str) -> str:
    """A cost as railyard records it: a plain decimal string of US dollars (`0.42`), exact."""
    try:
        value = Decimal(str(cost))
    except InvalidOperation as error:
        raise ValueError(f"not a cost: {cost!r}") from error
    if not value.is_finite() or value < 0 or value > MAX_COST:
        raise ValueError(f"a cost is from 0 to {MAX_COST} US dollars, not {cost!r}")
    return format(value.quantize(Decimal("0.000001")).normalize(), "f")


def evidence_to_data(evidence: Evidence | None) -> dict[str, Any] | None:
    """The event data and status object shape: `{"model", "input_tokens", "output_tokens", "cost_usd"}`."""
    if evidence is None:
        return None
    return {
        "model": evidence.model,
        "input_tokens": evidence.input_tokens,
        "output_tokens": evidence.output_tokens,
        "cost_usd": evidence.cost_usd,
    }


def evidence_from_data(data: Mapping[str, Any] | None) -> Evidence | None:
    """The inverse of `evidence_to_data` (None for a delivery recorded without evidence)."""
    if not data:
        return None
    return Evidence(
        model=data.get("model"),
        input_tokens=data.get("input_tokens"),
        output_tokens=data.get("output_tokens"),
        cost_usd=data.get("cost_usd"),
    )


def cost_of(evidence: Evidence | None) -> Decimal:
    """The reported cost in US dollars (0 when none was reported)."""
    if evidence is None or evidence.cost_usd is None:
        return Decimal(0)
    return Decimal(evidence.cost_usd)


def total_cost(costs: Iterable[str | None]) -> Decimal:
    """The sum of recorded costs (`cost_usd` strings; None counts as 0)."""
    return sum((Decimal(c) for c in costs if c), Decimal(0))


def month_start(moment: datetime) -> datetime:
    """The first moment of `moment`'s calendar month (UTC as given)."""
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
