"""Organization defaults as the loader reads them (app/github/config_loader.py): a repository
without a file follows its owner's `.github` repository, `_extends` starts from another file of
the owner, problems name their file, and a push to the base forgets every copy built from it."""

from __future__ import annotations

import asyncio

from app.github.config import ParsedFile, RepositoryConfig, parse_file
from app.github.config_loader import ConfigLoader, LoadedConfig
from policies.states import Role
from tests.fakes import StillClock
from tests.fakes.configs import FakeDefaultBranches

ORG = "roles:\n  runner: ['@acme/agents']\nlimits:\n  commands_per_hour: 3\n  attempts_per_ticket: 4\n"


def load(loader: ConfigLoader, repository: str = "acme/web", *, fresh: bool = True) -> LoadedConfig:
    """The configuration in force for `repository`, read as a command reads it (or an event, not fresh)."""
    return asyncio.run(loader.load(7, repository, fresh=fresh))


def branches(**files: tuple[str, str]) -> FakeDefaultBranches:
    """Default branches holding `name=(sha, text)` files, `dot_github` standing for acme/.github."""
    fake = FakeDefaultBranches()
    for name, (sha, text) in files.items():
        fake.put(f"acme/{'.github' if name == 'dot_github' else name}", sha, text)
    return fake


def test_a_repository_without_a_file_follows_its_organizations_file() -> None:
    """acme/web has no file: acme/.github's is in force, under the version `.github@SHA`."""
    fake = branches(dot_github=("org1", ORG))

    loaded = load(ConfigLoader(fake.fetch))

    assert (loaded.config.limits.commands_per_hour, loaded.policy_version, loaded.error) == (
        3,
        ".github@org1",
        None,
    )
    assert fake.fetches == ["acme/web", "acme/.github"]


def test_a_repository_with_its_own_file_does_not_read_the_organizations() -> None:
    """A file without `_extends` is the whole configuration, as before, under its own sha."""
    fake = branches(web=("web1", "limits:\n  attempts_per_ticket: 2\n"), dot_github=("org1", ORG))

    loaded = load(ConfigLoader(fake.fetch))

    assert (loaded.config.limits.commands_per_hour, loaded.config.limits.attempts_per_ticket) == (30, 2)
    assert (loaded.policy_version, fake.fetches) == ("web1", ["acme/web"])


def test_no_dot_github_repository_means_the_defaults() -> None:
    """Neither file exists: the defaults, version "default", no error."""
    loaded = load(ConfigLoader(FakeDefaultBranches().fetch))

    assert (loaded.config, loaded.policy_version, loaded.error) == (
        RepositoryConfig.default(),
        "default",
        None,
    )


def test_extends_overrides_one_key_and_takes_the_rest_from_the_base() -> None:
    """`_extends: .github` with `limits.commands_per_hour: 9`: 9 from the file, the rest (roles,
    attempts) from acme/.github; the version names both blobs."""
    own = "_extends: .github\nlimits:\n  commands_per_hour: 9\n"
    fake = branches(web=("web1", own), dot_github=("org1", ORG))

    loaded = load(ConfigLoader(fake.fetch))

    limits = loaded.config.limits
    assert (limits.commands_per_hour, limits.attempts_per_ticket, loaded.error) == (9, 4, None)
    assert [str(entry) for entry in loaded.config.roles[Role.RUNNER]] == ["@acme/agents"]
    assert loaded.policy_version == "web1+.github@org1"


def test_extends_may_name_any_repository_of_the_owner() -> None:
    """`_extends: acme/shared` reads acme/shared's file; its list replaces nothing it did not set."""
    own = "_extends: acme/shared\nchecks:\n  required: [build]\n"
    fake = branches(
        web=("web1", own), shared=("sh1", "checks:\n  required: [lint, test]\n  unlinked: action_required\n")
    )

    loaded = load(ConfigLoader(fake.fetch))

    assert (loaded.config.checks.required, loaded.config.checks.unlinked.value) == (
        ("build",),
        "action_required",
    )
    assert loaded.policy_version == "web1+shared@sh1"


def test_a_broken_organization_file_is_reported_naming_it_and_the_defaults_hold() -> None:
    """A repository without a file whose organization's file is broken: defaults, and the error
    names acme/.github and the line, as a broken file of its own would be reported."""
    fake = branches(dot_github=("org1", "limits:\n  commands_per_hour: lots\n"))

    loaded = load(ConfigLoader(fake.fetch))

    assert loaded.config == RepositoryConfig.default() and loaded.policy_version == ".github@org1"
    assert (
        loaded.error == "acme/.github: line 2: limits.commands_per_hour: expected a whole number, got 'lots'"
    )


def test_extends_naming_a_missing_repository_or_file_is_an_error_on_its_line() -> None:
    """`_extends: shared` where acme/shared has no file (or does not exist): defaults and a clear error."""
    fake = branches(web=("web1", "tickets:\n  label: ready\n_extends: shared\n"))

    loaded = load(ConfigLoader(fake.fetch))

    assert loaded.config == RepositoryConfig.default() and loaded.policy_version == "web1"
    assert loaded.error == (
        "line 3: _extends: acme/shared has no .github/railyard.yml on its default branch "
        "(or the app cannot read that repository)"
    )


