"""Budgets count per repository by GitHub's id, not its name: a `repository` `renamed` event (the
same id, a new name) gives no one a fresh budget (SPEC *Answers that cannot be forged or
jammed*, *Repository identity and sessions*). Through the handlers and the in-memory fakes."""

from __future__ import annotations

from typing import Any

from handlers.answers import Refused, Reply
from handlers.ports import Rules
from policies.budgets import command_budget
from policies.model import TicketKey
from policies.refusals import RefusalCode
from policies.states import WorkState
from tests.fakes.github import issue_answer
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import comment
from tests.unit.handlers.steps import CAROL, NORA, RACHEL, world
from tests.unit.handlers.test_repositories import of, renamed

WEB, SITE, ID = "acme/web", "acme/site", 4242  # GitHub's repository 4242, first called acme/web


async def say(ports: FakePorts, body: str, by: tuple[str, int] = RACHEL, name: str = WEB) -> dict[str, Any]:
    """`body` commented on #12 of repository `ID`, called `name`, through the handlers."""
    payload = of(ID, comment(12, body, author=by, repository=name), name)
    await ports.dispatch("issue_comment", payload)
    return payload


def renamed_world(rules: Rules) -> FakePorts:
    """Fakes where #12 exists under both names (GitHub answers for the name it is asked)."""
    ports = world(rules)
    ports.github.names[ID] = WEB
    for name in (WEB, SITE):
        ports.github.add_issue(name, issue_answer(12, assignees=(RACHEL,)))
    return ports


async def rename(ports: FakePorts) -> None:
    """GitHub renames repository `ID` from acme/web to acme/site and says so."""
    ports.github.names[ID] = SITE
    await ports.dispatch("repository", renamed(ID, WEB, SITE))
    assert ports.store.ticket(TicketKey(SITE, 12)) is not None  # the ticket moved with it


def asked(ports: FakePorts, login: str) -> int:
    """How many times `login`'s roles were asked of GitHub."""
    return sum(1 for who, _ in ports.roles.asked if who == login)


async def test_a_rename_does_not_restart_an_accounts_command_budget() -> None:
    """`limits.commands_per_hour: 2`: carol claims and gives up acme/web#12; the repository is
    renamed acme/site; her `/claim` there is refused over her budget, which is still spent."""
    ports = renamed_world(Rules("blob-sha-1", commands_per_hour=2))
    await say(ports, "/publish")
    await say(ports, "/claim", by=CAROL)
    await say(ports, "/reopen Giving it up", by=CAROL)
    await rename(ports)
    await say(ports, "/claim", by=CAROL, name=SITE)
    moved = ports.store.ticket(TicketKey(SITE, 12))
    assert moved is not None and moved.work is WorkState.OPEN
    assert await ports.budgets.spent(CAROL[1], command_budget(ID, 2)) == 2


async def test_a_rename_does_not_restart_a_role_less_accounts_requests() -> None:
    """`limits.outsider_requests_per_hour: 2`: nora, without a role, has her roles asked for two
    `/claim`s on acme/web (the runner role, then every other one: she holds none; then as a
    stranger's); after the rename her third, on acme/site, is silent and asks nothing."""
    ports = renamed_world(Rules("blob-sha-1", outsider_requests_per_hour=2))
    await say(ports, "/publish")
    for _ in range(2):
        await say(ports, "/claim", by=NORA)
    assert asked(ports, "nora") == 3
    await rename(ports)
    await say(ports, "/claim", by=NORA, name=SITE)
    assert asked(ports, "nora") == 3


async def test_a_rename_does_not_restart_the_shared_role_less_budget_nor_the_mark_nor_the_re_check() -> None:
    """`limits.outsider_requests_per_hour: 3` (all role-less accounts together: 30): nora is
    found without a role (her roles asked in full: her ten minutes start), and 29 strangers spend
    the rest of the shared budget, all on acme/web. Her next `/claim` is silent and asks nothing.
    After the rename she is still known role-less on acme/site, the shared budget still spent and
    her ten minutes too: her next `/claim` is silent and asks nothing (a fresh start would ask)."""
    ports = renamed_world(Rules("blob-sha-1", outsider_requests_per_hour=3))
    await say(ports, "/publish")
    await say(ports, "/claim", by=NORA)
    for n in range(29):
        await say(ports, "/claim", by=(f"stranger{n}", 9000 + n))
    await say(ports, "/claim", by=NORA)
    assert asked(ports, "nora") == 2  # the runner role, then every other one: she holds none
    await rename(ports)
    await say(ports, "/claim", by=NORA, name=SITE)
    assert asked(ports, "nora") == 2


async def test_a_rename_does_not_restart_a_tickets_status_re_check() -> None:
    """A `/status` on acme/web#12 spends the ticket's one acceptance re-check of the minute; after
    the rename a `/status` on acme/site#12, the same ticket, finds it spent and spends nothing."""
    ports = renamed_world(Rules("blob-sha-1"))
    await say(ports, "/publish")
    await say(ports, "/status", by=CAROL)
    await rename(ports)
    await say(ports, "/status", by=CAROL, name=SITE)
    rechecks = {key: n for key, n in ports.budgets.counts.items() if key[1].startswith("recheck:")}
    assert list(rechecks.values()) == [1]


async def test_a_rename_does_not_restart_a_runners_monthly_cost_budget() -> None:
    """`limits.cost_per_runner_month: 1`: carol's delivery on acme/web#12 reports $1.50; after the
    rename her `/claim` on acme/site#14 is refused `budget_exhausted` (the month's cost is read
    from her deliveries on the repository's tickets, which the rename moved)."""
    ports = renamed_world(Rules("blob-sha-1", cost_per_runner_month="1"))
    ports.github.add_branch(WEB, "agent/12-fix", "b" * 40)
    ports.github.add_issue(SITE, issue_answer(14, assignees=(RACHEL,)))
    await say(ports, "/publish")
    await say(ports, "/claim", by=CAROL)
    await say(ports, "/deliver branch=agent/12-fix cost=1.50 Done.", by=CAROL)
    delivered = ports.store.ticket(TicketKey(WEB, 12))
    assert delivered is not None and delivered.work is WorkState.DELIVERED
    await rename(ports)
    await ports.dispatch("issue_comment", of(ID, comment(14, "/publish", repository=SITE), SITE))
    await ports.dispatch("issue_comment", of(ID, comment(14, "/claim", author=CAROL, repository=SITE), SITE))
    claimed = ports.store.ticket(TicketKey(SITE, 14))
    assert claimed is not None and claimed.work is WorkState.OPEN
    refusals = [
        a.message.refusal
        for a in ports.store.answers
        if isinstance(a, Reply) and isinstance(a.message, Refused)
    ]
    assert [refusal.code for refusal in refusals] == [RefusalCode.BUDGET_EXHAUSTED]
