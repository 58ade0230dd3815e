"""The per-repository configuration, `.github/railyard.yml` (SPEC: "Roles and configuration").

Parsing is pure: text in, a frozen `RepositoryConfig` or a `ConfigError` out. The
`ConfigLoader` fetches the file through a function it is given and parses each distinct
git blob only once; the blob sha is the policy version every recorded event carries.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any

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


def _load_yaml(text: str) -> tuple[object, yaml.Node | None]:
    """The document, and the node tree it was built from (for the lines of its problems)."""
    try:
        loader = yaml.SafeLoader(text)  # checks every character: it can raise too
        try:
            node = loader.get_single_node()
            return (loader.construct_document(node) if node is not None else None), node
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        raise ConfigError([yaml_problem(error, text)]) from None
    except RecursionError:
        raise ConfigError(["could not parse YAML: it is nested too deeply"]) from None


def known_keys(loc: Loc) -> tuple[str, ...]:
    """The keys the file may hold at `loc` (a section's settings, the roles), for "did you mean"."""
    if tuple(loc) == ("roles",):
        return tuple(role.value for role in Role)
    model: type[BaseModel] = RepositoryConfig
    for part in loc:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return ()
        model = annotation
    return tuple(model.model_fields)


def parse_repository_config(text: str | None) -> RepositoryConfig:
    """Parse the file's text (None: no file); raise ConfigError naming every problem found."""
    if text is None or not text.strip():
        return RepositoryConfig.default()
    document, node = _load_yaml(text)
    if document is None:  # only comments, or `---`
        return RepositoryConfig.default()
    if not isinstance(document, dict):
        raise ConfigError([f"the file must be a mapping of keys to values, not {_show(document)}"])
    if _too_many_values(document):
        raise ConfigError([f"the file holds more than {MAX_VALUES} values once aliases are expanded"])
    try:
        return RepositoryConfig.model_validate(document)
    except ValidationError as error:
        raise ConfigError(located(error.errors(include_url=False), Lines(node), known_keys)) from None


# -- loading ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RepoFile:
    """A file on the default branch: its git blob sha and its text."""

    sha: str
    text: str


@dataclass(frozen=True)
class LoadedConfig:
    """The configuration in force; when the file is broken, defaults and the `error` to report."""

    config: RepositoryConfig
    policy_version: str
    error: str | None = None


Fetch = Callable[[int, str], Awaitable[RepoFile | None]]
Parse = Callable[[str | None], RepositoryConfig]


def read_config(file: RepoFile | None, parse: Parse = parse_repository_config) -> LoadedConfig:
    """The configuration a file puts in force; a broken file gives defaults and its error."""
    if file is None:
        return LoadedConfig(RepositoryConfig.default(), DEFAULT_POLICY_VERSION)
    try:
        return LoadedConfig(parse(file.text), file.sha)
    except ConfigError as error:
        return LoadedConfig(RepositoryConfig.default(), file.sha, error.message)


class ConfigLoader:
    """Reads `.github/railyard.yml` and parses each distinct blob sha once.

    Commands read the file when they run (`fresh=True`). Everything else (repository and
    deployment events, rendering the status comment and check-runs) may use what was read in
    the last `max_age` seconds: those paths run for every event and every render, and would
    otherwise spend most of the installation's API budget on one small file. A push to the
    default branch forgets the repository's copy (`forget`), so a change applies at once in
    the process that sees the push, and within `max_age` everywhere else.
    """

    def __init__(
        self,
        fetch: Fetch,
        *,
        parse: Parse = parse_repository_config,
        cache_size: int = 1024,
        max_age: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`fetch(installation_id, "owner/repo")` returns the default branch's file, or None."""
        self._fetch = fetch
        self._parse = parse
        self._cache_size = cache_size
        self._by_sha: OrderedDict[str, LoadedConfig] = OrderedDict()
        self._max_age, self._clock = max_age, clock
        self._recent: OrderedDict[str, tuple[float, LoadedConfig]] = OrderedDict()

    def forget(self, repository: str) -> None:
        """The repository's file may have changed (a push to its default branch): read it again."""
        key = repository.casefold()
        if key in self._recent:  # kept as known (for limits), but too old to be used as recent
            self._recent[key] = (self._clock() - self._max_age, self._recent[key][1])

    def known(self, repository: str) -> LoadedConfig | None:
        """The configuration last read for `repository`, however long ago (None: never read
        here, or forgotten): what a limit is checked against before anything is asked of GitHub."""
        recent = self._recent.get(repository.casefold())
        return recent[1] if recent is not None else None

    async def load(self, installation_id: int, repository: str, *, fresh: bool = False) -> LoadedConfig:
        """The configuration in force for `repository` ("owner/repo"): read now when `fresh`."""
        key, now = repository.casefold(), self._clock()
        recent = self._recent.get(key)
        if not fresh and recent is not None and now - recent[0] < self._max_age:
            return recent[1]
        loaded = await self._read(installation_id, repository)
        self._recent[key] = (now, loaded)
        self._recent.move_to_end(key)
        if len(self._recent) > self._cache_size:
            self._recent.popitem(last=False)
        return loaded

    async def _read(self, installation_id: int, repository: str) -> LoadedConfig:
        file = await self._fetch(installation_id, repository)
        if file is None:
            return read_config(None)
        loaded = self._by_sha.get(file.sha)
        if loaded is None:
            loaded = read_config(file, self._parse)
            self._by_sha[file.sha] = loaded
            if len(self._by_sha) > self._cache_size:
                self._by_sha.popitem(last=False)
        else:
            self._by_sha.move_to_end(file.sha)
        return loaded
