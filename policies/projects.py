"""GitHub Projects: which single-select values of an issue's project item must change so the
item shows the ticket's rails (SPEC: "Organization defaults and GitHub's own views").

Pure: the project's fields and the item's current values come in, the updates to send and the
problems to report come out. A field or an option the project lacks is a problem, reported and
not retried; the other fields are still kept. Names are matched without regard to case, as a
person reading the board would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum


class ProjectRail(StrEnum):
    """A rail a project field shows; its value is its key under the configuration's `fields:`."""

    WORK = "work"
    REPOSITORY = "repository"
    DEPLOYMENT = "deployment"


class ProblemCode(StrEnum):
    """Why a field of the project cannot show its rail."""

    NO_PROJECT = "no_project"  # the organization has no such project, or the app cannot see it
    NO_ACCESS = "no_access"  # the app lacks the organization projects permission
    NO_FIELD = "no_field"
    NOT_SINGLE_SELECT = "not_single_select"
    NO_OPTION = "no_option"


@dataclass(frozen=True)
class BoardField:
    """One field of a project: its node id, name, and, for a single-select field, its options
    as (option id, option name)."""

    id: str
    name: str
    single_select: bool
    options: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Board:
    """A project as its fields configure it (`id` is the project's node id)."""

    id: str
    fields: tuple[BoardField, ...]


@dataclass(frozen=True)
class Wanted:
    """What one rail's field should show: the field's name and the option's."""

    rail: ProjectRail
    field: str
    option: str


@dataclass(frozen=True)
class FieldUpdate:
    """Set the item's single-select `field_id` to `option_id` (`updateProjectV2ItemFieldValue`)."""

    rail: ProjectRail
    field_id: str
    option_id: str


@dataclass(frozen=True)
class Problem:
    """A field that cannot show its rail, and why (`option` for a missing option)."""

    code: ProblemCode
    field: str | None = None
    option: str | None = None

    def to_data(self) -> dict[str, str | None]:
        """As kept with the effect's result (JSON)."""
        return {"code": self.code.value, "field": self.field, "option": self.option}

    @classmethod
    def from_data(cls, data: Mapping[str, object]) -> Problem:
        """Read back what `to_data` kept."""
        field, option = data.get("field"), data.get("option")
        return cls(
            ProblemCode(str(data["code"])),
            field if isinstance(field, str) else None,
            option if isinstance(option, str) else None,
        )


@dataclass(frozen=True)
class ItemPlan:
    """The writes that make an item show the rails, and what cannot be shown."""

    updates: tuple[FieldUpdate, ...]
    problems: tuple[Problem, ...]


def _named(fields: Sequence[BoardField], name: str) -> list[BoardField]:
    folded = name.casefold()
    return [field for field in fields if field.name.casefold() == folded]


def _option_id(field: BoardField, option: str) -> str | None:
    folded = option.casefold()
    return next((oid for oid, name in field.options if name.casefold() == folded), None)


def plan_item(board: Board, wanted: Sequence[Wanted], current: Mapping[str, str]) -> ItemPlan:
    """The updates that make the item show `wanted`, given its `current` values (field id to
    option id); a field already showing its option is left alone.

    Of several fields with the name, the single-select one counts (GitHub's own Repository
    field is not single-select).
    """
    updates: list[FieldUpdate] = []
    problems: list[Problem] = []
    for want in wanted:
        named = _named(board.fields, want.field)
        selects = [field for field in named if field.single_select]
        if not selects:
            code = ProblemCode.NOT_SINGLE_SELECT if named else ProblemCode.NO_FIELD
            problems.append(Problem(code, want.field))
            continue
        field = selects[0]
        option_id = _option_id(field, want.option)
        if option_id is None:
            problems.append(Problem(ProblemCode.NO_OPTION, field.name, want.option))
        elif current.get(field.id) != option_id:
            updates.append(FieldUpdate(want.rail, field.id, option_id))
    return ItemPlan(tuple(updates), tuple(problems))
