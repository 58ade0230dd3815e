"""The per-repository configuration (SPEC: "Roles and configuration")."""

from __future__ import annotations

import asyncio

import pytest

from app.github.config import (
    ConfigError,
    ConfigLoader,
    LoadedConfig,
    RepoFile,
    RepositoryConfig,
    RoleEntry,
    UnlinkedConclusion,
    parse_repository_config,
)
from policies.rails import RailPolicy
from policies.states import Role, SelfVerification
from tests.fakes import StillClock

SPEC_EXAMPLE = """\
roles:                       # "@org/team-slug" = GitHub team; a bare name = a login
  requester: ["@acme/product"]
  task_owner: ["@acme/leads"]
  runner: ["@acme/agents", "coder-bot[bot]"]
  reviewer: ["@acme/reviewers"]
  repository_maintainer: ["@acme/maintainers"]
  release_owner: ["@acme/release"]
high_risk:
  labels: ["risk:high"]      # tickets with one of these labels need independent review
self_verification: explicit  # explicit | never
tickets:
  label: null                # issues opened/labelled with this label become draft tickets
  no_code_label: "no-code"
  branch_pattern: null       # e.g. "agent/{number}-*": a claimed ticket's branches
claims:
  max_silence_minutes: 240
limits:
  commands_per_hour: 30
checks:
  required: []               # check names that can block a PR
  unlinked: success          # success | action_required
deployments:
  environments: ["production"]
"""


def team(org: str, slug: str) -> RoleEntry:
    """A team entry, as `@org/slug` parses."""
    return RoleEntry(org=org, slug=slug)


def problem_of(text: str) -> str:
    """The ConfigError message parsing `text` raises."""
    with pytest.raises(ConfigError) as caught:
        parse_repository_config(text)
    return caught.value.message


# -- parsing ---------------------------------------------------------------------------


def test_spec_example_parses_to_its_values() -> None:
    """SPEC's full example gives every role its entries and every setting its value."""
    config = parse_repository_config(SPEC_EXAMPLE)

    assert config.roles == {
        Role.REQUESTER: (team("acme", "product"),),
        Role.TASK_OWNER: (team("acme", "leads"),),
        Role.RUNNER: (team("acme", "agents"), RoleEntry(login="coder-bot[bot]")),
        Role.REVIEWER: (team("acme", "reviewers"),),
        Role.REPOSITORY_MAINTAINER: (team("acme", "maintainers"),),
        Role.RELEASE_OWNER: (team("acme", "release"),),
    }
    assert config.high_risk.labels == ("risk:high",)
    assert config.self_verification is SelfVerification.EXPLICIT
    assert config.tickets.label is None
    assert config.tickets.no_code_label == "no-code"
    assert config.tickets.branch_pattern is None
    assert config.claims.max_silence_minutes == 240
    assert config.limits.commands_per_hour == 30
    assert config.checks.required == ()
    assert config.checks.unlinked is UnlinkedConclusion.SUCCESS
    assert config.deployments.environments == ("production",)


def test_spec_example_otherwise_spells_out_the_defaults() -> None:
    """Apart from roles and its high-risk label, the example spells out SPEC's defaults."""
    config = parse_repository_config(SPEC_EXAMPLE)
    rest = config.model_copy(update={"roles": {}, "high_risk": RepositoryConfig().high_risk})

    assert rest == RepositoryConfig.default()


def test_non_default_values_are_read() -> None:
    """Every setting takes the value the file gives it."""
    config = parse_repository_config(
        "self_verification: never\n"
        "tickets: {label: railyard, no_code_label: docs, branch_pattern: 'agent/{number}-*'}\n"
        "claims: {max_silence_minutes: 60}\n"
        "limits: {commands_per_hour: 5}\n"
        "checks: {required: [build, lint], unlinked: action_required}\n"
        "deployments: {environments: [staging, production]}\n"
    )

    assert config.self_verification is SelfVerification.NEVER
    assert config.tickets.label == "railyard"
    assert config.tickets.no_code_label == "docs"
    assert config.tickets.branch_pattern == "agent/{number}-*"
    assert config.claims.max_silence_minutes == 60
    assert config.limits.commands_per_hour == 5
    assert config.checks.required == ("build", "lint")
    assert config.checks.unlinked is UnlinkedConclusion.ACTION_REQUIRED
    assert config.deployments.environments == ("staging", "production")


@pytest.mark.parametrize("text", [None, "", "   \n\t\n", "# only a comment\n", "---\n"])
def test_no_file_or_an_empty_file_gives_the_defaults(text: str | None) -> None:
    """A missing file, an empty one or one with only comments means SPEC's defaults."""
    assert parse_repository_config(text) == RepositoryConfig.default()


def test_defaults_are_specs() -> None:
    """The defaults are SPEC's, and name no role, so every role falls back to permissions."""
    config = RepositoryConfig.default()

    assert config.roles == {}
    assert config.high_risk.labels == ()
    assert config.self_verification is SelfVerification.EXPLICIT
    assert (config.tickets.label, config.tickets.no_code_label) == (None, "no-code")
    assert config.tickets.branch_pattern is None
    assert config.claims.max_silence_minutes == 240
    assert config.limits.commands_per_hour == 30
    assert config.checks.required == ()
    assert config.checks.unlinked is UnlinkedConclusion.SUCCESS
    assert config.deployments.environments == ("production",)


