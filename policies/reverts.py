"""Reverts (SPEC *Organization defaults and GitHub's own views*): a merged PR that reverts a
ticket's merge records `reverted` on the ticket.

A PR reverts a ticket's merge when it names the ticket's merged PR as GitHub's revert button
writes it (title `Revert "<title>"`, body `Reverts owner/repo#34`; `Reverts #34` too), or when
its merge commit's message says `This reverts commit <sha>.` (what `git revert` writes) of the
ticket's merge commit. Only this repository counts: `Reverts other/repo#34` names another
repository's PR, and text in code spans, code blocks or HTML comments names nothing.

What it records, and what it does not move: `reverted` is a notice from the repository, so the
work rail is untouched (an accepted ticket stays accepted: the acceptance was of the work, the
revert is a later decision about the code), and the repository rail stays `merged`, which SPEC
makes final; the ticket keeps which PR reverted which (`Ticket.reverts`), the status comment
shows "merged in #34, reverted by #40", and the `attention` code `reverted` asks a person to
decide what happens to the work. Recorded once per (merged PR, reverting PR): a redelivery or
the same revert seen twice records nothing more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from policies.markdown_blocks import LineKind, scan_markdown
from policies.model import Ticket

_REVERTS = re.compile(
    r"(?<![\w-])reverts[ \t]+(?:(?P<slug>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+))?#(?P<number>[0-9]{1,10})(?!\w)",
    re.IGNORECASE | re.ASCII,
)
_REVERTS_COMMIT = re.compile(r"(?<![\w-])This reverts commit (?P<sha>[0-9a-f]{40})\b", re.ASCII)
REVERT_TITLE = re.compile(r"^\s*revert\b", re.IGNORECASE)
"""A title `git revert` or GitHub's revert button writes: only then is the merge commit read."""
MAX_REVERTED = 10
"""How many PRs or commits one revert can name (the lowest numbers, the first commits count)."""


def reverted_pulls(body: str | None, repository: str) -> frozenset[int]:
    """The PR numbers of `repository` ("owner/repo") a PR body says it reverts, at most `MAX_REVERTED`."""
    if not body:
        return frozenset()
    found: set[int] = set()
    for line in scan_markdown(body):
        if line.kind not in (LineKind.PROSE, LineKind.QUOTE, LineKind.HTML):
            continue
        for match in _REVERTS.finditer(line.plain):
            slug = match.group("slug")
            number = int(match.group("number"))
            if (slug is None or slug.casefold() == repository.casefold()) and number > 0:
                found.add(number)
    return frozenset(sorted(found)[:MAX_REVERTED])


def reverted_commits(message: str | None) -> tuple[str, ...]:
    """The commits a commit message says it reverts (`This reverts commit <sha>.`), in order."""
    shas = dict.fromkeys(m.group("sha") for m in _REVERTS_COMMIT.finditer(message or ""))
    return tuple(shas)[:MAX_REVERTED]


@dataclass(frozen=True)
class RevertObserved:
    """PR `by` (its URL `url`) merged, reverting the ticket's merged PR `reverts`."""

    reverts: int
    by: int
    url: str = ""


def revert_operation_id(repository: str, number: int, reverts: int, by: int) -> str:
    """One operation per ticket and (reverted PR, reverting PR): a redelivery is the same one."""
    return f"revert:{repository.casefold()}#{number}:{reverts}:{by}"


def revert_data(ticket: Ticket, notice: RevertObserved) -> dict[str, object] | None:
    """The data of `reverted` when `notice.reverts` merged while it linked the ticket and this
    revert is not recorded yet; None when there is nothing to record."""
    merged = ticket.rails.pull_requests.get(notice.reverts)
    if merged is None or not merged.merged_while_linked or (notice.reverts, notice.by) in ticket.reverts:
        return None
    return {
        "pull_request": notice.reverts,
        "reverted_by": notice.by,
        "url": notice.url,
        "merge_commit": merged.merge_commit,
        "work": ticket.work.value if ticket.work else None,
    }


def with_revert(reverts: tuple[tuple[int, int], ...], reverted: int, by: int) -> tuple[tuple[int, int], ...]:
    """The ticket's (reverted PR, reverting PR) pairs with one more, sorted and without repeats."""
    return tuple(sorted({*reverts, (reverted, by)}))
