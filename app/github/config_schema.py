"""`railyard.schema.json`: the JSON Schema of `.github/railyard.yml`, generated from its model.

Editors read it (`# yaml-language-server: $schema=...`) to complete keys and flag mistakes
while the file is written; the server's parser stays the judge (`railyard validate`).
`scripts/config-schema.py` writes it at the repository root and a test keeps it fresh.
"""

from __future__ import annotations

import json
from typing import Any

from app.github.config import SECTIONS, RepositoryConfig
from policies.config_layers import EXTENDS_KEY

# Draft 7: the draft every editor's YAML language server reads (the schema uses nothing newer).
DRAFT = "http://json-schema.org/draft-07/schema#"
SCHEMA_FILE = "railyard.schema.json"


def config_schema() -> dict[str, Any]:
    """The schema of the file, as the model reads it (a section left empty is its defaults)."""
    schema = RepositoryConfig.model_json_schema(ref_template="#/definitions/{model}")
    schema["definitions"] = schema.pop("$defs")  # draft 7's name for them
    for name in sorted(SECTIONS):
        prop = schema["properties"][name]
        # `tickets:` with every line below it commented out is null, and means the defaults.
        shape = {"$ref": prop.pop("$ref")} if "$ref" in prop else _shape_of(prop)
        prop["anyOf"] = [shape, {"type": "null"}]
    # Not a setting of the model: the file's other settings are laid over the one it names.
    schema["properties"] = {EXTENDS_KEY: _EXTENDS, **schema["properties"]}
    schema["title"] = "railyard: .github/railyard.yml"
    return {"$schema": DRAFT, **schema}


_EXTENDS = {
    "title": "Extends",
    "description": (
        "a repository of the same owner (NAME or OWNER/NAME, e.g. .github) whose .github/railyard.yml "
        "this file starts from: mappings merge key by key, everything else here replaces it"
    ),
    "type": "string",
    "pattern": r"^\s*(?:[A-Za-z0-9][A-Za-z0-9-]{0,38}/)?[A-Za-z0-9._-]{1,100}\s*$",
}


def _shape_of(prop: dict[str, Any]) -> dict[str, Any]:
    """Move a property's type keywords (not its title or default) into a shape of their own."""
    kept = ("title", "default", "description")
    shape = {key: value for key, value in prop.items() if key not in kept}
    for key in shape:
        del prop[key]
    return shape


def schema_text() -> str:
    """The schema as the file holds it: indented JSON ending in a newline."""
    return json.dumps(config_schema(), indent=2, ensure_ascii=False) + "\n"
