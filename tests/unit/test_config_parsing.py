"""The per-repository configuration (SPEC: "Roles and configuration"): parsing, and its rail policy."""

from __future__ import annotations

import pytest

from app.github.config import (
    AcceptanceBy,
    AcceptanceCi,
    RepositoryConfig,
    RoleEntry,
    UnlinkedConclusion,
    parse_repository_config,
)
from app.github.config_loader import LoadedConfig
from app.github.reads import rules_from
from handlers.ports import RoleEntry as RulesEntry
from policies.rails import RailPolicy
from policies.states import Role, SelfVerification
from tests.unit.spec_config import SPEC_EXAMPLE


def team(org: str, slug: str) -> RoleEntry:
    """A team entry, as `@org/slug` parses."""
    return RoleEntry(org=org, slug=slug)


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
    assert config.acceptance.expires_after_days == 30
    assert config.acceptance.ci is AcceptanceCi.RECORD
    assert config.acceptance.by is AcceptanceBy.PEOPLE
    assert config.agents == (team("acme", "agents"),)
    assert config.limits.commands_per_hour == 30
    assert config.checks.required == ()
    assert config.checks.unlinked is UnlinkedConclusion.SUCCESS
    assert config.deployments.environments == ("production",)


def test_spec_example_otherwise_spells_out_the_defaults() -> None:
    """Apart from roles, agents and its high-risk label, the example spells out SPEC's defaults."""
    config = parse_repository_config(SPEC_EXAMPLE)
    rest = config.model_copy(update={"roles": {}, "agents": (), "high_risk": RepositoryConfig().high_risk})

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


def test_acceptance_settings_and_agents_are_read() -> None:
    """`acceptance` takes the expiry, CI rule and who may accept that the file gives; `agents` its entries."""
    config = parse_repository_config(
        "acceptance:\n  expires_after_days: 7\n  ci: require\n  by: anyone\n"
        "agents: [coder-bot, '@acme/agents', ' Helper ']\n"
    )

    assert config.acceptance.expires_after_days == 7
    assert config.acceptance.ci is AcceptanceCi.REQUIRE
    assert config.acceptance.by is AcceptanceBy.ANYONE
    assert config.agents == (RoleEntry(login="coder-bot"), team("acme", "agents"), RoleEntry(login="Helper"))


def test_an_acceptance_can_be_made_never_to_expire() -> None:
    """`expires_after_days: null` means an acceptance never expires (SPEC: null = never)."""
    config = parse_repository_config("acceptance:\n  expires_after_days: null\n")

    assert config.acceptance.expires_after_days is None
    assert config.acceptance.ci is AcceptanceCi.RECORD


def test_acceptance_and_agents_default_to_specs_values() -> None:
    """Without them, acceptances expire after 30 days, CI is recorded, only people accept, no agents."""
    config = parse_repository_config("acceptance:\nagents:\n")

    assert config.acceptance.expires_after_days == 30
    assert (config.acceptance.ci, config.acceptance.by) == (AcceptanceCi.RECORD, AcceptanceBy.PEOPLE)
    assert config.agents == ()


def test_the_rules_handlers_see_carry_the_acceptance_settings_and_agents() -> None:
    """What handlers decide with holds the file's acceptance settings and its agents."""
    config = parse_repository_config(
        "acceptance: {expires_after_days: null, ci: require, by: anyone}\nagents: [bot-one, '@acme/agents']\n"
    )

    rules = rules_from(LoadedConfig(config, "blob-sha"))

    assert rules.acceptance_expires_after_days is None
    assert (rules.acceptance_ci, rules.acceptance_by) == ("require", "anyone")
    assert rules.agents == (RulesEntry(login="bot-one"), RulesEntry(org="acme", slug="agents"))


def test_the_default_rules_carry_specs_acceptance_defaults() -> None:
    """Without a file, acceptances expire after 30 days, CI is recorded, and only people accept."""
    rules = rules_from(LoadedConfig(RepositoryConfig.default(), "default"))

    assert (rules.acceptance_expires_after_days, rules.acceptance_ci, rules.acceptance_by) == (
        30,
        "record",
        "people",
    )
    assert rules.agents == ()


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
    assert config.acceptance.expires_after_days == 30
    assert config.acceptance.ci is AcceptanceCi.RECORD
    assert config.acceptance.by is AcceptanceBy.PEOPLE
    assert config.agents == ()
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
