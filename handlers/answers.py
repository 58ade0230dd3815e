"""What a handler asks to be written on GitHub, as intents: who, where and which facts, no wording.

A unit of work enqueues them with the change that called for them (`UnitOfWork.send`), so
they exist exactly when the change does. The words people read are chosen in `app/views`;
replies to a person go through the per-account reply limit there too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policies.gate import GateDecision
from policies.model import Ticket
from policies.rails import RailPolicy
from policies.refusals import Refusal

# -- surfaces: written from the latest state when the outbox gets to them ---------------


@dataclass(frozen=True)
class StatusComment:
    """The ticket's one status comment, created once, then edited."""

    installation_id: int
    repository: str
    number: int


@dataclass(frozen=True)
class CheckRun:
    """The `railyard` check on one commit of a PR (its head, or a merge-queue commit)."""

    installation_id: int
    repository: str
    pull: int
    head_sha: str
    merge_group: bool = False
    rerun: bool = False
    """Someone pressed Re-run: write the check even if GitHub already shows exactly this."""
    shared_only: bool = False
    """The PR was closed: write the commit's check again only for the open PRs that share it."""


# -- acknowledgements -------------------------------------------------------------------


@dataclass(frozen=True)
class Reaction:
    """A reaction on a comment (`+1`: the command ran)."""

    installation_id: int
    repository: str
    comment_id: int
    content: str = "+1"


@dataclass(frozen=True)
class Assign:
    """Add assignees to an issue (the claimant, once claimed)."""

    installation_id: int
    repository: str
    number: int
    logins: tuple[str, ...]
    key: str


@dataclass(frozen=True)
class Unassign:
    """Remove assignees from an issue (the previous claimant, once the ticket is reopened)."""

    installation_id: int
    repository: str
    number: int
    logins: tuple[str, ...]
    key: str


@dataclass(frozen=True)
class ReopenedNotice:
    """Tell the previous claimant the ticket was reopened, with the reason; any runner may claim it.

    `released` is True when the claimant gave the work up themselves: they are named, not mentioned.
    """

    installation_id: int
    repository: str
    number: int
    claimant: str
    by: str
    reason: str
    released: bool
    key: str


@dataclass(frozen=True)
class SentBackNotice:
    """Tell the runner their delivery was sent back, with the reviewer's feedback."""

    installation_id: int
    repository: str
    number: int
    runner: str | None
    attempt: object
    reviewer: str
    feedback: str
    key: str


# -- the deployment gate ----------------------------------------------------------------


@dataclass(frozen=True)
class DeploymentReview:
    """Answer a custom deployment protection rule: the run `run_id` may (or may not) deploy to
    `environment`, as `decision` says; once per `key` (one protection-rule request)."""

    installation_id: int
    repository: str
    run_id: int
    environment: str
    decision: GateDecision
    key: str


# -- replies to a person's comment (limited per account) --------------------------------


@dataclass(frozen=True)
class Refused:
    """The command was refused: the refusal's reason and hint; `retry` is the command line that
    would run now (`/accept rev=7`), for a command refused as stale; `revision` the ticket's."""

    refusal: Refusal
    retry: str | None = None
    revision: int | None = None


@dataclass(frozen=True)
class NearMiss:
    """`/acept`: not a command; the one it looks like."""

    typed: str
    suggestion: str


@dataclass(frozen=True)
class Malformed:
    """A command whose arguments could not be read; the parser's explanation."""

    problem: str


@dataclass(frozen=True)
class CannotRunYet:
    """Roles could not be verified now; the command will be tried again."""

    reason: str


@dataclass(frozen=True)
class PullTarget:
    """A command on a PR that names no ticket it links (or one it does not link); or, with
    `issue`, a command on that issue that names another ticket (`#N`), which it never runs on."""

    target: int | None
    linked: tuple[int, ...]
    issue: int | None = None


@dataclass(frozen=True)
class ArtifactNotFound:
    """`/deliver` named a commit, branch or pull request the repository does not have."""

    kind: str  # "commit", "branch" or "pull request"
    name: str
    repository: str


@dataclass(frozen=True)
class Help:
    """The command list."""


@dataclass(frozen=True)
class StatusAnswer:
    """A short answer to `/status` (the ticket, or None when the issue is not a ticket); what
    blocks its repository rail is named under `policy`, the repository's (as the rail was judged)."""

    ticket: Ticket | None
    policy: RailPolicy = field(default_factory=RailPolicy)


@dataclass(frozen=True)
class Ignored:
    """A comment held several state-changing commands: which one ran and which were ignored."""

    ran: str
    ignored: tuple[str, ...]


Message = (
    Refused
    | NearMiss
    | Malformed
    | CannotRunYet
    | PullTarget
    | ArtifactNotFound
    | Help
    | StatusAnswer
    | Ignored
)

_KINDS: dict[type, str] = {
    Refused: "refusal",
    ArtifactNotFound: "refusal",
    NearMiss: "hint",
    Malformed: "hint",
    CannotRunYet: "cannot-verify",
    PullTarget: "pr-target",
    Help: "help",
    StatusAnswer: "status",
    Ignored: "ignored",
}


@dataclass(frozen=True)
class Reply:
    """An answer to one person's comment, quoting the line it answers."""

    installation_id: int
    repository: str
    number: int  # the issue or pull request to answer on
    comment_id: int  # the comment answered (reacted to when over the limit)
    author: str
    author_id: int
    line: str  # the command line as written, quoted in the answer
    message: Message

    @property
    def kind(self) -> str:
        """What sort of answer it is (one per answered comment and kind)."""
        return _KINDS[type(self.message)]


Answer = (
    StatusComment
    | CheckRun
    | Reaction
    | Assign
    | Unassign
    | SentBackNotice
    | ReopenedNotice
    | Reply
    | DeploymentReview
)
