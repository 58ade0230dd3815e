"""The per-repository configuration, `.github/railyard.yml` (SPEC: "Roles and configuration").

Parsing is pure: text in, a frozen `RepositoryConfig` or a `ConfigError` out (`parse_file`
keeps a file's document too, for the organization's defaults to be laid under it). Fetching,
`_extends` and caching are `app.github.config_loader`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    Strict,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app.github.config_problems import Lines, Loc, located, yaml_problem
from app.github.config_problems import show as _show
from app.github.config_projects import MAX_PROJECTS, ProjectConfig
from policies.config_layers import EXTENDS_KEY
from policies.gate import Unticketed
from policies.rails import RailPolicy
from policies.states import Role, SelfVerification
from policies.watchdog import MAX_ATTEMPT_HOURS, MAX_REVIEW_WAIT_HOURS, MAX_SILENCE_MINUTES

CONFIG_PATH = ".github/railyard.yml"
DEFAULT_POLICY_VERSION = "default"
MAX_VALUES = 5000  # a real file has a few dozen; anchors and aliases can multiply them
MAX_PROBLEMS = 20

_NAME = r"[A-Za-z0-9][A-Za-z0-9_-]*"
_LOGIN = re.compile(rf"{_NAME}(?:\[bot\])?")
_TEAM = re.compile(rf"@(?P<org>{_NAME})/(?P<slug>[A-Za-z0-9_.-]+)")
# Keys whose `null` (every line below them commented out) means their defaults.
SECTIONS = frozenset(
    {
        "roles",
        "high_risk",
        "tickets",
        "claims",
        "reviews",
        "acceptance",
        "agents",
        "limits",
        "checks",
        "deployments",
        "projects",
    }
)


# -- role entries ---------------------------------------------------------------------


@dataclass(frozen=True)
class RoleEntry:
    """One entry of a role list: a GitHub team (`org` and `slug`) or a login (`login`)."""

    login: str | None = None
    org: str | None = None
    slug: str | None = None

    def __post_init__(self) -> None:
        team = self.org is not None and self.slug is not None
        if team == (self.login is not None) or (self.org is None) != (self.slug is None):
            raise ValueError("a role entry is either a login or an org and a team slug")

    @property
    def is_team(self) -> bool:
        """Whether the entry names a team (membership is checked when a command executes)."""
        return self.slug is not None

    @classmethod
    def parse(cls, text: str) -> RoleEntry:
        """Read `@org/team-slug` as a team and a bare name as a login; raise ValueError otherwise."""
        entry = text.strip()
        if team := _TEAM.fullmatch(entry):
            return cls(org=team["org"], slug=team["slug"])
        if _LOGIN.fullmatch(entry):
            return cls(login=entry)
        raise ValueError(_role_entry_problem(entry))

    def __str__(self) -> str:
        return f"@{self.org}/{self.slug}" if self.is_team else str(self.login)


def _role_entry_problem(entry: str) -> str:
    if not entry:
        return "an entry is empty"
    problem = f"{_show(entry)} is not a login or @org/team"
    if any(char.isspace() for char in entry):
        return f"{problem} (it contains a space)"
    if entry.startswith("@"):
        return f"{problem} (a team is written @org/team-slug)"
    if "/" in entry:
        return f"{problem} (a team starts with @)"
    return problem


def _validate_role_entry(value: object) -> RoleEntry:
    if isinstance(value, RoleEntry):
        return value
    if not isinstance(value, str):
        raise PydanticCustomError(
            "role_entry", "expected a login or @org/team, got {shown}", {"shown": _show(value)}
        )
    try:
        return RoleEntry.parse(value)
    except ValueError as error:
        raise PydanticCustomError("role_entry", str(error)) from None


_ROLE_ENTRY_SCHEMA = {
    "type": "string",
    "pattern": rf"^\s*(?:@{_NAME}/[A-Za-z0-9_.-]+|{_NAME}(?:\[bot\])?)\s*$",
    "description": "a login (a bot's too: name[bot]) or a GitHub team, @org/team-slug",
}
RoleEntryField = Annotated[
    RoleEntry,
    PlainValidator(_validate_role_entry),
    PlainSerializer(str, return_type=str),
    WithJsonSchema(_ROLE_ENTRY_SCHEMA),
]
# The budget is compared with a count, so only sanity bounds it: a million an hour (what the
# benchmarks' single runner uses is 100,000) stays far inside every integer column.
MAX_COMMANDS_PER_HOUR = 1_000_000
# Every number the file holds is bounded: a limit that overflows a date, a timer or an integer
# column would stop the loops that read it (the watchdog), not just the repository that set it.
SilenceMinutes = Annotated[int, Strict(), Field(gt=0, le=MAX_SILENCE_MINUTES)]
# A year each: an attempt's deadline and a delivery's review wait are a time plus this many hours.
AttemptHours = Annotated[int, Strict(), Field(ge=1, le=MAX_ATTEMPT_HOURS)]
ReviewWaitHours = Annotated[int, Strict(), Field(ge=1, le=MAX_REVIEW_WAIT_HOURS)]
# Ten years: an acceptance's expiry is its comment's time plus this many days, which must stay a date.
MAX_ACCEPTANCE_DAYS = 3650
AcceptanceDays = Annotated[int, Strict(), Field(ge=1, le=MAX_ACCEPTANCE_DAYS)]
CommandsPerHour = Annotated[int, Strict(), Field(gt=0, le=MAX_COMMANDS_PER_HOUR)]
MAX_ATTEMPTS = 1000
AttemptsPerTicket = Annotated[int, Strict(), Field(ge=1, le=MAX_ATTEMPTS)]
MAX_BUDGET_USD = 1_000_000_000
BudgetUsd = Annotated[Decimal, Field(gt=0, le=MAX_BUDGET_USD, decimal_places=6, allow_inf_nan=False)]
Text = Annotated[str, Strict(), Field(min_length=1)]
# GitHub allows a repository a few hundred environments; a gate list longer than this is a mistake.
MAX_GATED_ENVIRONMENTS = 100


# -- the file's model -----------------------------------------------------------------


class UnlinkedConclusion(StrEnum):
    """The `checks.unlinked` setting: the check conclusion on PRs that link no ticket."""

    SUCCESS = "success"
    ACTION_REQUIRED = "action_required"


class AcceptanceCi(StrEnum):
    """`acceptance.ci`: whether the delivered commit's CI is only recorded, or must have passed."""

    RECORD = "record"
    REQUIRE = "require"


