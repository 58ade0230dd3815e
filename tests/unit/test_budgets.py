"""Fixed-window budgets: an account past its limit waits for the window's end and grows nothing."""

from __future__ import annotations

from policies.budgets import Budget, WindowCounter

READS = Budget("reads", 3, 60.0)


def test_past_the_limit_the_answer_is_the_seconds_left_in_the_window() -> None:
    """Three reads in a minute are taken; the fourth says how long until the minute is over."""
    counter = WindowCounter(READS)
    assert [counter.spend(1, 120.0 + n) for n in range(3)] == [None, None, None]
    assert counter.spend(1, 150.0) == 30
    assert counter.spend(2, 150.0) is None  # another account has its own budget
    assert counter.spend(1, 180.0) is None  # the next window


def test_a_costly_use_is_refused_whole_while_a_cheaper_one_still_fits() -> None:
    """Two of three spent: a use costing two is refused (nothing taken), one costing one is taken."""
    counter = WindowCounter(READS)
    assert counter.spend(1, 0.0, cost=2) is None
    assert counter.spend(1, 1.0, cost=2) == 59
    assert counter.spend(1, 2.0) is None
    assert counter.spend(1, 3.0) == 57


def test_a_flood_of_distinct_accounts_never_grows_the_memory_past_its_bound() -> None:
    """Ten thousand accounts spend once each: the counter holds at most its bound."""
    counter = WindowCounter(READS, accounts=100)
    for account in range(10_000):
        counter.spend(account, 0.0)
    assert len(counter) == 100


def test_the_retry_after_is_at_least_a_second() -> None:
    """At the window's last instant a client is still told to wait one second, never zero."""
    assert Budget("x", 1, 60.0).retry_after(59.9999) == 1