def test_extends_naming_another_owner_is_refused_without_reading_it() -> None:
    """Another owner's file is never asked for."""
    fake = branches(web=("web1", "_extends: other/.github\n"))
    fake.put("other/.github", "x", ORG)

    loaded = load(ConfigLoader(fake.fetch))

    assert loaded.error is not None and "another owner's repository" in loaded.error
    assert fake.fetches == ["acme/web"]


def test_a_base_that_extends_again_is_not_followed_but_reported() -> None:
    """One level only: acme/.github's own `_extends` breaks the repositories that start from it,
    and the problem says where; acme/.github itself may extend."""
    fake = branches(web=("web1", "_extends: .github\n"), dot_github=("org1", "_extends: shared\n"))
    fake.put("acme/shared", "sh1", ORG)
    loader = ConfigLoader(fake.fetch)

    loaded = load(loader)
    own = load(loader, "acme/.github")

    assert loaded.error == (
        "acme/.github: line 1: _extends: not followed: a file other repositories start from "
        "cannot extend another (one level only)"
    )
    assert "acme/shared" not in fake.fetches[:2]
    assert (own.error, own.config.limits.commands_per_hour, own.policy_version) == (
        None,
        3,
        "org1+shared@sh1",
    )


def test_problems_of_both_files_are_listed_each_naming_its_file() -> None:
    """A broken base under a file that extends it: the base's problems carry its name."""
    own = "_extends: .github\ntickets:\n  label: ready\n"
    fake = branches(web=("web1", own), dot_github=("org1", "tickets:\n  lable: x\n"))

    loaded = load(ConfigLoader(fake.fetch))

    assert loaded.error == "acme/.github: line 2: unknown key: tickets.lable (did you mean label?)"
    assert loaded.policy_version == "web1+.github@org1"


def test_an_empty_section_in_the_repositorys_file_overrides_nothing() -> None:
    """`limits:` with every line commented out keeps the organization's limits."""
    fake = branches(
        web=("web1", "_extends: .github\nlimits:\n  # commands_per_hour: 1\n"), dot_github=("o", ORG)
    )

    assert load(ConfigLoader(fake.fetch)).config.limits.commands_per_hour == 3


def test_a_push_to_the_organizations_repository_forgets_every_repository_that_uses_its_file() -> None:
    """acme/web (no file) and acme/api (`_extends`) were read from acme/.github: forgetting
    acme/.github makes both read again at the next event; acme/solo (its own file) keeps its copy."""
    fake = branches(
        dot_github=("org1", ORG),
        api=("api1", "_extends: .github\n"),
        solo=("solo1", "limits:\n  commands_per_hour: 8\n"),
    )
    loader = ConfigLoader(fake.fetch, clock=StillClock())
    for name in ("acme/web", "acme/api", "acme/solo"):
        load(loader, name, fresh=False)
    fake.put("acme/.github", "org2", "limits:\n  commands_per_hour: 11\n")
    fetched = len(fake.fetches)

    loader.forget("ACME/.github")
    after = [load(loader, name, fresh=False) for name in ("acme/web", "acme/api", "acme/solo")]

    assert [item.config.limits.commands_per_hour for item in after] == [11, 11, 8]
    assert [item.policy_version for item in after] == [".github@org2", "api1+.github@org2", "solo1"]
    assert "acme/solo" not in fake.fetches[fetched:]


def test_a_dot_github_repository_created_later_is_read_after_a_push_to_it() -> None:
    """A repository that found no organization's file still names acme/.github as a source."""
    fake = FakeDefaultBranches()
    loader = ConfigLoader(fake.fetch, clock=StillClock())
    assert load(loader, fresh=False).policy_version == "default"

    fake.put("acme/.github", "org1", ORG)
    loader.forget("acme/.github")

    assert load(loader, fresh=False).policy_version == ".github@org1"


def test_each_blob_is_parsed_once_however_many_repositories_use_it() -> None:
    """Commands in two repositories extending acme/.github parse its file once, and each
    repository's own blob once."""
    parsed: list[str | None] = []

    def counting(text: str | None) -> ParsedFile:
        parsed.append(text)
        return parse_file(text)

    fake = branches(
        web=("web1", "_extends: .github\n"), api=("api1", "_extends: .github\n"), dot_github=("o", ORG)
    )
    loader = ConfigLoader(fake.fetch, parse=counting)

    versions = {load(loader, name).policy_version for name in ("acme/web", "acme/api") for _ in range(3)}

    assert versions == {"web1+.github@o", "api1+.github@o"}
    assert sorted(parsed, key=str) == sorted(["_extends: .github\n", "_extends: .github\n", ORG], key=str)


def test_a_misspelt_extends_is_an_unknown_key_with_a_suggestion() -> None:
    """`_extend: .github` is reported like any misspelt key, with `_extends` suggested."""
    fake = branches(web=("web1", "_extend: .github\n"), dot_github=("o", ORG))

    loaded = load(ConfigLoader(fake.fetch))

    assert loaded.error == "line 1: unknown key: _extend (did you mean _extends?)"
    assert fake.fetches == ["acme/web"]
