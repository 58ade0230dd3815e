"""The per-repository configuration (SPEC: "Roles and configuration"): loading, fetching and caching."""

from __future__ import annotations

import asyncio

from app.github.config import ParsedFile, RepositoryConfig, RoleEntry, parse_file
from app.github.config_loader import ConfigLoader, LoadedConfig, RepoFile, shown_error
from policies.states import Role
from tests.fakes import StillClock
from tests.unit.spec_config import SPEC_EXAMPLE

# -- loading -----------------------------------------------------------------------------


class FakeRepository:
    """A default branch whose `.github/railyard.yml` the test can change; counts fetches."""

    def __init__(self, file: RepoFile | None) -> None:
        self.file = file
        self.fetches: list[tuple[int, str]] = []

    async def fetch(self, installation_id: int, repository: str) -> RepoFile | None:
        """Return the current file, recording who asked."""
        self.fetches.append((installation_id, repository))
        return self.file


class CountingParser:
    """`parse_file`, counting what it was asked to parse."""

    def __init__(self) -> None:
        self.texts: list[str | None] = []

    def __call__(self, text: str | None) -> ParsedFile:
        """Parse `text`, recording it."""
        self.texts.append(text)
        return parse_file(text)


def load_times(loader: ConfigLoader, times: int, *, fresh: bool = True) -> list[LoadedConfig]:
    """Load the configuration of acme/app `times` times (read now each time, as commands do)."""

    async def run() -> list[LoadedConfig]:
        return [await loader.load(7, "acme/app", fresh=fresh) for _ in range(times)]

    return asyncio.run(run())


def test_no_file_loads_defaults_with_version_default() -> None:
    """Without a file (and none in the owner's `.github` repository) the defaults are in force
    under policy version "default"."""
    repository = FakeRepository(None)
    loaded = load_times(ConfigLoader(repository.fetch), 1)[0]

    assert (loaded.config, loaded.policy_version, loaded.error) == (
        RepositoryConfig.default(),
        "default",
        None,
    )
    assert repository.fetches == [(7, "acme/app"), (7, "acme/.github")]


def test_an_empty_file_loads_defaults_under_its_sha() -> None:
    """An empty file means the defaults; the version is still its blob sha."""
    loaded = load_times(ConfigLoader(FakeRepository(RepoFile("e69de29", "")).fetch), 1)[0]

    assert (loaded.config, loaded.policy_version, loaded.error) == (
        RepositoryConfig.default(),
        "e69de29",
        None,
    )


def test_loader_fetches_every_time_but_parses_each_sha_once() -> None:
    """Every fresh load (a command) asks GitHub for the file; an unchanged blob sha is not parsed again."""
    repository = FakeRepository(RepoFile("sha-1", SPEC_EXAMPLE))
    parser = CountingParser()
    loader = ConfigLoader(repository.fetch, parse=parser)

    loaded = load_times(loader, 3)

    assert repository.fetches == [(7, "acme/app")] * 3
    assert parser.texts == [SPEC_EXAMPLE]
    assert {item.policy_version for item in loaded} == {"sha-1"}
    assert loaded[0].config.roles[Role.RUNNER][1] == RoleEntry(login="coder-bot[bot]")


def test_loader_parses_again_when_the_sha_changes() -> None:
    """A new blob sha is a new policy version, parsed once; going back hits the cache."""
    repository = FakeRepository(RepoFile("sha-1", "limits:\n  commands_per_hour: 5\n"))
    parser = CountingParser()
    loader = ConfigLoader(repository.fetch, parse=parser)

    first = load_times(loader, 2)[-1]
    repository.file = RepoFile("sha-2", "limits:\n  commands_per_hour: 9\n")
    second = load_times(loader, 2)[-1]
    repository.file = RepoFile("sha-1", "limits:\n  commands_per_hour: 5\n")
    third = load_times(loader, 1)[-1]

    assert (first.policy_version, first.config.limits.commands_per_hour) == ("sha-1", 5)
    assert (second.policy_version, second.config.limits.commands_per_hour) == ("sha-2", 9)
    assert third == first
    assert len(parser.texts) == 2


