"""The accounts seen acting under a login `agents:` lists (`agent_accounts`, `handlers.agents`).

A row is written with the unit of work of the command the account ran, once: a later command
under the same login writes nothing. Rows are never updated; `agents:` decides, when an account
acts, which of its remembered logins still count.
"""

from __future__ import annotations

from sqlalchemy import Connection, select

from app.store.database import insert_for
from app.store.tables import AgentAccountRow, table

agent_accounts = table(AgentAccountRow)


def remember(connection: Connection, installation_id: int, login: str, account_id: int, now: float) -> None:
    """Keep that the account acted under `login` (casefolded) in the installation, unless kept."""
    statement = insert_for(connection)(agent_accounts).values(
        installation_id=installation_id, account_id=account_id, login=login.casefold(), seen_at=now
    )
    connection.execute(statement.on_conflict_do_nothing())


def logins_of(connection: Connection, installation_id: int, account_id: int) -> set[str]:
    """The listed logins the account acted under in the installation (a primary-key range)."""
    rows = connection.execute(
        select(agent_accounts.c.login).where(
            agent_accounts.c.installation_id == installation_id,
            agent_accounts.c.account_id == account_id,
        )
    )
    return {str(login) for (login,) in rows}
