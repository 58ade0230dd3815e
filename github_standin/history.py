"""What the GitHub stand-in knows of commits' ancestry, deployments and custom deployment
protection rules: the commit graph a comparison walks, each deployment with its statuses (newest
first, as GitHub lists them), and each rule a run waits on with the one answer it took."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from github_standin.common import SEEDED_AT, Json


@dataclass
class Deployment:
    """A deployment of a commit to an environment."""

    id: int
    sha: str
    environment: str = "production"
    ref: str = "main"
    creator: str = "github-actions[bot]"
    created_at: datetime = SEEDED_AT


@dataclass
class DeploymentStatus:
    id: int
    deployment_id: int
    state: str  # error, failure, inactive, in_progress, queued, pending, success (and waiting)
    created_at: datetime = SEEDED_AT


@dataclass
class ProtectionRule:
    """A custom deployment protection rule of the app that run `run_id` waits on for `environment`.

    `answer` is the review GitHub took (`environment_name`, `state`, `comment`); once it has one,
    the rule no longer waits and GitHub refuses another (422). Comments without a state are kept
    in `comments` and decide nothing."""

    repository: str
    run_id: int
    environment: str
    answer: Json | None = None
    comments: list[str] = field(default_factory=list)


@dataclass
class History:
    """Ancestry (commit -> parents, per repository), deployments and protection rules."""

    parents: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    deployments: dict[str, list[Deployment]] = field(default_factory=dict)  # repository -> oldest first
    statuses: dict[int, list[DeploymentStatus]] = field(default_factory=dict)  # deployment id -> oldest first
    rules: list[ProtectionRule] = field(default_factory=list)

    def add_line(self, repository: str, *shas: str, parent: str | None = None) -> None:
        """Commits, oldest first, each the parent of the next (the first's parent is `parent`)."""
        for before, sha in zip((parent, *shas), shas, strict=False):
            self.parents[(repository.casefold(), sha)] = (before,) if before else ()

    def add_merge(self, repository: str, sha: str, *parents: str) -> None:
        """A merge commit with these parents (the first is the branch merged into)."""
        self.parents[(repository.casefold(), sha)] = parents

    def knows(self, repository: str, sha: str) -> bool:
        return (repository.casefold(), sha) in self.parents

    def ancestors(self, repository: str, sha: str) -> set[str]:
        """`sha` and every commit it descends from."""
        seen: set[str] = set()
        todo = [sha]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo += self.parents.get((repository.casefold(), current), ())
        return seen

    def compare(self, repository: str, base: str, head: str) -> tuple[str, list[str], int, str | None]:
        """`base...head` as GitHub answers it: the status, the commits head has and base does
        not (oldest first, as the API lists them), how many base has that head does not, and
        the merge base (the newest commit both have)."""
        of_base, of_head = self.ancestors(repository, base), self.ancestors(repository, head)
        ahead = sorted(of_head - of_base, key=lambda sha: len(self.ancestors(repository, sha)))
        behind = len(of_base - of_head)
        common = of_base & of_head
        merge_base = max(common, key=lambda sha: len(self.ancestors(repository, sha)), default=None)
        status = {(False, False): "identical", (True, False): "ahead", (False, True): "behind"}.get(
            (bool(ahead), bool(behind)), "diverged"
        )
        return status, ahead, behind, merge_base

    def deployments_of(self, repository: str) -> list[Deployment]:
        return self.deployments.setdefault(repository.casefold(), [])

    def deployment(self, repository: str, deployment_id: int) -> Deployment | None:
        return next((d for d in self.deployments_of(repository) if d.id == deployment_id), None)

    def add_deployment(self, repository: str, deployment: Deployment) -> Deployment:
        """Record a deployment (once per id)."""
        if self.deployment(repository, deployment.id) is None:
            self.deployments_of(repository).append(deployment)
        return deployment

    def add_status(self, status: DeploymentStatus) -> None:
        self.statuses.setdefault(status.deployment_id, []).append(status)

    def request_rule(self, repository: str, run_id: int, environment: str) -> ProtectionRule:
        """Run `run_id` waits on the app's rule for `environment` (again, after a re-run)."""
        rule = ProtectionRule(repository.casefold(), run_id, environment)
        self.rules.append(rule)
        return rule

    def rules_of(self, repository: str, run_id: int) -> list[ProtectionRule]:
        """The rules run `run_id` of `repository` waited or waits on, oldest first."""
        return [r for r in self.rules if r.repository == repository.casefold() and r.run_id == run_id]

    def answers(self, repository: str, run_id: int) -> list[Json]:
        """Every review the run's rules took, oldest first."""
        return [rule.answer for rule in self.rules_of(repository, run_id) if rule.answer is not None]
