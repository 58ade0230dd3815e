"""The per-repository configuration (SPEC: "Roles and configuration"): role entries, and the errors a
broken file reports."""

from __future__ import annotations

import pytest

from app.github.config import ConfigError, RoleEntry, parse_repository_config


def problem_of(text: str) -> str:
    """The ConfigError message parsing `text` raises."""
    with pytest.raises(ConfigError) as caught:
        parse_repository_config(text)
    return caught.value.message


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
        "line 2: roles.runner[1]: '@acme' is not a login or @org/team (a team is written @org/team-slug)"
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
        ("tickets:\n  lable: ready\n", "line 2: unknown key: tickets.lable (did you mean label?)"),
        ("deployment:\n  environments: []\n", "line 1: unknown key: deployment (did you mean deployments?)"),
        ("checks:\n  required: []\n  unlinked: success\n  extra: 1\n", "line 4: unknown key: checks.extra"),
        ("1: x\n", "line 1: unknown key: 1"),
        (
            "acceptance:\n  ci: record\n  expire_after_days: 3\n",
            "line 3: unknown key: acceptance.expire_after_days (did you mean expires_after_days?)",
        ),
        ("acceptance:\n  people: true\n", "line 2: unknown key: acceptance.people"),
        ("agent: [bot]\n", "line 1: unknown key: agent (did you mean agents?)"),
    ],
)
def test_unknown_keys_are_errors(text: str, message: str) -> None:
    """Keys SPEC does not name are refused, at the top level and inside sections."""
    assert problem_of(text) == message


def test_an_unknown_role_is_an_error() -> None:
    """A misspelt role is refused, and the message lists the roles there are."""
    message = problem_of("roles:\n  runnr: []\n")

    assert message.startswith(
        "line 2: unknown role: roles.runnr (did you mean runner? roles are requester, task_owner, runner,"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "limits:\n  commands_per_hour: lots\n",
            "line 2: limits.commands_per_hour: expected a whole number, got 'lots'",
        ),
        (
            "limits:\n  commands_per_hour: 1.5\n",
            "line 2: limits.commands_per_hour: expected a whole number, got 1.5",
        ),
        (
            "limits:\n  commands_per_hour: true\n",
            "line 2: limits.commands_per_hour: expected a whole number, got true",
        ),
        (
            "claims:\n  max_silence_minutes: 0\n",
            "line 2: claims.max_silence_minutes: must be greater than 0, got 0",
        ),
        (
            "self_verification: sometimes\n",
            "line 1: self_verification: expected 'explicit' or 'never', got 'sometimes'",
        ),
        (
            "checks:\n  unlinked: failure\n",
            "line 2: checks.unlinked: expected 'success' or 'action_required', got 'failure'",
        ),
        ("checks:\n  required: build\n", "line 2: checks.required: expected a list, got 'build'"),
        ("tickets:\n  label: 2024\n", "line 2: tickets.label: expected a string, got 2024"),
        ("tickets:\n  no_code_label: ''\n", "line 2: tickets.no_code_label: must not be empty"),
        ("high_risk: [risk]\n", "line 1: high_risk: expected a mapping of keys to values, got a list"),
        (
            "roles:\n  reviewer:\n",
            "line 2: roles.reviewer: expected a list, got null (write [] for nobody)",
        ),
        ("roles:\n  runner: [42]\n", "line 2: roles.runner[0]: expected a login or @org/team, got 42"),
        (
            "acceptance:\n  ci: always\n",
            "line 2: acceptance.ci: expected 'record' or 'require', got 'always'",
        ),
        (
            "acceptance:\n  by: robots\n",
            "line 2: acceptance.by: expected 'people' or 'anyone', got 'robots'",
        ),
        (
            "acceptance:\n  expires_after_days: '30'\n",
            "line 2: acceptance.expires_after_days: expected a whole number, got '30'",
        ),
        ("agents: coder-bot\n", "line 1: agents: expected a list, got 'coder-bot'"),
        ("agents:\n  - ok-bot\n  - 7\n", "line 3: agents[1]: expected a login or @org/team, got 7"),
        (
            "agents: ['@acme']\n",
            "line 1: agents[0]: '@acme' is not a login or @org/team (a team is written @org/team-slug)",
        ),
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
        "line 2: roles.runner[0]: '@acme' is not a login or @org/team (a team is written @org/team-slug)",
        "line 4: limits.commands_per_hour: expected a whole number, got 'lots'",
        "line 6: unknown key: tickets.lable (did you mean label?)",
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
    assert message.startswith("line 1: unknown key: 'kkkk")


