"""Which bearer tokens GitHub lately refused or accepted, so a flood of made-up tokens costs a
bounded number of checks.

Every API call checks its token with GitHub (`GET /user`). A token GitHub refused is refused
again without asking for `REFUSED_FOR` seconds (a revoked or made-up token never becomes good;
the bound only limits the harm of a refusal GitHub did not mean); a token never seen accepted
spends a budget shared by every caller (`NEW_PER_MINUTE`): past it the answer is 429 with
`Retry-After` and GitHub is not asked, so made-up tokens cannot make railyard send GitHub failed
logins by the thousand (nor grow anything: the memory is bounded, least recently used forgotten
first, and holds hashes).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

from policies.budgets import Budget, WindowCounter

NEW_PER_MINUTE = 120  # tokens not seen accepted, checked with GitHub per minute (per process)
KEPT = 10_000
REFUSED_FOR = 600.0


class TokenChecks:
    """This process's memory of tokens' answers, and the budget for tokens it does not know."""

    def __init__(self, new_per_minute: int = NEW_PER_MINUTE, kept: int = KEPT) -> None:
        self.new = WindowCounter(Budget("new tokens", new_per_minute, 60.0), accounts=1)
        self._kept = kept
        self._answers: OrderedDict[str, tuple[bool, float]] = OrderedDict()  # hash -> (accepted, when)

    def known(self, token: str, now: float) -> bool | None:
        """True: accepted lately; False: refused in the last REFUSED_FOR seconds; None: not known."""
        answer = self._answers.get(_hash(token))
        if answer is None or (not answer[0] and now - answer[1] > REFUSED_FOR):
            return None
        return answer[0]

    def spend_new(self, now: float) -> int | None:
        """Take one check of a token not known: None when taken, else the seconds to wait."""
        return self.new.spend(0, now)

    def remember(self, token: str, accepted: bool, now: float) -> None:
        """GitHub's answer for the token."""
        key = _hash(token)
        self._answers[key] = (accepted, now)
        self._answers.move_to_end(key)
        while len(self._answers) > self._kept:
            self._answers.popitem(last=False)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
