"""`IdlePolls`: an idle loop looks less often while it finds nothing, and never late for what
its own process scheduled."""

from __future__ import annotations

from app.runtime.idle_polls import IdlePolls


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_empty_looks_double_the_wait_up_to_the_longest_and_work_brings_it_back() -> None:
    polls = IdlePolls(0.2, 2.0, clock=Clock())
    waits = []
    for _ in range(6):
        waits.append(polls.seconds())
        polls.looked(found=False)
    assert waits == [0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    polls.looked(found=True)
    assert polls.seconds() == 0.2


def test_a_notice_of_stored_work_brings_the_wait_back_to_the_shortest() -> None:
    polls = IdlePolls(0.5, 2.0, clock=Clock())
    for _ in range(4):
        polls.looked(found=False)
    assert polls.seconds() == 2.0
    polls.woken()
    assert polls.seconds() == 0.5


def test_something_due_sooner_than_the_wait_is_looked_for_when_it_falls_due() -> None:
    clock = Clock()
    polls = IdlePolls(0.2, 2.0, clock=clock)
    for _ in range(5):
        polls.looked(found=False)
    polls.due_at(clock.now + 5.0)  # later than the wait: the wait stands
    polls.due_at(clock.now + 0.75)  # the earliest counts
    assert polls.seconds() == 0.75
    clock.now += 0.25  # woken early (a notice): the due time is still waited for
    assert polls.seconds() == 0.5
    clock.now += 0.5
    polls.looked(found=False)  # the look at its time
    assert polls.seconds() == 2.0  # the next one, 4.25 s away, is further than the wait
    clock.now += 4.0
    assert polls.seconds() == 0.25


def test_something_already_due_means_no_wait_until_a_look() -> None:
    clock = Clock()
    polls = IdlePolls(0.2, 2.0, clock=clock)
    polls.due_at(clock.now - 1.0)
    polls.due_at(clock.now - 0.5)
    assert polls.seconds() == 0.0
    polls.looked(found=True)  # both looked for by this look
    assert polls.seconds() == 0.2


def test_a_longest_below_the_shortest_is_the_shortest() -> None:
    polls = IdlePolls(0.5, 0.1, clock=Clock())
    polls.looked(found=False)
    assert polls.seconds() == 0.5
