"""Steps the handler tests share: a world of fakes, and a ticket's life told through comments."""

from __future__ import annotations

from datetime import UTC, datetime

from handlers.answers import Answer, Reply
from handlers.ports import Rules
from policies.model import Ticket, TicketKey
from policies.states import Role
from tests.fakes.configs import FakeConfigs
from tests.fakes.github import issue_answer
from tests.fakes.ports import FakePorts
from tests.fakes.roles import FakeRoles
from tests.fakes.webhooks import REPOSITORY, comment

RACHEL = ("rachel", 101)  # requester and task owner
CAROL = ("carol", 202)  # runner
RITA = ("rita", 303)  # reviewer
NORA = ("nora", 404)  # no role
KEY = TicketKey(REPOSITORY, 12)


def world(rules: Rules | None = None) -> FakePorts:
    """Fakes where rachel requests, carol runs and rita reviews, and issue #12 has a body."""
    ports = FakePorts(
        roles=FakeRoles(
            {
                "rachel": frozenset({Role.REQUESTER, Role.TASK_OWNER}),
                "carol": frozenset({Role.RUNNER}),
                "rita": frozenset({Role.REVIEWER}),
            }
        )
    )
    if rules is not None:
        ports.configs = FakeConfigs(default=rules)
    ports.github.add_issue(REPOSITORY, issue_answer(12, assignees=(RACHEL,)))
    ports.github.logins.update({account: login for login, account in (RACHEL, CAROL, RITA, NORA)})
    return ports


async def say(
    ports: FakePorts,
    body: str,
    by: tuple[str, int] = RACHEL,
    number: int = 12,
    *,
    on_pull_request: bool = False,
    bot: bool = False,
    via_app: int | None = None,
    comment_id: int | None = None,
    created_at: str | None = None,
) -> int:
    """Post a comment on the issue (or PR) and run it through the handlers; its comment id.

    Written (`created_at`, GitHub's whole second) at the ports' clock unless given: a comment is
    processed as it is written, as GitHub sends it."""
    if created_at is None:
        created_at = datetime.fromtimestamp(ports.clock.now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    payload = comment(
        number, body, author=by, on_pull_request=on_pull_request, bot=bot, via_app=via_app,
        comment_id=comment_id, created_at=created_at,
    )  # fmt: skip
    await ports.dispatch("issue_comment", payload)
    return int(payload["comment"]["id"])


async def published(ports: FakePorts) -> Ticket:
    """Ticket #12, published by rachel."""
    await say(ports, "/publish")
    return ticket(ports)


async def claimed(ports: FakePorts, branch: str | None = None) -> Ticket:
    """Ticket #12, published and claimed by carol (on `branch`, when given)."""
    await published(ports)
    await say(ports, "/claim" + (f" branch={branch}" if branch else ""), by=CAROL)
    return ticket(ports)


def ticket(ports: FakePorts, number: int = 12) -> Ticket:
    """The committed ticket (it must exist)."""
    found = ports.store.ticket(TicketKey(REPOSITORY, number))
    assert found is not None, f"#{number} is not a ticket"
    return found


def answers_after(ports: FakePorts, count: int) -> list[Answer]:
    """The answers committed after the first `count`."""
    return ports.store.answers[count:]


def replies(answers: list[Answer]) -> list[Reply]:
    """The replies among answers."""
    return [answer for answer in answers if isinstance(answer, Reply)]
