"""`deployment` and `deployment_status` events through the handlers and the in-memory fakes."""

from __future__ import annotations

from dataclasses import replace

from policies.states import DeploymentState
from tests.fakes.configs import DEFAULT_RULES, FakeConfigs
from tests.fakes.github import issue_answer, pull_answer
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import REPOSITORY, deployment_status, pull_request
from tests.unit.handlers.steps import RACHEL, say, ticket, world

DEPLOYED = "d" * 40


async def merged(ports: FakePorts, number: int, pull: int, merge: str) -> None:
    """Publish ticket `number` and merge a PR that fixes it with merge commit `merge`."""
    ports.github.add_issue(REPOSITORY, issue_answer(number, assignees=(RACHEL,)))
    await say(ports, "/publish", number=number)
    answer = pull_answer(
        REPOSITORY, pull, body=f"Fixes #{number}", state="closed", merged_at="2026-11-30T10:30:00Z",
        merge_commit=merge, updated_at="2026-11-30T10:30:00Z", head_ref=f"fix-{number}",
    )  # fmt: skip
    await ports.dispatch("pull_request", pull_request("closed", answer), delivery_id=f"merge-{pull}")


async def test_one_deployment_moves_every_merged_ticket_it_contains() -> None:
    """A successful deployment deploys each merged ticket whose merge it contains, and no other."""
    ports = world()
    await merged(ports, 12, 40, "1" * 40)
    await merged(ports, 13, 41, "2" * 40)
    await merged(ports, 14, 42, "3" * 40)
    ports.ancestry.pairs |= {("1" * 40, DEPLOYED), ("2" * 40, DEPLOYED)}
    await ports.dispatch("deployment_status", deployment_status(7, DEPLOYED, "success"))
    states = [ticket(ports, n).rails.deployments["production"] for n in (12, 13, 14)]
    assert states == [DeploymentState.DEPLOYED, DeploymentState.DEPLOYED, DeploymentState.NOT_DEPLOYED]


async def test_a_deployment_in_progress_is_deploying_then_failed() -> None:
    """A deployment's statuses move a ticket it contains through deploying to failed."""
    ports = world()
    await merged(ports, 12, 40, "1" * 40)
    ports.ancestry.pairs.add(("1" * 40, DEPLOYED))
    await ports.dispatch("deployment_status", deployment_status(7, DEPLOYED, "in_progress", status_id=71))
    assert ticket(ports).rails.deployments["production"] is DeploymentState.DEPLOYING
    await ports.dispatch("deployment_status", deployment_status(7, DEPLOYED, "failure", status_id=72))
    assert ticket(ports).rails.deployments["production"] is DeploymentState.FAILED


async def test_a_deployment_to_an_environment_not_configured_touches_no_ticket() -> None:
    """A per-PR preview environment is no rail (`environments: [production]`): its statuses leave
    a merged ticket's record, status comment and check as they were, and spend no compare; the
    deployment is still held (the deployment gate reads the environments it protects there)."""
    ports = world()
    await merged(ports, 12, 40, "1" * 40)
    revision = ticket(ports).revision
    answers, compared = len(ports.store.answers), len(ports.ancestry.compared)
    for n in range(1, 4):
        preview = deployment_status(100 + n, str(n) * 40, "success", environment="preview-pr-41")
        await ports.dispatch("deployment_status", preview, delivery_id=f"preview-{n}")
    assert ticket(ports).revision == revision
    assert (len(ports.store.answers), len(ports.ancestry.compared)) == (answers, compared)
    assert len(ports.store.records.held_for(REPOSITORY, "deployment:preview-pr-41")) == 3


async def test_a_second_merged_pull_request_is_not_reported_deployed_by_a_deployment_without_it() -> None:
    """#45 (`Fixes #12`) merges and deployment 7 ships it; then the follow-up #40 (`Refs #12`)
    merges, and 7 lacks it: the ticket is not deployed (its change has not all reached users)
    until deployment 8, which contains both merges."""
    ports = world()
    await merged(ports, 12, 45, "4" * 40)
    ports.ancestry.pairs.add(("4" * 40, DEPLOYED))
    await ports.dispatch("deployment_status", deployment_status(7, DEPLOYED, "success"), delivery_id="d7")
    assert ticket(ports).rails.deployments["production"] is DeploymentState.DEPLOYED
    follow_up = pull_answer(
        REPOSITORY, 40, body="Refs #12", state="closed", merged_at="2026-11-30T11:00:00Z",
        merge_commit="5" * 40, updated_at="2026-11-30T11:00:00Z", head_ref="part-2",
    )  # fmt: skip
    await ports.dispatch("pull_request", pull_request("closed", follow_up), delivery_id="merge-40")
    assert ticket(ports).rails.deployments["production"] is DeploymentState.NOT_DEPLOYED
    both = "8" * 40
    ports.ancestry.pairs |= {("4" * 40, both), ("5" * 40, both)}
    await ports.dispatch("deployment_status", deployment_status(8, both, "success"), delivery_id="d8")
    assert ticket(ports).rails.deployments["production"] is DeploymentState.DEPLOYED


async def test_the_headline_follows_the_environments_configured_now() -> None:
    """#12 merged under the default `[production]`; the file now says `[prod]` (the repository's
    real environment). A deployment to prod ships it: the headline, the status JSON and the
    attention flags read prod, not production, which nobody configures any more."""
    ports = world()
    await merged(ports, 12, 40, "1" * 40)
    ports.configs = FakeConfigs(default=replace(DEFAULT_RULES, environments=("prod",)))
    ports.ancestry.pairs.add(("1" * 40, DEPLOYED))
    await ports.dispatch("deployment_status", deployment_status(7, DEPLOYED, "success", environment="prod"))
    rails = ticket(ports).rails
    assert dict(rails.deployments) == {"prod": DeploymentState.DEPLOYED}
    assert rails.deployment is DeploymentState.DEPLOYED
