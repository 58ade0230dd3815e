"""The newest merge-queue commit GitHub built for each open PR (`pull_requests.queue_head`).

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


def note_queue_head(connection: Connection, repository: str, number: int, head_sha: str) -> None:
    """The newest merge-queue commit GitHub built for the PR (`merge_group` `checks_requested`)."""
    where = (pull_requests.c.repository == repository.casefold(), pull_requests.c.number == number)
    connection.execute(update(pull_requests).where(*where).values(queue_head=head_sha))


def queued_checks(connection: Connection, installation_id: int, ticket: Ticket) -> list[Effect]:
    """The check on the merge-queue commit of each open PR that links the ticket: GitHub merges a
    queued PR on that commit's checks, so a change to the ticket while it waits (a `/reopen`, a
    lapse) writes it again, as it writes the PR's own."""
    numbers = [n for n, pr in ticket.rails.pull_requests.items() if pr.open and pr.linked]
    if not numbers:
        return []
    repository = ticket.key.repository
    rows = connection.execute(
        select(pull_requests.c.number, pull_requests.c.queue_head, pull_requests.c.head_sha).where(
            pull_requests.c.repository == repository.casefold(),
            pull_requests.c.number.in_(numbers),
            pull_requests.c.open.is_(True),
            pull_requests.c.queue_head.is_not(None),
        )
    )
    return [
        check_run(installation_id, repository, row.number, row.queue_head, merge_group=True) for row in rows
    ]
