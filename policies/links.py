"""Which tickets a pull request's body links (SPEC: "The repository rail", Links).

A link is a keyword followed by a reference to an issue of this repository:

- closing keywords, every form GitHub knows: close, closes, closed, fix, fixes, fixed,
  resolve, resolves, resolved;
- reference keywords, which link without closing: ref, refs, references;

in any case, optionally followed by a colon, then at least one space or tab, then one of
`#12`, `owner/repo#12` or `https://github.com/owner/repo/issues/12`, where owner/repo is
this repository (compared without case). One keyword links one reference: `Fixes #1, fixes
#2` links both, `Fixes #1 and #2` only #1, as on GitHub. A bare `#12` links nothing, and
neither do references in code spans, fenced or indented code, or HTML comments (the
scanner in `policies.markdown_blocks` decides what is code or hidden). Quoted text counts,
and so does text in block-level HTML (`<details>` then `Fixes #12`), which GitHub renders.

A PR's head branch links the tickets whose delivery (or claim) reported that branch only
when the head branch lives in this repository: a fork can name its branch like any
delivered branch, so a fork's branch name links nothing (`same_repository`, by repository id).

Whose links move the rail (`links_move_rail`): a PR whose head is in this repository (only
people with write access can push there), a fork's PR whose author holds any railyard role
in the repository (roles resolved at the edge, passed in), and any PR once it merged (only
someone GitHub lets merge can merge it: the merge is their act). A fork's open PR from an
account without a role only *mentions* the tickets it names: shown on the status comment,
never `pull_request_open` or `blocked`, and its checks never reach the ticket.

What one PR can cost: it names at most `MAX_NAMED_TICKETS` tickets (`capped`), a mention is
recorded once per PR and ticket, and an edit that changes no link records nothing
(`tells_nothing_new`), so editing a PR body neither bumps revisions nor rewrites comments.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime

from policies.markdown_blocks import LineKind, scan_markdown
from policies.rails import PullRequestObserved, Rails, pull_request_fact
from policies.states import IntegrationState

CLOSING_KEYWORDS: tuple[str, ...] = (
    "close",
    "closes",
    "closed",
    "fix",
    "fixes",
    "fixed",
    "resolve",
    "resolves",
    "resolved",
)
REFERENCE_KEYWORDS: tuple[str, ...] = ("ref", "refs", "references")

_MAX_DIGITS = 10
MAX_NAMED_TICKETS = 10
"""How many tickets one PR can link or mention by its body and its Development sidebar together
(GitHub's own limit for an issue's linked pull requests is 10): the lowest numbers count, the
rest are ignored (and logged), so one PR cannot write to a hundred status comments."""
_LINK = re.compile(
    r"(?<![\w-])(?:" + "|".join(CLOSING_KEYWORDS + REFERENCE_KEYWORDS) + r"):?[ \t]+"
    r"(?:"
    r"(?:(?P<slug>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+))?#(?P<number>[0-9]+)"
    r"|https?://(?P<host>[A-Za-z0-9.-]+(?::[0-9]+)?)/(?P<url_slug>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)"
    r"/issues/(?P<url_number>[0-9]+)"
    r")(?!\w)",
    re.IGNORECASE | re.ASCII,
)


def linked_issues(body: str | None, repository: str, *, web_host: str = "github.com") -> frozenset[int]:
    """The issue numbers of `repository` ("owner/repo") that a PR body links by keyword.

    `web_host` is the host of full issue URLs (a GitHub Enterprise Server's host, or
    github.com).
    """
    if not body:
        return frozenset()
    numbers: set[int] = set()
    for line in scan_markdown(body):
        if line.kind in (LineKind.PROSE, LineKind.QUOTE, LineKind.HTML):
            numbers.update(_links_in(line.plain, repository.lower(), web_host.lower()))
    return frozenset(numbers)


def _links_in(text: str, repository: str, web_host: str) -> list[int]:
    found = []
    for match in _LINK.finditer(text):
        if match.group("number") is not None:
            slug, digits = match.group("slug"), match.group("number")
            ours = slug is None or slug.lower() == repository
        else:
            slug, digits = match.group("url_slug"), match.group("url_number")
            ours = slug.lower() == repository and match.group("host").lower() == web_host
        if ours and len(digits) <= _MAX_DIGITS and int(digits) > 0:
            found.append(int(digits))
    return found


def capped(numbers: set[int] | frozenset[int]) -> tuple[frozenset[int], frozenset[int]]:
    """(the tickets a PR names that count, the ones ignored past `MAX_NAMED_TICKETS`): the
    lowest numbers count, so the choice does not depend on where or in what order they appear."""
    ordered = sorted(numbers)
    return frozenset(ordered[:MAX_NAMED_TICKETS]), frozenset(ordered[MAX_NAMED_TICKETS:])


def same_repository(
    head_repository_id: int | None,
    repository_id: int | None,
    *,
    head_repository: str | None,
    repository: str,
) -> bool:
    """Whether a PR's head branch is in the PR's own repository, not in a fork.

    Only then does the head branch name a branch of this repository, so only then can it link a
    ticket by branch (SPEC: Links). GitHub's ids decide (`head.repo.id`, the base's
    `base.repo.id`): a name can be renamed away, passed on, or taken by another repository (a
    fork deleted, the repository transferred into its name), an id never. With the PR's own id
    known, a head without one is not in it: a deleted fork's (`head.repo` is null), or a fork's
    PR stored before railyard kept ids (migration 0025 gave ids only to heads named like their
    PR's repository). Without the PR's own id (stored before 0025 under a name railyard knew no
    id for) the names decide, compared without case as GitHub does: what railyard did before.
    """
    if repository_id is not None:
        return head_repository_id == repository_id
    return head_repository is not None and head_repository.casefold() == repository.casefold()


def links_move_rail(*, head_in_repository: bool, author_has_role: bool, merged: bool) -> bool:
    """Whether a PR's links count for the repository rail, or only mention the tickets.

    A fork's PR from an account without a role cannot move a ticket to `pull_request_open`
    or `blocked` (anyone can open one and fail its checks); its merge still counts.
    """
    return head_in_repository or author_has_role or merged


def tells_nothing_new(rails: Rails, observation: PullRequestObserved, *, edit: bool) -> bool:
    """Whether recording `observation` would change nothing a person or a rail sees, so it is
    not recorded (no event, no new revision, no status comment rewritten):

    - a mention the ticket already shows for this PR: a mention is recorded once per PR and
      ticket, when it first appears (it moves no rail, and the status comment shows no more),
      and once more when its PR closes, so the ticket stops showing a closed PR as mentioning
      it; never again after that (an outsider reopening and closing a PR costs nothing);
    - for an edit of the PR (`edit`: its body or title changed, nothing else can), a state the
      ticket already holds for this PR, apart from the time: only a change of link counts.
    """
    known = rails.pull_requests.get(observation.number)
    if known is None:
        return False
    fact = pull_request_fact(observation)
    if fact.mention and known.mention:
        return not (known.open and not fact.open)
    if not edit or fact.updated_at < known.updated_at:
        return False
    same_time = replace(
        fact,
        updated_at=known.updated_at,
        merged_while_linked=known.merged_while_linked or fact.merged_while_linked,
        merge_commit=known.merge_commit or fact.merge_commit,
    )
    return same_time == known


SHOWING_OPEN_PULLS = (IntegrationState.PULL_REQUEST_OPEN, IntegrationState.BLOCKED)
"""The repository rail's states while a linked PR is open: only such tickets can show one."""


def shows_pull_open(rails: Rails, number: int, before: datetime) -> bool:
    """Whether the rails hold PR `number` linked and open as of a time before `before`.

    A PR's stored links are those of the event processed last, while the rails keep a link at a
    tie (`updated_at` has whole seconds): a ticket edited out of the body in the second the PR
    opened still shows it open, though the PR no longer names it. The PR's close (a later time)
    tells such a ticket too, so it ends as if the events had come in any other order."""
    fact = rails.pull_requests.get(number)
    return fact is not None and fact.linked and fact.open and fact.updated_at < before