def test_an_alias_bomb_is_refused_without_expanding_it() -> None:
    """Anchors that multiply into millions of values are refused, not validated."""
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for name, prev in zip("bcdefg", "abcdef", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 10)}]")

    assert "more than" in problem_of("\n".join(lines))


def test_deep_nesting_is_refused() -> None:
    """A pathologically nested document is a ConfigError, not a RecursionError (libyaml says
    "exceeded maximum nesting depth", the pure-Python loader runs out of recursion)."""
    problem = problem_of("a: " + "[" * 5000)
    assert "nested too deeply" in problem or "maximum nesting depth" in problem


def test_python_tags_are_refused() -> None:
    """Only safe YAML is read: a Python object tag is a parse error, never constructed."""
    assert "could not parse YAML" in problem_of("a: !!python/object/apply:os.system ['true']\n")


# -- lines and suggestions ---------------------------------------------------------------


def test_each_problem_names_its_line_in_the_file() -> None:
    """A problem deep in the file is reported at the line its key or list item is written on."""
    text = "# railyard\nroles:\n  runner:\n    - octocat\n    - '@acme'\nclaims:\n  max_silence_minutes: 0\n"

    assert problem_of(text).splitlines() == [
        "line 5: roles.runner[1]: '@acme' is not a login or @org/team (a team is written @org/team-slug)",
        "line 7: claims.max_silence_minutes: must be greater than 0, got 0",
    ]


def test_unknown_keys_suggest_the_closest_known_key_at_their_level() -> None:
    """A misspelt key is answered with the nearest key of its own section, never of another."""
    assert problem_of("claims:\n  max_silense_minutes: 60\n") == (
        "line 2: unknown key: claims.max_silense_minutes (did you mean max_silence_minutes?)"
    )
    assert problem_of("self_verifcation: never\n") == (
        "line 1: unknown key: self_verifcation (did you mean self_verification?)"
    )
    # `label` belongs to tickets, not to claims: no suggestion from another section.
    assert problem_of("claims:\n  lable: x\n") == "line 2: unknown key: claims.lable"


def test_a_key_merged_from_an_anchor_is_reported_where_it_is_written() -> None:
    """A bad key brought in by `<<: *anchor` names the line of the anchored mapping."""
    text = "x-common: &common\n  lable: ready\ntickets:\n  <<: *common\n"

    assert "line 2: unknown key: tickets.lable (did you mean label?)" in problem_of(text)


def test_a_character_yaml_does_not_allow_names_its_line() -> None:
    """A control character is a ConfigError with its line, not a YAML exception."""
    assert problem_of("tickets:\n  label: \x07\n") == (
        "line 2: could not parse YAML: a character YAML does not allow"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "claims:\n  max_silence_minutes: 9000000000\n",
            "line 2: claims.max_silence_minutes: must be at most 525600, got 9000000000",
        ),
        (
            "claims:\n  max_silence_minutes: 525601\n",
            "line 2: claims.max_silence_minutes: must be at most 525600, got 525601",
        ),
        (
            "# budget\nlimits:\n  commands_per_hour: 99999999999999999999\n",
            "line 3: limits.commands_per_hour: must be at most 1000000, got 99999999999999999999",
        ),
        (
            "acceptance:\n  expires_after_days: 0\n",
            "line 2: acceptance.expires_after_days: must be at least 1, got 0",
        ),
        (
            "acceptance:\n  expires_after_days: 3651\n",
            "line 2: acceptance.expires_after_days: must be at most 3650, got 3651",
        ),
        (
            "acceptance:\n  expires_after_days: 99999999999999999999\n",
            "line 2: acceptance.expires_after_days: must be at most 3650, got 99999999999999999999",
        ),
    ],
)
def test_every_number_is_bounded_with_its_line(text: str, message: str) -> None:
    """A limit that would overflow a date, a timer or an integer column is refused with its line."""
    assert problem_of(text) == message


def test_the_bounds_themselves_are_accepted() -> None:
    """A year of silence and a million commands an hour are the largest values, and valid."""
    config = parse_repository_config(
        "claims:\n  max_silence_minutes: 525600\nlimits:\n  commands_per_hour: 1000000\n"
        "acceptance:\n  expires_after_days: 3650\n"
    )
    shortest = parse_repository_config("acceptance:\n  expires_after_days: 1\n")

    assert (config.claims.max_silence_minutes, config.limits.commands_per_hour) == (525_600, 1_000_000)
    assert (config.acceptance.expires_after_days, shortest.acceptance.expires_after_days) == (3650, 1)
