"""The configuration in force for a repository: its `.github/railyard.yml`, the file that one
extends, or its organization's (SPEC: "Roles and configuration", "Organization defaults").

Only default branches count. A repository without the file uses `.github/railyard.yml` of its
owner's `.github` repository (none there either: the defaults); a file that says `_extends:
NAME` starts from the file of repository NAME of the same owner (`policies.config_layers`
merges them). A file another repository starts from is read as it is: its own `_extends` is
not followed but reported, one level only. What cannot be used (a broken file, a base that is
missing or broken) puts the defaults in force with the problems, each naming its file, as a
broken file always has. The `ConfigLoader` fetches through a function it is given, parses each
distinct git blob once and remembers which repositories' files each answer was built from, so
a push to any of them forgets it.
"""

from __future__ import annotations

import base64
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from app.github.config import (
    CONFIG_PATH,
    DEFAULT_POLICY_VERSION,
    ConfigError,
    ParsedFile,
    RepositoryConfig,
    parse_file,
    validate_document,
)
from policies.config_layers import (
    EXTENDS_KEY,
    extends_target,
    merge_documents,
    organization_repository,
    policy_version,
)


@dataclass(frozen=True)
class RepoFile:
    """A file on the default branch: its git blob sha and its text."""

    sha: str
    text: str
    unreadable: str | None = None
    """Why GitHub gave the file without its text (None: it did): the file's problem, never
    an empty file, which would put the defaults in force unannounced."""


TOO_LARGE = (
    "the file is larger than 1 MB: GitHub's contents API does not give its text, so railyard "
    "cannot read it (a configuration is a few kilobytes; move long lists into teams)"
)


def repo_file(found: object) -> RepoFile | None:
    """The file a contents API answer describes (None: not a file). Past 1 MB GitHub answers
    `"encoding": "none"` and no content: that file is `unreadable`, not empty."""
    if not isinstance(found, dict) or found.get("type") != "file":
        return None
    sha = str(found.get("sha"))
    if found.get("encoding", "base64") != "base64":
        return RepoFile(sha, "", TOO_LARGE)
    return RepoFile(sha, base64.b64decode(found.get("content") or "").decode("utf-8", errors="replace"))


@dataclass(frozen=True)
class LoadedConfig:
    """The configuration in force; when it cannot be used, defaults and the `error` to report.

    `sources` are the repositories (folded to lower case) whose file was asked for to build it,
    found or not: a push to the default branch of any of them may change it."""

    config: RepositoryConfig
    policy_version: str
    error: str | None = None
    sources: tuple[str, ...] = ()


Fetch = Callable[[int, str], Awaitable[RepoFile | None]]
Parse = Callable[[str | None], ParsedFile]


def read_config(file: RepoFile | None, parse: Parse = parse_file) -> LoadedConfig:
    """The configuration one file puts in force by itself; a broken file gives defaults and its error."""
    if file is None:
        return LoadedConfig(RepositoryConfig.default(), DEFAULT_POLICY_VERSION)
    parsed = _unreadable(file) or parse(file.text)
    error = parsed.error.message if parsed.error is not None else None
    return LoadedConfig(parsed.config, file.sha, error)


_OTHER_FILE = re.compile(r"(?:merged with )?([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+): ")
"""How a problem of another repository's file begins (`_in`): its name."""


def unquoted(problems: Sequence[str], where: str) -> list[str]:
    """The problems a reader of this repository is shown (`where`: on a pull request, in a
    ticket's replies and status comment): its own file's as they are; those of the file it
    starts from (its organization's, or the one `_extends` names), or of the two merged, are
    another repository's words, perhaps a private one's: one line names that repository and
    counts them instead of quoting them."""
    own = [problem for problem in problems if not _OTHER_FILE.match(problem)]
    others = [match for problem in problems if (match := _OTHER_FILE.match(problem))]
    if others:
        own.append(
            f"the file of {others[0].group(1)}, which this one extends, cannot be used with it "
            f"({len(others)} problem(s) there, not quoted {where}; `railyard validate` or the "
            "status comment of a ticket there shows them)"
        )
    return own