def test_a_missing_role_is_distinct_from_an_empty_one() -> None:
    """A role left out is absent (permission fallback); `[]` is present and names nobody."""
    config = parse_repository_config("roles:\n  runner: []\n")

    assert config.roles == {Role.RUNNER: ()}
    assert Role.REVIEWER not in config.roles


def test_an_empty_section_reads_as_its_defaults() -> None:
    """A section whose lines are all commented out (YAML null) keeps its defaults."""
    config = parse_repository_config("roles:\ntickets:\n  # label: railyard\n")

    assert config == RepositoryConfig.default()


def test_config_is_frozen() -> None:
    """A parsed configuration cannot be changed in place."""
    config = RepositoryConfig.default()

    with pytest.raises(ValueError, match="frozen"):
        config.limits = config.limits  # type: ignore[misc]


# -- role entries ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@acme/agents", RoleEntry(org="acme", slug="agents")),
        ("@acme-corp/release_team", RoleEntry(org="acme-corp", slug="release_team")),
        ("octocat", RoleEntry(login="octocat")),
        ("coder-bot[bot]", RoleEntry(login="coder-bot[bot]")),
        ("  alice  ", RoleEntry(login="alice")),
    ],
)
def test_role_entries_are_teams_or_logins(text: str, expected: RoleEntry) -> None:
    """`@org/team-slug` is a team, a bare name (bots included) is a login."""
    entry = RoleEntry.parse(text)

    assert entry == expected
    assert entry.is_team == (expected.slug is not None)
    assert str(entry) == text.strip()


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("@acme", "a team is written @org/team-slug"),
        ("@acme/", "a team is written @org/team-slug"),
        ("acme/agents", "a team starts with @"),
        ("@acme/ agents", "it contains a space"),
        ("alice bob", "it contains a space"),
        ("", "an entry is empty"),
        ("   ", "an entry is empty"),
        ("@acme/agents/x", "a team is written @org/team-slug"),
        ("-alice", "is not a login or @org/team"),
    ],
)
def test_malformed_role_entries_are_rejected(text: str, hint: str) -> None:
    """An entry that is neither a login nor `@org/team-slug` is refused with a reason."""
    with pytest.raises(ValueError, match=r"a team is written|starts with|space|empty|is not a"):
        RoleEntry.parse(text)
    assert hint in problem_of(f"roles:\n  runner: [{text!r}]\n")


def test_a_role_entry_is_either_a_login_or_a_team() -> None:
    """Building an entry with both or neither form, or half a team, is refused."""
    for fields in ({}, {"login": "a", "org": "b", "slug": "c"}, {"org": "acme"}, {"slug": "x"}):
        with pytest.raises(ValueError, match="either a login or"):
            RoleEntry(**fields)


# -- errors ------------------------------------------------------------------------------


def test_a_bad_entry_is_reported_at_its_index() -> None:
    """The message names the role and the position of the bad entry, as written."""
    message = problem_of('roles:\n  runner: ["@acme/agents", "@acme"]\n')

    assert message == (
        "roles.runner[1]: '@acme' is not a login or @org/team (a team is written @org/team-slug)"
    )


def test_unparseable_yaml_names_the_line() -> None:
    """YAML that does not parse is reported with its line number."""
    message = problem_of("limits:\n  commands_per_hour: 30\n  oops: a: b\n")

    assert message.startswith("line 3: could not parse YAML: ")


def test_an_unclosed_list_names_the_line() -> None:
    """An unclosed flow list is reported, not raised as a YAML exception."""
    assert problem_of("checks:\n  required: [build\n").startswith("line 3: could not parse YAML")


@pytest.mark.parametrize(
    ("text", "shown"),
    [("- a\n- b\n", "a list"), ("just words\n", "'just words'"), ("42\n", "42")],
)
def test_a_document_that_is_not_a_mapping_is_refused(text: str, shown: str) -> None:
    """The file must be a mapping; a list or a scalar is refused, saying what it was."""
    assert problem_of(text) == f"the file must be a mapping of keys to values, not {shown}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tickets:\n  lable: ready\n", "unknown key: tickets.lable"),
        ("deployment:\n  environments: []\n", "unknown key: deployment"),
        ("checks:\n  required: []\n  unlinked: success\n  extra: 1\n", "unknown key: checks.extra"),
        ("1: x\n", "unknown key: 1"),
    ],
)
def test_unknown_keys_are_errors(text: str, message: str) -> None:
    """Keys SPEC does not name are refused, at the top level and inside sections."""
    assert problem_of(text) == message


