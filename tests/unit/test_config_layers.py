"""Organization defaults in the pure core (policies/config_layers.py): how a repository's file
is laid over the one it starts from, which repository `_extends` may name, and the policy
version that names both files."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.config_layers import (
    extends_name,
    extends_target,
    merge_documents,
    organization_repository,
    own_sha_of,
    policy_version,
)

KEYS = st.sampled_from(["roles", "limits", "commands_per_hour", "labels", "a", "b"])
SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=12,
)
DOCUMENTS = st.dictionaries(KEYS, VALUES, max_size=4)
PROPERTIES = settings(max_examples=200, deadline=None)


def test_a_key_the_repository_sets_wins_and_the_rest_of_the_section_comes_from_the_base() -> None:
    """`limits.commands_per_hour` from the repository, `limits.attempts_per_ticket` from the base."""
    base = {"limits": {"commands_per_hour": 30, "attempts_per_ticket": 4}, "self_verification": "never"}
    override = {"limits": {"commands_per_hour": 5}}

    assert merge_documents(base, override) == {
        "limits": {"commands_per_hour": 5, "attempts_per_ticket": 4},
        "self_verification": "never",
    }


def test_lists_are_replaced_not_joined() -> None:
    """A role list in the repository's file is the whole list: the base's entries are dropped."""
    base = {"roles": {"runner": ["@acme/agents", "bot"], "reviewer": ["rita"]}}
    override = {"roles": {"runner": ["cody"]}}

    assert merge_documents(base, override) == {"roles": {"runner": ["cody"], "reviewer": ["rita"]}}


def test_a_null_or_a_scalar_replaces_a_mapping_and_the_inputs_are_untouched() -> None:
    """`claims.max_attempt_hours: null` turns off the base's deadline; neither input is changed."""
    base = {"claims": {"max_attempt_hours": 48}, "tickets": {"label": "ready"}}
    override = {"claims": {"max_attempt_hours": None}, "tickets": "flat"}

    merged = merge_documents(base, override)

    assert merged == {"claims": {"max_attempt_hours": None}, "tickets": "flat"}
    assert base == {"claims": {"max_attempt_hours": 48}, "tickets": {"label": "ready"}}


@PROPERTIES
@given(document=DOCUMENTS)
def test_merging_with_an_empty_file_changes_nothing(document: dict[str, object]) -> None:
    """{} on either side is the identity."""
    assert merge_documents(document, {}) == document
    assert merge_documents({}, document) == document


@PROPERTIES
@given(base=DOCUMENTS, override=DOCUMENTS)
def test_every_value_the_repository_sets_that_is_not_a_mapping_is_in_force(
    base: dict[str, object], override: dict[str, object]
) -> None:
    """Each leaf of the repository's file (a list counts as one) is what the merge holds there."""
    merged = merge_documents(base, override)

    def holds(expected: Mapping[str, object], actual: Mapping[str, object]) -> None:
        for key, value in expected.items():
            if isinstance(value, Mapping) and isinstance(actual[key], Mapping):
                holds(value, actual[key])  # type: ignore[arg-type]
            else:
                assert actual[key] == value

    holds(override, merged)


@PROPERTIES
@given(base=DOCUMENTS, override=DOCUMENTS)
def test_a_key_only_the_base_has_keeps_the_bases_value(
    base: dict[str, object], override: dict[str, object]
) -> None:
    """Nothing the repository does not mention changes; merging the same file again changes nothing."""
    merged = merge_documents(base, override)

    assert {k: v for k, v in merged.items() if k not in override} == {
        k: v for k, v in base.items() if k not in override
    }
    assert merge_documents(merged, override) == merged


def test_a_repository_without_a_file_looks_in_its_owners_dot_github_repository() -> None:
    """acme/web uses acme/.github's file; acme/.github's file is its own."""
    assert organization_repository("acme/web") == "acme/.github"
    assert organization_repository("acme/.GitHub") is None


@pytest.mark.parametrize(
    ("value", "target"),
    [
        (".github", "acme/.github"),
        (" shared-config ", "acme/shared-config"),
        ("ACME/.github", "acme/.github"),
    ],
)
def test_extends_names_a_repository_of_the_same_owner(value: str, target: str) -> None:
    """A bare name, or OWNER/NAME with this owner (in any case), is that owner's repository."""
    assert extends_target("acme/web", value) == target


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("other/.github", "another owner's repository"),
        ("web", "this repository itself"),
        (".github:configs/railyard.yml", "names a path"),
        ("a/b/c", "not a repository name"),
        ("..", "not a repository name"),
        ("", "expected the name of a repository"),
        (42, "expected the name of a repository"),
        (["x"], "expected the name of a repository"),
    ],
)
def test_extends_refuses_what_is_not_a_repository_of_the_owner(value: object, reason: str) -> None:
    """Another owner's file is never followed, nor the repository itself, nor a path or a non-name."""
    with pytest.raises(ValueError, match=reason):
        extends_target("acme/web", value)


def test_extends_name_reads_the_owner_only_when_it_is_written() -> None:
    """What `railyard validate` checks offline: the shape, not whose repository it is."""
    assert extends_name(".github") == (None, ".github")
    assert extends_name("other/.github") == ("other", ".github")


def test_the_policy_version_names_each_file_used_by_its_blob_sha() -> None:
    """One file: its sha as before; the organization's: `.github@sha`; both: `sha+.github@sha`."""
    assert policy_version("aaa", None) == "aaa"
    assert policy_version(None, ("acme/.github", "bbb")) == ".github@bbb"
    assert policy_version("aaa", ("acme/shared", "bbb")) == "aaa+shared@bbb"
    with pytest.raises(ValueError):
        policy_version(None, None)


def test_the_own_files_blob_is_read_back_from_a_policy_version() -> None:
    own, base = "a" * 40, "b" * 40
    assert own_sha_of(policy_version(own, None)) == own
    assert own_sha_of(policy_version(own, ("acme/.github", base))) == own
    assert own_sha_of(policy_version(None, ("acme/.github", base))) is None  # the organization's only
    assert own_sha_of("default") is None