class AcceptanceBy(StrEnum):
    """`acceptance.by`: who may accept: people only (no Bot, no listed agent), or anyone entitled."""

    PEOPLE = "people"
    ANYONE = "anyone"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HighRiskConfig(_Section):
    """`high_risk`: labels whose tickets need independent review."""

    labels: tuple[Text, ...] = ()


class TicketsConfig(_Section):
    """`tickets`: which issues become tickets, which need no code, where branches are found."""

    label: Text | None = None
    no_code_label: Text = "no-code"
    branch_pattern: Text | None = None


class ClaimsConfig(_Section):
    """`claims`: how long a claim may stay silent before it is overdue, and how long an attempt
    may last from its opening whatever it shows (hours; None = no deadline)."""

    max_silence_minutes: SilenceMinutes = 240
    max_attempt_hours: AttemptHours | None = None


class ReviewsConfig(_Section):
    """`reviews`: how long a delivery may wait for a decision before it is overdue (hours; None = off)."""

    max_wait_hours: ReviewWaitHours | None = 72


class AcceptanceConfig(_Section):
    """`acceptance`: how long an acceptance holds (days; None = never), whether it needs CI
    passed, and whether bots and agents may accept."""

    expires_after_days: AcceptanceDays | None = 30
    ci: AcceptanceCi = AcceptanceCi.RECORD
    by: AcceptanceBy = AcceptanceBy.PEOPLE


