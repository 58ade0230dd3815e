"""What the store keeps of the accounts `agents:` names by login (`handlers.agents`): part of
`handlers.ports.Reads` and `UnitOfWork`, kept here so those stay short."""

from __future__ import annotations

from typing import Protocol


class AgentReads(Protocol):
    """The logins an account was seen acting under while `agents:` listed them."""

    async def agent_logins(self, installation_id: int, account_id: int) -> set[str]:
        """The listed logins (casefolded) the account acted under in the installation's
        repositories, whatever its login is now."""


class AgentWrites(Protocol):
    """Remembering which account acted under a login `agents:` lists."""

    async def remember_agent(self, installation_id: int, login: str, account_id: int, now: float) -> None:
        """Keep that the account acted under `login` (casefolded) while a repository of the
        installation listed it; kept once, the first time."""