def test_loader_cache_is_bounded() -> None:
    """The least recently used sha is forgotten once the cache is full."""
    repository = FakeRepository(None)
    parser = CountingParser()
    loader = ConfigLoader(repository.fetch, parse=parser, cache_size=2)

    for sha in ("a", "b", "a", "c", "a", "b"):
        repository.file = RepoFile(sha, "")
        load_times(loader, 1)

    # "a" stays hot; "b" is evicted by "c" and parsed again.
    assert len(parser.texts) == 4


def test_a_broken_file_loads_defaults_with_its_error() -> None:
    """A broken file puts the defaults in force, keeps its sha and carries the error to report."""
    repository = FakeRepository(RepoFile("sha-bad", "tickets:\n  lable: ready\n"))
    parser = CountingParser()
    loader = ConfigLoader(repository.fetch, parse=parser)

    loaded = load_times(loader, 2)

    error = "line 2: unknown key: tickets.lable (did you mean label?)"
    assert loaded[0] == LoadedConfig(RepositoryConfig.default(), "sha-bad", error, ("acme/app",))
    assert loaded[1] == loaded[0]
    assert len(parser.texts) == 1


def test_events_and_renders_reuse_a_recent_read_until_it_is_a_minute_old() -> None:
    """Without `fresh`, one read serves for `max_age` seconds; then the file is read again."""
    repository, clock = FakeRepository(RepoFile("sha-1", SPEC_EXAMPLE)), StillClock()
    loader = ConfigLoader(repository.fetch, max_age=60.0, clock=clock)
    load_times(loader, 3, fresh=False)
    assert len(repository.fetches) == 1
    clock.now += 61
    load_times(loader, 1, fresh=False)
    assert len(repository.fetches) == 2


def test_a_push_to_the_default_branch_and_commands_read_the_file_again() -> None:
    """`forget` (a push to the default branch) and `fresh` (a command) never use the recent read."""
    repository = FakeRepository(RepoFile("sha-1", "limits:\n  commands_per_hour: 5\n"))
    loader = ConfigLoader(repository.fetch, clock=StillClock())
    load_times(loader, 1, fresh=False)
    repository.file = RepoFile("sha-2", "limits:\n  commands_per_hour: 9\n")
    assert load_times(loader, 1, fresh=False)[0].policy_version == "sha-1"
    assert load_times(loader, 1, fresh=True)[0].policy_version == "sha-2"
    repository.file = RepoFile("sha-3", "limits:\n  commands_per_hour: 7\n")
    loader.forget("ACME/app")
    assert load_times(loader, 1, fresh=False)[0].config.limits.commands_per_hour == 7


def test_what_a_ticket_shows_of_a_configuration_quotes_only_the_repositorys_own_file() -> None:
    """The replies and the status comment (`shown_error`) quote the repository's own problems;
    another repository's file (the organization's, `_extends`'s, or the two merged) is named with
    a count, its words never shown: it may be a private repository's."""
    error = "\n".join(
        [
            "line 3: unknown key: tickets.lable (did you mean label?)",
            "acme/payroll: line 2: roles.reviewer[0]: 'ceo salary is 412000' is not a login",
            "merged with acme/payroll: claims.max_silence_minutes: must be positive",
            "... and 4 more problems",
        ]
    )

    shown = shown_error(error)

    assert shown is not None and "412000" not in shown and "max_silence" not in shown
    assert shown.splitlines() == [
        "line 3: unknown key: tickets.lable (did you mean label?)",
        "... and 4 more problems",
        "the file of acme/payroll, which this one extends, cannot be used with it (2 problem(s) there, "
        "not quoted here; `railyard validate` or the status comment of a ticket there shows them)",
    ]
    assert shown_error(None) is None
