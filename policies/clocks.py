"""Times from two clocks: GitHub's, in whole seconds, and railyard's, to the microsecond.

A moment GitHub reports as second S happened somewhere in [S, S + 1). A railyard time in that
second cannot be placed before or after it; comparisons across the two clocks are made at
whole-second precision, and a tie is read the benign way by each caller (said where it is).
Pure: the standard library only.
"""

from __future__ import annotations

from datetime import datetime, timedelta

SECOND = timedelta(seconds=1)


def whole_second(moment: datetime) -> datetime:
    """`moment` cut to its whole second, as GitHub writes times."""
    return moment.replace(microsecond=0)


def end_of_second(reported: datetime) -> datetime:
    """The first moment after GitHub's second `reported`: a time before it was "by" `reported`."""
    return whole_second(reported) + SECOND


def after(moment: datetime, span: timedelta) -> datetime:
    """`moment + span`, or the latest moment a date can hold when that would overflow."""
    try:
        return moment + span
    except OverflowError:
        return datetime.max.replace(tzinfo=moment.tzinfo)
