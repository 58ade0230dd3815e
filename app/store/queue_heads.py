"""The merge-queue commits GitHub built for each open PR, the last few (`pull_requests.queue_heads`).

GitHub merges a queued PR on the required checks of the queue's commit, not the PR's head: the
`railyard` check there is written when the queue asks (`handlers.merge_queue`), and again with
every change to a ticket the PR links (`queued_checks`, from `app.store.tickets`), so a
`/reopen` or a lapse while the PR waits turns it as it turns the PR's own.
"""

from __future__ import annotations

from sqlalchemy import Connection, select, update

from app.contracts.effect_types import Effect, check_run
from app.store.tables import PullRequestRow, table
from policies.model import Ticket

pull_requests = table(PullRequestRow)


QUEUE_HEADS_KEPT = 5
"""Queue commits kept per PR: GitHub rebuilds a queue's commits as PRs ahead leave it, and a
`checks_requested` may be processed late (a redelivery), so the newest is not the last seen."""


def note_queue_head(connection: Connection, repository: str, number: int, head_sha: str) -> None:
    """A merge-queue commit GitHub built for the PR (`merge_group` `checks_requested`)."""
    where = (pull_requests.c.repository == repository.casefold(), pull_requests.c.number == number)
    # The row locked while the list is read and written (PostgreSQL; SQLite's writes take turns):
    # two queue commits noted at once both stay.
    kept = connection.execute(select(pull_requests.c.queue_heads).where(*where).with_for_update()).scalar()
    earlier = [h for h in kept or [] if h != head_sha][-(QUEUE_HEADS_KEPT - 1) :]
    heads = [*earlier, head_sha]
    connection.execute(update(pull_requests).where(*where).values(queue_heads=heads))


def queued_checks(connection: Connection, installation_id: int, ticket: Ticket) -> list[Effect]:
    """The check on the merge-queue commits of each open PR that links the ticket: GitHub merges
    a queued PR on its queue commit's checks, so a change to the ticket while it waits (a
    `/reopen`, a lapse) writes them again, as it writes the PR's own."""
    numbers = [n for n, pr in ticket.rails.pull_requests.items() if pr.open and pr.linked]
    if not numbers:
        return []
    repository = ticket.key.repository
    rows = connection.execute(
        select(pull_requests.c.number, pull_requests.c.queue_heads).where(
            pull_requests.c.repository == repository.casefold(),
            pull_requests.c.number.in_(numbers),
            pull_requests.c.open.is_(True),
        )
    )
    return [
        check_run(installation_id, repository, row.number, head, merge_group=True)
        for row in rows
        for head in row.queue_heads or []
    ]
