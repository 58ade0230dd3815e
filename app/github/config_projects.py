"""`projects:` in `.github/railyard.yml`: the organization projects whose items show a ticket's
rails (SPEC: "Organization defaults and GitHub's own views"; performed by
`app.runtime.project_sync`)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, Strict, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from app.github.config_problems import show as _show


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# An organization's login (GitHub: at most 39 letters, digits and hyphens, no hyphen at an end).
_ORG_LOGIN = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?"


def _validate_org_login(value: object) -> str:
    if not isinstance(value, str) or not re.fullmatch(_ORG_LOGIN, value):
        raise PydanticCustomError(
            "org_login", "expected an organization's login, got {shown}", {"shown": _show(value)}
        )
    return value


OrgLogin = Annotated[
    str,
    PlainValidator(_validate_org_login),
    WithJsonSchema(
        {"type": "string", "pattern": f"^{_ORG_LOGIN}$", "description": "an organization's login"}
    ),
]
# GitHub numbers projects from 1; the bound keeps the GraphQL `Int` (32 bits) valid.
ProjectNumber = Annotated[int, Strict(), Field(ge=1, le=2**31 - 1)]
# A field's name, bounded: the status comment quotes it when the project lacks it.
FieldName = Annotated[str, Strict(), Field(min_length=1, max_length=100)]
MAX_PROJECTS = 5  # each costs GraphQL calls on every change of every ticket


class ProjectFieldsConfig(_Section):
    """`projects[].fields`: the names of the single-select fields that show the rails."""

    work: FieldName = "Work"
    repository: FieldName = "Repository"
    deployment: FieldName = "Deployment"

    @model_validator(mode="after")
    def _distinct(self) -> ProjectFieldsConfig:
        names = [self.work.casefold(), self.repository.casefold(), self.deployment.casefold()]
        if len(set(names)) < len(names):
            raise ValueError("the work, repository and deployment fields need three different names")
        return self


class ProjectConfig(_Section):
    """One entry of `projects`: an organization's project whose items show the rails, and
    whether a ticket's issue is added to it."""

    owner: OrgLogin
    number: ProjectNumber
    add_items: Annotated[bool, Strict()] = False
    fields: ProjectFieldsConfig = ProjectFieldsConfig()