def shown_error(error: str | None) -> str | None:
    """A configuration's error as a ticket's replies and status comment show it (`unquoted`)."""
    return "\n".join(unquoted(error.splitlines(), "here")) if error is not None else None


def _unreadable(file: RepoFile) -> ParsedFile | None:
    """A file GitHub gave without its text, as a file with that one problem."""
    if file.unreadable is None:
        return None
    return ParsedFile({}, RepositoryConfig.default(), ConfigError([file.unreadable]))


def _in(name: str, problems: Sequence[str]) -> list[str]:
    """Problems of another repository's file, each naming it."""
    return [f"{name}: {problem}" for problem in problems]


def _base_problems(base: ParsedFile, name: str) -> list[str]:
    """What makes the file of `name` unusable as a base (one level only: its `_extends` too)."""
    problems = list(base.error.problems) if base.error is not None else []
    return _in(name, [*problems, *_extends_as_base(base)])


def _extends_as_base(base: ParsedFile) -> list[str]:
    """A file other repositories start from may not extend another (one level only)."""
    if not base.has_extends:
        return []
    return [
        f"line {base.extends_line}: {EXTENDS_KEY}: not followed: a file other repositories "
        "start from cannot extend another (one level only)"
    ]


def inherited(base: ParsedFile, name: str) -> RepositoryConfig:
    """The configuration of a repository without a file, from repository `name`'s file (its
    organization's); ConfigError naming `name` in every problem."""
    problems = _base_problems(base, name)
    if problems:
        raise ConfigError(problems)
    return base.config


def layered(own: ParsedFile, base: ParsedFile, name: str) -> RepositoryConfig:
    """`own` laid over the file of repository `name` that it extends (key by key, lists
    replaced); ConfigError listing the problems of both, the base's naming it."""
    problems = list(own.error.problems) if own.error is not None else []
    problems += _base_problems(base, name)
    if problems:
        raise ConfigError(problems)
    try:
        return validate_document(merge_documents(base.document, own.document))
    except ConfigError as error:
        raise ConfigError(_in(f"merged with {name}", error.problems)) from None


def _loaded(make: Callable[[], RepositoryConfig], version: str) -> LoadedConfig:
    try:
        return LoadedConfig(make(), version)
    except ConfigError as error:
        return LoadedConfig(RepositoryConfig.default(), version, error.message)


def _message(problems: Sequence[str]) -> str | None:
    return ConfigError(problems).message if problems else None


