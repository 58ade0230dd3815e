"""Organization defaults: a configuration file that starts from another (SPEC: "Organization
defaults and GitHub's own views").

A repository without `.github/railyard.yml` uses the same file of its owner's `.github`
repository; a repository's file may say `_extends: NAME` to start from the file of another
repository of the same owner. The two are laid one over the other key by key: mappings merge
(recursively), anything else (a list, a number, a string, null) in the repository's file
replaces what the base says. One level only: what the base itself extends is not followed.
Pure: documents in, a document, a repository name or a policy version out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

EXTENDS_KEY = "_extends"
"""The key of a repository's file that names the repository whose file it starts from."""
ORGANIZATION_REPOSITORY = ".github"
"""The owner's repository whose file a repository without one uses (GitHub's own convention)."""

_OWNER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")


def merge_documents(base: Mapping[str, object], override: Mapping[str, object]) -> dict[str, object]:
    """`override` laid over `base`: a key both hold as mappings merges key by key (recursively);
    any other value of `override` (a list too) replaces the base's; the base's other keys stay."""
    merged: dict[str, object] = dict(base)
    for key, value in override.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = merge_documents(below, value)
        else:
            merged[key] = value
    return merged


def organization_repository(repository: str) -> str | None:
    """Where `repository` ("owner/name") finds its organization's file when it has none:
    `owner/.github`, or None for `owner/.github` itself (its file is its own)."""
    owner, _, name = repository.partition("/")
    if name.casefold() == ORGANIZATION_REPOSITORY:
        return None
    return f"{owner}/{ORGANIZATION_REPOSITORY}"


def extends_name(value: object) -> tuple[str | None, str]:
    """`_extends`' value as (owner or None, repository name); ValueError saying what is wrong."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected the name of a repository of this owner, such as .github")
    text = value.strip()
    if ":" in text:
        raise ValueError(f"{text!r} names a path: railyard always reads .github/railyard.yml")
    owner, slash, name = text.rpartition("/")
    if slash and not _OWNER.fullmatch(owner):
        raise ValueError(f"{text!r} is not a repository name (NAME or OWNER/NAME)")
    if not _NAME.fullmatch(name) or name in (".", ".."):
        raise ValueError(f"{text!r} is not a repository name (NAME or OWNER/NAME)")
    return (owner if slash else None), name


def extends_target(repository: str, value: object) -> str:
    """The repository ("owner/name") that a file of `repository` names with `_extends: value`.

    ValueError when it names no repository that file may start from: a malformed name, another
    owner's repository (never followed: one owner's settings cannot come from another's), or
    `repository` itself."""
    owner, name = extends_name(value)
    own_owner, _, own_name = repository.partition("/")
    if owner is not None and owner.casefold() != own_owner.casefold():
        raise ValueError(
            f"{owner}/{name} is another owner's repository: only a repository of {own_owner} can be extended"
        )
    if name.casefold() == own_name.casefold():
        raise ValueError(f"{name} is this repository itself")
    return f"{own_owner}/{name}"


def policy_version(own_sha: str | None, base: tuple[str, str] | None) -> str:
    """The policy version of what is in force: the repository's blob sha alone (as before there
    were organization defaults), `NAME@SHA` for a file used from repository NAME of the owner,
    and `SHA+NAME@SHA` for a file that extends another; both blob shas are named."""
    used = f"{base[0].partition('/')[2] or base[0]}@{base[1]}" if base is not None else None
    if own_sha is None:
        if used is None:
            raise ValueError("a policy version names at least one file")
        return used
    return own_sha if used is None else f"{own_sha}+{used}"


def own_sha_of(version: str) -> str | None:
    """The repository's own file's blob sha a `policy_version` names (None: it names none, the
    organization's file or the defaults being in force)."""
    own = version.partition("+")[0]
    return own if _BLOB_SHA.fullmatch(own) else None


_BLOB_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
