"""Who acts in tests and benchmarks, and command contexts built the way GitHub comments arrive."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from policies.commands import Context
from policies.model import Actor
from policies.states import Role

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

REQUESTER = Actor("rachel", frozenset({Role.REQUESTER}))
RUNNER = Actor("coder-bot[bot]", frozenset({Role.RUNNER}))
OTHER_RUNNER = Actor("helper-bot[bot]", frozenset({Role.RUNNER}))
REVIEWER = Actor("rita", frozenset({Role.REVIEWER}))
MAINTAINER = Actor("max", frozenset({Role.REPOSITORY_MAINTAINER}))
NOBODY = Actor("nora")


@dataclass
class Clock:
    """A clock that moves one second per reading, so comment times are strictly ordered."""

    now: datetime = START
    step: timedelta = timedelta(seconds=1)

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


# GitHub comment ids are unique across all of GitHub; so are these, across all tests.
_COMMENT_IDS = itertools.count(1_000_000_001)


@dataclass
class Comments:
    """Builds command contexts the way GitHub comments arrive: rising ids and times."""

    clock: Clock = field(default_factory=Clock)

    def context(self, actor: Actor, **overrides: object) -> Context:
        """A context for a new comment by `actor`; the comment id is the operation id."""
        comment_id = next(_COMMENT_IDS)
        at = self.clock()
        values: dict[str, object] = {
            "actor": actor,
            "operation_id": str(comment_id),
            "at": at,
            "comment_id": comment_id,
            "comment_at": at,
            "policy_version": "blob-sha-1",
        }
        values.update(overrides)
        return Context(**values)  # type: ignore[arg-type]
