"""Which bearer tokens GitHub lately refused or accepted, so a flood of made-up tokens costs a
bounded number of checks and locks no one else out.

Every API call checks its token with GitHub (`GET /user`). A token GitHub refused is refused
again without asking for `REFUSED_FOR` seconds (a revoked or made-up token never becomes good;
the bound only limits the harm of a refusal GitHub did not mean). Accepted and refused tokens
are kept in two separate bounded memories (least recently used forgotten first, hashes only), so
refusals, however many, never push out a token GitHub accepted.

A token this process has not seen accepted spends a budget of its caller's address
(`NEW_PER_MINUTE` per IPv4 address or IPv6 /64 network; past it the answer is 429 with
`Retry-After` and GitHub is not asked): made-up tokens cannot make railyard send GitHub failed
logins by the thousand, and a stranger's flood spends only its own address's checks. A token
seen accepted (among the last `KEPT` accepted) never waits on that budget, whatever the address.
The address is the connection's peer (`request.remote`): behind a proxy every caller may share
the proxy's, and then a flood can delay a token's first call by up to a minute, never a token
already accepted.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections import OrderedDict

from policies.budgets import Budget, WindowCounter

NEW_PER_MINUTE = 120  # tokens not seen accepted, checked with GitHub per minute per address (per process)
KEPT = 10_000  # tokens remembered, in each of the two memories
ADDRESSES = 10_000  # addresses whose checks are counted at once
REFUSED_FOR = 600.0


class TokenChecks:
    """This process's memory of tokens' answers, and the budget for tokens it does not know."""

    def __init__(self, new_per_minute: int = NEW_PER_MINUTE, kept: int = KEPT) -> None:
        self.new = WindowCounter(Budget("new tokens", new_per_minute, 60.0), accounts=ADDRESSES)
        self._kept = kept
        self._accepted: OrderedDict[str, float] = OrderedDict()  # hash -> when last accepted
        self._refused: OrderedDict[str, float] = OrderedDict()  # hash -> when refused

    def known(self, token: str, now: float) -> bool | None:
        """True: accepted lately; False: refused in the last REFUSED_FOR seconds; None: not known."""
        key = _hash(token)
        if key in self._accepted:
            return True
        refused = self._refused.get(key)
        return False if refused is not None and now - refused <= REFUSED_FOR else None

    def spend_new(self, address: str | None, now: float) -> int | None:
        """Take one check of a token not known, from `address`: None when taken, else the seconds to wait."""
        return self.new.spend(client_key(address), now)

    def remember(self, token: str, accepted: bool, now: float) -> None:
        """GitHub's answer for the token."""
        key = _hash(token)
        keep, drop = (self._accepted, self._refused) if accepted else (self._refused, self._accepted)
        drop.pop(key, None)
        keep[key] = now
        keep.move_to_end(key)
        while len(keep) > self._kept:
            keep.popitem(last=False)


def client_key(address: str | None) -> int:
    """The caller a budget counts by: an IPv4 address, an IPv6 /64 (one host's usual share), as a number."""
    try:
        parsed = ipaddress.ip_address(address or "")
    except ValueError:
        return -1  # no address (a Unix socket): all such callers together
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return int(parsed.ipv4_mapped)
        return (1 << 64) + (int(parsed) >> 64)  # the /64, never equal to an IPv4 address's number
    return int(parsed)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
