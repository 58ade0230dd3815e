"""Why the repository rail is `blocked`: for each open linked PR, what holds it back.

The rail itself is `policies.rails.integration_state`; this names its reasons so people read
them apart (SPEC *CI waiting to run*): a check that failed, CI that GitHub holds until someone
approves the run (shown as "CI awaiting approval to run", never as a failing check: the rail is
still `blocked`, with that reason), and a head that does not merge into its base (GitHub's
`mergeable: false`, `mergeable_state: dirty`, re-read when the base moves).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from policies.check_facts import holding_back
from policies.rails import PullRequestFact, RailPolicy, Rails, mergeability_of


class BlockReason(StrEnum):
    """What blocks one open linked PR."""

    CHECK_FAILED = "check_failed"
    CI_AWAITING_APPROVAL = "ci_awaiting_approval"
    CONFLICT = "conflict"


@dataclass(frozen=True)
class Block:
    """PR `number` is held back for `reason`; `checks` names the checks behind it, sorted."""

    number: int
    reason: BlockReason
    checks: tuple[str, ...] = ()


def pull_blocks(rails: Rails, pr: PullRequestFact, policy: RailPolicy) -> list[Block]:
    """What holds back one PR at its current head: failed checks, held CI, a conflict."""
    failing, held = holding_back(
        rails.checks.values(), pr.head_sha, policy.required_checks, policy.own_check_name
    )
    blocks = []
    if failing:
        blocks.append(Block(pr.number, BlockReason.CHECK_FAILED, tuple(sorted(failing))))
    if held:
        blocks.append(Block(pr.number, BlockReason.CI_AWAITING_APPROVAL, tuple(sorted(held))))
    answer = mergeability_of(rails, pr)
    if answer is not None and answer.mergeable is False:
        blocks.append(Block(pr.number, BlockReason.CONFLICT))
    return blocks


def blocks(rails: Rails, policy: RailPolicy | None = None) -> list[Block]:
    """Every reason an open linked PR of the ticket is held back, by PR number (empty when none).

    Without `policy` every check but railyard's own counts, as when `checks.required` is empty.
    """
    policy = policy or RailPolicy()
    found: list[Block] = []
    for pr in sorted(rails.pull_requests.values(), key=lambda p: p.number):
        if pr.linked and pr.open:
            found += pull_blocks(rails, pr, policy)
    return found
