"""`railyard.schema.json`: generated from the configuration model, kept fresh, and as strict as
the server's parser where the model forbids extra keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from app.github.config import ConfigError, parse_repository_config
from app.github.config_schema import SCHEMA_FILE, schema_text
from tests.unit.spec_config import SPEC_EXAMPLE

ROOT = Path(__file__).resolve().parents[2]


def validator() -> jsonschema.protocols.Validator:
    """A validator for the schema the repository ships (itself checked against its draft)."""
    schema = json.loads((ROOT / SCHEMA_FILE).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)  # type: ignore[no-any-return]


def schema_errors(text: str) -> list[str]:
    """What the schema finds wrong with a YAML document, one message per problem."""
    document: Any = yaml.safe_load(text)
    return [error.message for error in validator().iter_errors(document)]


def test_the_schema_file_is_what_the_model_generates() -> None:
    """A change to the model without regenerating the schema fails here."""
    shipped = (ROOT / SCHEMA_FILE).read_text()

    assert shipped == schema_text(), f"{SCHEMA_FILE} is stale: run scripts/config-schema.py"


def test_the_schema_is_valid_for_its_draft() -> None:
    """The file declares JSON Schema draft 7 (what editors' YAML servers read) and is valid for it."""
    schema = json.loads((ROOT / SCHEMA_FILE).read_text())

    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(schema)


def test_the_schema_accepts_spec_example() -> None:
    """SPEC's example configuration is valid under the schema."""
    assert schema_errors(SPEC_EXAMPLE) == []


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("deployment:\n  environments: []\n", "deployment"),
        ("tickets:\n  lable: ready\n", "lable"),
        ("checks:\n  required: []\n  extra: 1\n", "extra"),
    ],
)
def test_the_schema_rejects_an_unknown_key_naming_it(text: str, key: str) -> None:
    """An unknown key, at the top level or in a section, is refused and named."""
    errors = schema_errors(text)

    assert len(errors) == 1 and repr(key) in errors[0]


def test_the_schema_rejects_an_unknown_role_and_a_malformed_entry() -> None:
    """Role names are the six roles; each entry is a login or @org/team."""
    assert schema_errors("roles:\n  runnr: []\n")
    assert schema_errors("roles:\n  runner: ['@acme']\n")
    assert schema_errors("roles:\n  runner: ['@acme/agents', 'coder-bot[bot]', octocat]\n") == []


@pytest.mark.parametrize(
    "text",
    [
        "tickets:\n",  # a section with every line commented out
        "claims: {max_silence_minutes: 60}\nroles:\n  reviewer: []\n",
        "claims: {max_silence_minutes: 525600}\nlimits: {commands_per_hour: 1000000}\n",
        "checks: {unlinked: action_required}\nself_verification: never\n",
    ],
)
def test_what_the_server_accepts_the_schema_accepts(text: str) -> None:
    """Valid files the parser reads (empty sections included) are valid under the schema too."""
    parse_repository_config(text)

    assert schema_errors(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "claims: {max_silence_minutes: 0}\n",
        "claims: {max_silence_minutes: 9000000000}\n",
        "limits: {commands_per_hour: '30'}\n",
        "limits: {commands_per_hour: 1000001}\n",
        "checks: {unlinked: failure}\n",
        "tickets: {no_code_label: ''}\n",
        "high_risk: [risk]\n",
    ],
)
def test_what_the_server_refuses_the_schema_refuses(text: str) -> None:
    """Wrong types and ranges the parser refuses are refused by the schema too."""
    with pytest.raises(ConfigError):
        parse_repository_config(text)

    assert schema_errors(text)
