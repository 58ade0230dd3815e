"""`handlers.ports.Configs`: the rules a test gives each repository, and what handlers asked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.github.config_loader import RepoFile
from handlers.ports import Rules

DEFAULT_RULES = Rules(policy_version="blob-sha-1")


@dataclass(frozen=True)
class Load:
    """One `load` a handler made."""

    installation_id: int
    repository: str
    fresh: bool


@dataclass
class FakeConfigs:
    """The rules in force per repository (case-insensitive), `default` for any other."""

    by_repository: Mapping[str, Rules] = field(default_factory=dict)
    default: Rules = DEFAULT_RULES
    loads: list[Load] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)

    async def load(self, installation_id: int, repository: str, *, fresh: bool = False) -> Rules:
        """The rules given for the repository."""
        self.loads.append(Load(installation_id, repository, fresh))
        folded = {name.casefold(): rules for name, rules in self.by_repository.items()}
        return folded.get(repository.casefold(), self.default)

    def forget(self, repository: str) -> None:
        """Note that the handler asked for the file to be read again."""
        self.forgotten.append(repository)


@dataclass
class FakeDefaultBranches:
    """The `.github/railyard.yml` of each repository's default branch (case-insensitive names),
    as `app.github.config_loader.ConfigLoader` fetches it; counts what was asked."""

    files: dict[str, RepoFile] = field(default_factory=dict)
    fetches: list[str] = field(default_factory=list)

    def put(self, repository: str, sha: str, text: str) -> None:
        """The repository's default branch now holds this file (blob `sha`)."""
        self.files[repository.casefold()] = RepoFile(sha, text)

    async def fetch(self, installation_id: int, repository: str) -> RepoFile | None:
        """The file, or None where the repository or its file does not exist (GitHub's 404)."""
        self.fetches.append(repository)
        return self.files.get(repository.casefold())