class LimitsConfig(_Section):
    """`limits`: how many commands one person may send per hour, how many API requests an
    account without any role here may make per hour (each costs the installation a call), how
    many attempts a ticket may have, and the cost budgets (reported by the deliveries)."""

    commands_per_hour: CommandsPerHour = 30
    outsider_requests_per_hour: CommandsPerHour = 30
    attempts_per_ticket: AttemptsPerTicket = 10
    cost_per_ticket: BudgetUsd | None = None  # USD, as the deliveries report it
    cost_per_runner_month: BudgetUsd | None = None  # USD per runner per calendar month (UTC)


class ChecksConfig(_Section):
    """`checks`: which checks can block a PR, and the check on PRs that link no ticket."""

    required: tuple[Text, ...] = ()
    unlinked: UnlinkedConclusion = UnlinkedConclusion.SUCCESS


class DeploymentsConfig(_Section):
    """`deployments`: the environments of the deployment rail, the headline one first; the
    environments railyard protects as a deployment protection rule (`gate`), and whether merges
    that belong to no ticket may pass it (`unticketed`)."""

    environments: tuple[Text, ...] = ("production",)
    gate: tuple[Text, ...] = Field(default=(), max_length=MAX_GATED_ENVIRONMENTS)
    unticketed: Unticketed = Unticketed.ALLOW


class RepositoryConfig(_Section):
    """`.github/railyard.yml`; `roles` holds only the roles the file names (`()` = nobody)."""

    roles: Mapping[Role, tuple[RoleEntryField, ...]] = Field(default_factory=dict)
    high_risk: HighRiskConfig = HighRiskConfig()
    self_verification: SelfVerification = SelfVerification.EXPLICIT
    tickets: TicketsConfig = TicketsConfig()
    claims: ClaimsConfig = ClaimsConfig()
    reviews: ReviewsConfig = ReviewsConfig()
    acceptance: AcceptanceConfig = AcceptanceConfig()
    # Accounts that are agents although they are user accounts (logins or teams, as in `roles`).
    agents: tuple[RoleEntryField, ...] = ()
    limits: LimitsConfig = LimitsConfig()
    checks: ChecksConfig = ChecksConfig()
    deployments: DeploymentsConfig = DeploymentsConfig()
    projects: tuple[ProjectConfig, ...] = Field(default=(), max_length=MAX_PROJECTS)

    @model_validator(mode="before")
    @classmethod
    def _empty_sections_are_defaults(cls, data: Any) -> Any:
        # `tickets:` with every line below it commented out reads as null.
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if not (v is None and k in SECTIONS)}
        return data

    @classmethod
    def default(cls) -> RepositoryConfig:
        """The configuration of a repository without a file: SPEC's defaults, roles by permission."""
        return cls()

    def to_rail_policy(self) -> RailPolicy:
        """The part of the configuration the repository and deployment rails are decided under."""
        return RailPolicy(environments=self.deployments.environments, required_checks=self.checks.required)


# -- errors -----------------------------------------------------------------------------


class ConfigError(Exception):
    """The file cannot be used; `message` lists every problem with its location, one a line."""

    def __init__(self, problems: Sequence[str]) -> None:
        shown = list(problems[:MAX_PROBLEMS])
        if len(problems) > MAX_PROBLEMS:
            shown.append(f"... and {len(problems) - MAX_PROBLEMS} more problems")
        self.problems = tuple(problems)
        self.message = "\n".join(shown)
        super().__init__(self.message)


def _too_many_values(document: object) -> bool:
    pending, seen = [document], 0
    while pending:
        item = pending.pop()
        seen += 1
        if seen > MAX_VALUES:
            return True
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


