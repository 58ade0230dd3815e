"""The memory of tokens' answers: refusals never push out an accepted token, budgets are per address."""

from __future__ import annotations

from app.web.token_checks import REFUSED_FOR, TokenChecks, client_key


def test_a_flood_of_refused_tokens_never_forgets_an_accepted_one() -> None:
    """Far more refusals than the memory holds: the accepted token is still known accepted."""
    checks = TokenChecks(kept=10)
    checks.remember("ghu_real", accepted=True, now=0.0)
    for n in range(100):
        checks.remember(f"ghp_madeup{n}", accepted=False, now=1.0)
    assert checks.known("ghu_real", 2.0) is True
    assert checks.known("ghp_madeup99", 2.0) is False and checks.known("ghp_madeup0", 2.0) is None


def test_a_refusal_is_remembered_for_a_while_and_a_revoked_token_stops_being_accepted() -> None:
    """A refusal is known for REFUSED_FOR seconds, and it replaces the token's earlier acceptance."""
    checks = TokenChecks()
    checks.remember("ghu_a", accepted=True, now=0.0)
    checks.remember("ghu_a", accepted=False, now=10.0)
    assert checks.known("ghu_a", 11.0) is False
    assert checks.known("ghu_a", 11.0 + REFUSED_FOR) is None


def test_unknown_tokens_spend_their_own_addresses_checks() -> None:
    """An address past its budget waits, another does not; an IPv6 /64 counts as one address."""
    checks = TokenChecks(new_per_minute=2)
    assert [checks.spend_new("203.0.113.9", 0.0) for _ in range(3)][2] is not None
    assert checks.spend_new("198.51.100.1", 0.0) is None
    assert client_key("2001:db8::1") == client_key("2001:db8::ffff") != client_key("2001:db8:0:1::1")
    assert client_key("::ffff:203.0.113.9") == client_key("203.0.113.9")
    assert client_key(None) == client_key("not an address") != client_key("192.0.2.1")