def test_an_unknown_role_is_an_error() -> None:
    """A misspelt role is refused, and the message lists the roles there are."""
    message = problem_of("roles:\n  runnr: []\n")

    assert message.startswith("unknown role: roles.runnr (roles are requester, task_owner, runner,")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "limits:\n  commands_per_hour: lots\n",
            "limits.commands_per_hour: expected a whole number, got 'lots'",
        ),
        (
            "limits:\n  commands_per_hour: 1.5\n",
            "limits.commands_per_hour: expected a whole number, got 1.5",
        ),
        (
            "limits:\n  commands_per_hour: true\n",
            "limits.commands_per_hour: expected a whole number, got true",
        ),
        (
            "claims:\n  max_silence_minutes: 0\n",
            "claims.max_silence_minutes: must be greater than 0, got 0",
        ),
        (
            "self_verification: sometimes\n",
            "self_verification: expected 'explicit' or 'never', got 'sometimes'",
        ),
        (
            "checks:\n  unlinked: failure\n",
            "checks.unlinked: expected 'success' or 'action_required', got 'failure'",
        ),
        ("checks:\n  required: build\n", "checks.required: expected a list, got 'build'"),
        ("tickets:\n  label: 2024\n", "tickets.label: expected a string, got 2024"),
        ("tickets:\n  no_code_label: ''\n", "tickets.no_code_label: must not be empty"),
        ("high_risk: [risk]\n", "high_risk: expected a mapping of keys to values, got a list"),
        (
            "roles:\n  reviewer:\n",
            "roles.reviewer: expected a list, got null (write [] for nobody)",
        ),
        ("roles:\n  runner: [42]\n", "roles.runner[0]: expected a login or @org/team, got 42"),
    ],
)
def test_wrong_types_name_their_location(text: str, message: str) -> None:
    """A value of the wrong type or range is refused with its location and what was found."""
    assert problem_of(text) == message


def test_every_problem_is_listed_one_per_line() -> None:
    """All problems in a file are reported together, not only the first."""
    message = problem_of(
        "roles:\n  runner: ['@acme']\nlimits:\n  commands_per_hour: lots\ntickets:\n  lable: x\n"
    )

    assert message.splitlines() == [
        "roles.runner[0]: '@acme' is not a login or @org/team (a team is written @org/team-slug)",
        "unknown key: tickets.lable",
        "limits.commands_per_hour: expected a whole number, got 'lots'",
    ]


def test_messages_carry_no_traceback_or_pydantic_links() -> None:
    """Messages are short lines fit for a GitHub comment: no traceback, no URL."""
    message = problem_of("limits:\n  commands_per_hour: lots\nfoo: 1\nroles:\n  runner: 7\n")

    assert "Traceback" not in message
    assert "http" not in message
    assert "pydantic" not in message.lower()
    assert all(len(line) < 200 for line in message.splitlines())


def test_long_values_are_shortened() -> None:
    """A long key or value from the file is cut short in the message."""
    message = problem_of(f"{'k' * 300}: 1\n")

    assert len(message) < 80
    assert message.startswith("unknown key: 'kkkk")


def test_an_alias_bomb_is_refused_without_expanding_it() -> None:
    """Anchors that multiply into millions of values are refused, not validated."""
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for name, prev in zip("bcdefg", "abcdef", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 10)}]")

    assert "more than" in problem_of("\n".join(lines))


def test_deep_nesting_is_refused() -> None:
    """A pathologically nested document is a ConfigError, not a RecursionError."""
    assert "nested too deeply" in problem_of("a: " + "[" * 5000)


def test_python_tags_are_refused() -> None:
    """Only safe YAML is read: a Python object tag is a parse error, never constructed."""
    assert "could not parse YAML" in problem_of("a: !!python/object/apply:os.system ['true']\n")


# -- the rail policy ---------------------------------------------------------------------


def test_rail_policy_takes_environments_and_required_checks() -> None:
    """The rails are decided under the configured environments and required checks."""
    config = parse_repository_config(
        "checks:\n  required: [build]\ndeployments:\n  environments: [staging, production]\n"
    )

    assert config.to_rail_policy() == RailPolicy(
        environments=("staging", "production"), required_checks=("build",)
    )


def test_default_rail_policy_is_the_rails_default() -> None:
    """Without a file the rails use production and any failing check."""
    assert RepositoryConfig.default().to_rail_policy() == RailPolicy()


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
    """`parse_repository_config`, counting what it was asked to parse."""

    def __init__(self) -> None:
        self.texts: list[str | None] = []

    def __call__(self, text: str | None) -> RepositoryConfig:
        """Parse `text`, recording it."""
        self.texts.append(text)
        return parse_repository_config(text)


def load_times(loader: ConfigLoader, times: int, *, fresh: bool = True) -> list[LoadedConfig]:
    """Load the configuration of acme/app `times` times (read now each time, as commands do)."""

    async def run() -> list[LoadedConfig]:
        return [await loader.load(7, "acme/app", fresh=fresh) for _ in range(times)]

    return asyncio.run(run())


def test_no_file_loads_defaults_with_version_default() -> None:
    """Without a file the defaults are in force under policy version "default"."""
    loaded = load_times(ConfigLoader(FakeRepository(None).fetch), 1)[0]

    assert loaded == LoadedConfig(RepositoryConfig.default(), "default", None)


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

    assert loaded[0] == LoadedConfig(RepositoryConfig.default(), "sha-bad", "unknown key: tickets.lable")
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