# -- parsing ----------------------------------------------------------------------------


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML was built with it (its wheels are), at a tenth of the CPU."""


def _load_yaml(text: str) -> tuple[object, yaml.Node | None]:
    """The document, and the node tree it was built from (for the lines of its problems)."""
    try:
        loader = _LOADER(text)  # checks every character: it can raise too
        try:
            node = loader.get_single_node()
            if node is not None and (twice := _keys_given_twice(node)):
                raise ConfigError(twice)
            return (loader.construct_document(node) if node is not None else None), node
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        raise ConfigError([yaml_problem(error, text)]) from None
    except RecursionError:
        raise ConfigError(["could not parse YAML: it is nested too deeply"]) from None


def _keys_given_twice(root: yaml.Node) -> list[str]:
    """A problem for each key a mapping gives twice: YAML requires them unique, and the loader
    would silently keep the last (a second `roles:` dropping the first, which a reader sees)."""
    problems: list[str] = []
    stack, seen_nodes = [root], 0
    while stack and seen_nodes < 100_000:
        node = stack.pop()
        seen_nodes += 1
        if isinstance(node, yaml.MappingNode):
            keys: set[object] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in keys:
                        line = key.start_mark.line + 1
                        problems.append(f"line {line}: {_show(key.value)} is given twice in one mapping")
                    keys.add(key.value)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return problems


def known_keys(loc: Loc) -> tuple[str, ...]:
    """The keys the file may hold at `loc` (a section's settings, the roles), for "did you mean"."""
    if tuple(loc) == ("roles",):
        return tuple(role.value for role in Role)
    model: type[BaseModel] = RepositoryConfig
    for part in loc:
        if isinstance(part, int):
            continue  # an entry of a list of mappings (`projects`): the entry's keys
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        entries = get_args(annotation)
        if len(entries) == 2 and entries[1] is Ellipsis:  # tuple[Model, ...]
            annotation = entries[0]
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return ()
        model = annotation
    # `_extends` is no setting of the model, but a key the file may hold (`_extend`: did you mean?)
    return (*model.model_fields, EXTENDS_KEY) if not loc else tuple(model.model_fields)


@dataclass(frozen=True)
class ParsedFile:
    """One file read on its own: its settings as a document (`_extends` taken out, empty
    sections dropped: they override nothing), what `_extends` says and on which line, and the
    configuration the file puts in force by itself, or its problems."""

    document: Mapping[str, object]
    config: RepositoryConfig
    error: ConfigError | None = None
    extends: object = None  # `_extends`' value as written
    extends_line: int | None = None  # its line; None: the file does not say `_extends`

    @property
    def has_extends(self) -> bool:
        """Whether the file says `_extends` (whatever its value)."""
        return self.extends_line is not None


def _broken(error: ConfigError) -> ParsedFile:
    return ParsedFile({}, RepositoryConfig.default(), error)


def parse_file(text: str | None) -> ParsedFile:
    """Read one file's text (None: no file) on its own; its problems are in `error`, never raised."""
    if text is None or not text.strip():
        return ParsedFile({}, RepositoryConfig.default())
    try:
        document, node = _load_yaml(text)
    except ConfigError as error:
        return _broken(error)
    if document is None:  # only comments, or `---`
        return ParsedFile({}, RepositoryConfig.default())
    if not isinstance(document, dict):
        return _broken(ConfigError([f"the file must be a mapping of keys to values, not {_show(document)}"]))
    if _too_many_values(document):
        return _broken(
            ConfigError([f"the file holds more than {MAX_VALUES} values once aliases are expanded"])
        )
    line = (Lines(node).line_of((EXTENDS_KEY,)) or 1) if EXTENDS_KEY in document else None
    extends = document.pop(EXTENDS_KEY, None)
    settings = {k: v for k, v in document.items() if not (v is None and k in SECTIONS)}
    try:
        config = RepositoryConfig.model_validate(settings)
    except ValidationError as error:
        problems = located(error.errors(include_url=False), Lines(node), known_keys)
        return ParsedFile({}, RepositoryConfig.default(), ConfigError(problems), extends, line)
    return ParsedFile(settings, config, None, extends, line)


def validate_document(document: Mapping[str, object]) -> RepositoryConfig:
    """The configuration a merged document puts in force; ConfigError (no lines: the values come
    from two files) when it cannot be used."""
    try:
        return RepositoryConfig.model_validate(dict(document))
    except ValidationError as error:
        raise ConfigError(located(error.errors(include_url=False), Lines(None), known_keys)) from None


def parse_repository_config(text: str | None) -> RepositoryConfig:
    """Parse the file's text on its own (None: no file); raise ConfigError naming every problem.

    `_extends` is taken out: what it names is read by `app.github.config_loader`."""
    parsed = parse_file(text)
    if parsed.error is not None:
        raise parsed.error
    return parsed.config