class ConfigLoader:
    """Reads `.github/railyard.yml` (and the file it starts from) and parses each blob sha once.

    Commands read the files when they run (`fresh=True`). Everything else (repository and
    deployment events, rendering the status comment and check-runs) may use what was read in
    the last `max_age` seconds: those paths run for every event and every render, and would
    otherwise spend most of the installation's API budget on small files. A push to the
    default branch forgets the copies built from that repository's file (`forget`): its own,
    and those of every repository that extends it or uses it as its organization's, so a
    change applies at once in the process that sees the push, and within `max_age` everywhere else.
    """

    def __init__(
        self,
        fetch: Fetch,
        *,
        parse: Parse = parse_file,
        cache_size: int = 1024,
        max_age: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`fetch(installation_id, "owner/repo")` returns the default branch's file, or None."""
        self._fetch = fetch
        self._parse = parse
        self._cache_size = cache_size
        self._by_sha: OrderedDict[str, ParsedFile] = OrderedDict()
        self._layers: OrderedDict[tuple[str, ...], LoadedConfig] = OrderedDict()
        self._max_age, self._clock = max_age, clock
        self._recent: OrderedDict[str, tuple[float, LoadedConfig]] = OrderedDict()

    def forget(self, repository: str) -> None:
        """The repository's file may have changed (a push to its default branch): read it again,
        for it and for every repository whose configuration was built from it."""
        key, stale = repository.casefold(), self._clock() - self._max_age
        for name, (_, loaded) in list(self._recent.items()):
            # kept as known (for limits), but too old to be used as recent
            if name == key or key in loaded.sources:
                self._recent[name] = (stale, loaded)

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
        loaded = await self.layered_on(
            installation_id, repository, await self._fetch(installation_id, repository)
        )
        self._recent[key] = (now, loaded)
        self._recent.move_to_end(key)
        if len(self._recent) > self._cache_size:
            self._recent.popitem(last=False)
        return loaded

    async def layered_on(self, installation_id: int, repository: str, own: RepoFile | None) -> LoadedConfig:
        """What `own` (the repository's file, None: it has none) puts in force in `repository`,
        with the file it extends, or its organization's, read from their default branches now."""
        if own is None:
            return await self._organization(installation_id, repository)
        parsed, mine = self._parsed(own), (repository.casefold(),)
        problems = list(parsed.error.problems) if parsed.error is not None else []
        if not parsed.has_extends:
            return LoadedConfig(parsed.config, own.sha, _message(problems), mine)
        try:
            target = extends_target(repository, parsed.extends)
        except ValueError as reason:
            problems.append(f"line {parsed.extends_line}: {EXTENDS_KEY}: {reason}")
            return LoadedConfig(RepositoryConfig.default(), own.sha, _message(problems), mine)
        if problems:  # the file cannot be used whatever it extends
            return LoadedConfig(RepositoryConfig.default(), own.sha, _message(problems), mine)
        sources = (*mine, target.casefold())
        base = await self._fetch(installation_id, target)
        if base is None:
            problem = (
                f"line {parsed.extends_line}: {EXTENDS_KEY}: {target} has no {CONFIG_PATH} on its "
                "default branch (or the app cannot read that repository)"
            )
            return LoadedConfig(RepositoryConfig.default(), own.sha, problem, sources)
        version = policy_version(own.sha, (target, base.sha))
        loaded = self._layer(
            (own.sha, target.casefold(), base.sha),
            lambda: _loaded(lambda: layered(parsed, self._parsed(base), target), version),
        )
        return replace(loaded, sources=sources)

    async def _organization(self, installation_id: int, repository: str) -> LoadedConfig:
        """A repository without a file: its owner's `.github` repository's file, or the defaults."""
        organization = organization_repository(repository)
        if organization is None:
            return LoadedConfig(
                RepositoryConfig.default(), DEFAULT_POLICY_VERSION, None, (repository.casefold(),)
            )
        sources = (repository.casefold(), organization.casefold())
        base = await self._fetch(installation_id, organization)
        if base is None:
            return LoadedConfig(RepositoryConfig.default(), DEFAULT_POLICY_VERSION, None, sources)
        version = policy_version(None, (organization, base.sha))
        loaded = self._layer(
            ("", organization.casefold(), base.sha),
            lambda: _loaded(lambda: inherited(self._parsed(base), organization), version),
        )
        return replace(loaded, sources=sources)

    def _layer(self, key: tuple[str, ...], make: Callable[[], LoadedConfig]) -> LoadedConfig:
        """The configuration two files make, built once per pair of blobs and base repository
        (without `sources`: the same pair may serve several repositories)."""
        loaded = self._layers.get(key)
        if loaded is None:
            loaded = self._layers[key] = make()
            if len(self._layers) > self._cache_size:
                self._layers.popitem(last=False)
        else:
            self._layers.move_to_end(key)
        return loaded

    def as_organization_file(self, file: RepoFile) -> tuple[str, ...]:
        """What makes `file` unusable as the file other repositories start from (the owner's
        `.github` repository's, for every repository without one and every one that extends it)
        beyond its own problems (`_extends_as_base`)."""
        return tuple(_extends_as_base(self._parsed(file)))

    def _parsed(self, file: RepoFile) -> ParsedFile:
        """The file read on its own, parsed once per blob sha."""
        unreadable = _unreadable(file)
        if unreadable is not None:
            return unreadable
        parsed = self._by_sha.get(file.sha)
        if parsed is None:
            parsed = self._by_sha[file.sha] = self._parse(file.text)
            if len(self._by_sha) > self._cache_size:
                self._by_sha.popitem(last=False)
        else:
            self._by_sha.move_to_end(file.sha)
        return parsed
