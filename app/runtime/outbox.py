"""The outbox: intended GitHub writes, stored with the change that needs them, performed later.

- At most one visible effect per intended effect: every effect has a unique `dedupe_key`;
  a comment carries a hidden marker, and after an ambiguous failure (a timeout or 5xx after
  GitHub may have received it) the outbox looks for that marker among the app's own
  comments (or for its check-run by name on the commit) before creating it again. An effect
  is marked in flight before its create request leaves, so a process killed before the
  answer was recorded leaves an ambiguous effect, not a second comment.
- Leases: short (`LEASE_SECONDS`), renewed for the whole batch every third of that while
  the batch is performed, and renewed for an effect before it writes; one whose lease was
  taken over by another outbox is left alone. An outbox that died leaves leases that run
  out within `LEASE_SECONDS`, and another outbox takes its effects over.
- Coalescing: a `coalesce` effect enqueued again while pending is not duplicated; renderers
  registered for its kind compute the payload from the latest state when it is performed,
  so a burst of changes becomes one write, at most one per `surface_interval` per surface.
- Rate limits: `RateLimited` reschedules at GitHub's time for the whole installation;
  content-creating writes are spaced `spacing` seconds apart per installation. Both live in
  the database (`app.store.limits`), shared by every process.
- After the last retry an effect is marked failed, visibly, never dropped; so is one claimed
  past the last try (`RetryPolicy.max_attempts`) with no outcome recorded since (its write
  kills the process, or its lease runs out, every time), without being performed, and the
  rest of its batch goes on. `railyard retry ID` puts it back.
- Identity: an effect is written only while GitHub's repository of its `repository_id` has its
  name (`app.runtime.write_target`): never into a repository that took a renamed or deleted
  one's name.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from sqlalchemy.exc import DBAPIError

from app.contracts.effect_types import RENDER_NOTES, EffectKind
from app.contracts.traces import TRACING, set_attribute, span
from app.github.client import GitHubClient, GitHubError, GitHubUnavailable, NotFound, RateLimited
from app.runtime.idle_polls import IdlePolls
from app.runtime.metrics import Metrics
from app.runtime.own_writes import own_check_run, own_comment
from app.runtime.supervisor import Loop, RetryPolicy
from app.runtime.write_target import NoLongerPending, WriteTarget
from app.store.database import Database
from app.store.effects import CANCELLED, FAILED, MIN_SURFACE_INTERVAL, EffectLeases, assignment_ahead, marker
from app.store.installations import DELETED, SUSPENDED
from app.store.limits import Limits, SharedLimits
from app.store.queue import LEASE_SECONDS, worker_name
from app.store.repositories import REUSED

log = structlog.get_logger(__name__)

RENAMES_FOLLOWED = 3
"""Renames an edit follows in one attempt (a 404, then GitHub gives the id another name)."""


Renderer = Callable[[dict[str, Any]], Awaitable[Mapping[str, Any] | None]]
Writer = Callable[[dict[str, Any], Mapping[str, Any]], Awaitable[dict[str, Any]]]
"""Performs a kind the outbox does not write itself (the project fields): the row, its rendered
payload in, the result to keep out."""


@dataclass
class Outbox:
    """Performs due effects; several outboxes (processes) can share one PostgreSQL table."""

    database: Database
    github: GitHubClient
    metrics: Metrics
    app_id: int
    clock: Callable[[], float] = time.time
    renderers: Mapping[str, Renderer] = field(default_factory=dict)
    writers: Mapping[str, Writer] = field(default_factory=dict)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    lease_seconds: float = LEASE_SECONDS
    spacing: float = 1.0
    surface_interval: float = MIN_SURFACE_INTERVAL
    poll_seconds: float = 0.5
    idle_poll_max_seconds: float = 2.0
    name: str = field(default_factory=worker_name)
    limits: Limits | None = None  # the content-write slots; by default in the database
    stuck_after: float = 180.0
    target: WriteTarget | None = None  # whose repository a write goes to; by default asked of `github`

    def __post_init__(self) -> None:
        self._leases = EffectLeases(self.database, self.name, self.lease_seconds, self.surface_interval)
        self._target = self.target or WriteTarget(self.database, self.github, clock=self.clock)
        self._slots: Limits = self.limits or SharedLimits(self.database)
        self._wakeup = asyncio.Event()
        self._loop: Loop | None = None
        self._polls = IdlePolls(self.poll_seconds, self.idle_poll_max_seconds, clock=self.clock)

    def notify(self) -> None:
        """Effects were enqueued: look now rather than at the next poll."""
        self._polls.woken()
        self._wakeup.set()

    def loop(self) -> Loop:
        """The outbox as a supervised loop: a round that fails (the database away) is backed off."""
        self._loop = Loop(
            "outbox", self._step, interval=self.poll_seconds, stuck_after=self.stuck_after, wait=self._idle
        )
        return self._loop

    async def run(self, stop: asyncio.Event) -> None:
        """Perform effects until `stop` is set."""
        await self.loop().run(stop)

    async def _step(self, stop: asyncio.Event) -> bool:
        return await self.run_once() > 0

    async def _idle(self, stop: asyncio.Event) -> None:
        waits = [asyncio.create_task(self._wakeup.wait()), asyncio.create_task(stop.wait())]
        try:
            await asyncio.wait(waits, timeout=self._polls.seconds(), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()
        self._wakeup.clear()

    async def run_once(self, limit: int = 20) -> int:
        """Perform the effects due now; return how many were attempted."""
        rows = await self._leases.claim_due(self.clock(), limit)
        self._polls.looked(bool(rows))
        if not rows:
            return 0
        waiting = {row["id"] for row in rows}
        heartbeat = asyncio.create_task(self._keep_leases(waiting), name="outbox-leases")
        try:
            for row in rows:
                await self._perform_alone(row)
                waiting.discard(row["id"])
                if self._loop is not None:
                    self._loop.beat()  # a round of slow writes is progress, not a stuck loop
        finally:
            heartbeat.cancel()
            await asyncio.gather(heartbeat, return_exceptions=True)
        return len(rows)

    async def _perform_alone(self, row: dict[str, Any]) -> None:
        """Perform one effect; one that raises past `_perform` (its outcome could not be recorded)
        is counted as a failed, ambiguous attempt and the batch goes on: one bad row never stops
        the outbox. The database away stops the round (the loop backs off)."""
        try:
            await self._perform(row)
        except DBAPIError:
            raise
        except Exception as error:
            log.error("an effect could not be performed or recorded; the others go on", exc_info=error)
            try:  # whether GitHub acted is unknown: the next attempt looks before it writes again
                await self._failed_attempt(row, f"{type(error).__name__}: {error}", ambiguous=True)
            except Exception:
                log.exception("could not record the failed attempt; its lease runs out and it is tried again")

    async def _keep_leases(self, waiting: set[int]) -> None:
        """Renew the batch's leases every third of a lease until it is performed (then cancelled).

        The effects late in a batch (writes spaced a second apart, a slow GitHub) keep their
        leases however long the batch takes; a renewal that fails is tried at the next beat.
        """
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                await self._leases.renew(sorted(waiting), self.clock())
            except Exception as error:
                log.warning("could not renew the outbox's leases", error=str(error))

    async def _perform(self, row: dict[str, Any]) -> None:
        """Perform one effect, in a span of the trace of the delivery that caused it."""
        if not TRACING.on:
            return await self._perform_effect(row)
        attributes = {"railyard.effect.id": row["id"], "railyard.effect.kind": row["kind"]}
        with span("railyard.effect", attributes, parent=row.get("traceparent")):
            await self._perform_effect(row)

    async def _perform_effect(self, row: dict[str, Any]) -> None:
        with structlog.contextvars.bound_contextvars(effect=row["dedupe_key"], kind=row["kind"]):
            # The batch was leased together; an effect reached late may have been taken over.
            hold = await self._leases.hold_to_perform(row, self.clock())
            if hold is None:
                log.info("lease lost (or the effect cancelled) before it was performed; left alone")
                return
            row["repository"], row["dedupe_key"] = hold.repository, hold.dedupe_key  # moved meanwhile
            if hold.claims > self.retry.max_attempts:
                await self._give_up(row, hold.claims - 1)
                return
            if (status := hold.installation_status) in (DELETED, SUSPENDED):
                # Uninstalled: act no more, keep the record of what was intended.
                await self._finish(row, status=CANCELLED, last_error=f"installation {status}")
                return
            if row["repository_id"] is not None and hold.holder not in (None, row["repository_id"]):
                await self._finish(row, status=CANCELLED, last_error=REUSED)  # never into the new one
                return
            if hold.holder is None:  # its id moved away (a rename committed meanwhile): ask GitHub
                self._target.forget(row)
            try:
                result = await self._write(row)
            except RateLimited as error:
                # GitHub did not act on a rate-limited request: whether it is ambiguous is unchanged.
                await self._finish(
                    row,
                    next_attempt_at=error.retry_at or self.clock() + 60,
                    last_error=str(error),
                    ambiguous=row["ambiguous"],
                )
            except _Deferred as deferred:
                await self._finish(row, next_attempt_at=deferred.until)
            except (_LeaseLost, NoLongerPending):
                log.info("lease lost (or the effect cancelled) before the write left; left alone")
            except GitHubUnavailable as error:
                await self._failed_attempt(row, str(error), ambiguous=row["ambiguous"] or error.ambiguous)
            except GitHubError as error:
                log.error("effect failed", error=str(error))
                await self._finish(row, status=FAILED, attempts=row["attempts"] + 1, last_error=str(error))
                self.metrics.outbox_failed.inc()
            except Exception as error:
                # Nothing expected this (an answer of the wrong shape, a renderer's bug): the
                # effect is retried and then failed visibly; the outbox goes on with the others.
                log.error("effect raised an unexpected error", exc_info=error)
                note = f"{type(error).__name__}: {error}"
                await self._failed_attempt(
                    row, note, ambiguous=row["ambiguous"] or row.get("in_flight", False)
                )
            else:
                await self._done(row, result)
                # A surface changed since (or meanwhile) is due again one interval after this write.
                self._polls.due_at(self.clock() + self.surface_interval)
                self.metrics.outbox_done.labels(row["kind"]).inc()

    async def _failed_attempt(self, row: dict[str, Any], error: str, *, ambiguous: bool) -> None:
        attempts = row["attempts"] + 1
        if attempts >= self.retry.max_attempts:
            log.error("effect failed after retries", attempts=attempts, error=error)
            self.metrics.outbox_failed.inc()
            await self._finish(row, status=FAILED, attempts=attempts, ambiguous=ambiguous, last_error=error)
            return
        at = self.clock() + self.retry.delay(attempts)
        await self._finish(row, attempts=attempts, ambiguous=ambiguous, next_attempt_at=at, last_error=error)

    async def _give_up(self, row: dict[str, Any], claims: int) -> None:
        """Fail, unperformed, an effect none of whose last `claims` writes begun recorded an
        outcome (the write killed the process, or the lease ran out, each time): visibly, not
        claimed for ever."""
        log.error("giving up: no outcome recorded in any claim", claims=claims)
        self.metrics.outbox_failed.inc()
        await self._finish(row, status=FAILED, last_error=f"gave up: no outcome recorded in {claims} claims")

    async def _hold_lease(self, row: dict[str, Any], **values: Any) -> bool:
        """Renew this outbox's lease on the effect (setting `values`); False if it was lost."""
        return await self._leases.hold(row, self.clock(), **values)

    async def _in_flight(self, row: dict[str, Any]) -> None:
        """Record, before a create leaves, that GitHub may act on it.

        Should this process die before the answer is recorded, the next attempt finds the
        effect ambiguous and looks for what GitHub created instead of creating it again.
        """
        if not await self._hold_lease(row, ambiguous=True):
            raise _LeaseLost
        row["in_flight"] = True

    async def _done(self, row: dict[str, Any], result: dict[str, Any] | None) -> None:
        """Record a performed write; a surface enqueued again while it was written stays pending.

        A change that lands while its status comment or check-run is being written re-enqueues
        the surface (its `updated_at` moves); marking that done would lose the change, so the
        effect keeps what GitHub answered (the comment or check-run id) and runs again, at most
        one write per `surface_interval`.
        """
        await self._leases.done(row, result, self.clock())
        set_attribute("railyard.outcome", "done")

    async def _finish(self, row: dict[str, Any], **values: Any) -> None:
        set_attribute("railyard.outcome", str(values.get("status", "retry")))
        await self._leases.finish(row, self.clock(), **values)
        if values.get("next_attempt_at") is not None:
            self._polls.due_at(values["next_attempt_at"])

    async def _write(self, row: dict[str, Any]) -> dict[str, Any] | None:
        await self._target.confirm(row)  # renamed: row names the id's name now; gone: raises
        payload: Mapping[str, Any] | None = row["payload"]
        renderer = self.renderers.get(row["kind"])
        previous: dict[str, Any] = dict(row["result"] or {})
        if renderer is not None:
            rendered = await renderer(row)
            if rendered is None:
                return previous or None  # nothing to write any more
            payload = {k: v for k, v in rendered.items() if k != RENDER_NOTES}
            digest = _digest(payload)
            again = bool((row["payload"] or {}).get("rerun"))  # Re-run pressed: write all the same
            if (
                previous.get("digest") == digest
                and not again
                and (previous.get("comment_id") or previous.get("check_run_id"))
            ):
                return previous  # GitHub already shows exactly this: no write
            previous["digest"] = digest
            previous.pop("notes", None)
            if rendered.get(RENDER_NOTES):
                previous["notes"] = dict(rendered[RENDER_NOTES])
        assert payload is not None
        kind, installation, repository = row["kind"], row["installation_id"], row["repository"]
        if kind == EffectKind.REACTION:
            await self.github.call(
                "add_reaction",
                installation,
                repository=repository,
                comment_id=payload["comment_id"],
                json={"content": payload["content"]},
            )
            return None
        if kind in (EffectKind.ASSIGN, EffectKind.UNASSIGN):
            ahead = await asyncio.to_thread(assignment_ahead, self.database, row)
            if ahead is not None:  # an earlier change's assignment first, whatever its backoff
                raise _Deferred(max(ahead, self.clock()) + ASSIGNMENT_AFTER)
            await self.github.call(
                "add_assignees" if kind == EffectKind.ASSIGN else "remove_assignees",
                installation,
                repository=repository,
                number=payload["number"],
                json={"assignees": payload["assignees"]},
            )
            return None
        if kind in (EffectKind.COMMENT, EffectKind.STATUS_COMMENT):
            return {**previous, **await self._comment_once(row, payload)}
        if kind == EffectKind.CHECK_RUN:
            return {**previous, **await self._check_run_once(row, payload)}
        if kind in self.writers:
            return {**previous, **await self.writers[kind](row, payload)}
        if kind == EffectKind.DEPLOYMENT_REVIEW:
            return await self._review_deployment(row, payload)
        raise GitHubError(0, f"unknown effect kind {kind!r}")

    async def _review_deployment(self, row: dict[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        """Answer the protection rule. GitHub takes one answer per rule and run: a 422 means it
        has one already (an earlier attempt's, killed before it was recorded) or no longer waits,
        so the answer is done either way and never sent twice."""
        body = {k: payload[k] for k in ("environment_name", "state", "comment")}
        try:
            await self.github.call(
                "review_deployment_protection_rule",
                row["installation_id"],
                repository=row["repository"],
                run_id=payload["run_id"],
                json=body,
            )
        except GitHubError as error:
            if error.status != 422:
                raise
            log.info("the protection rule was answered already or no longer waits", run_id=payload["run_id"])
            return {"answered": "already"}
        return {"answered": payload["state"]}

    async def _edit_comment(self, installation: int, repository: str, comment_id: int, body: str) -> None:
        await self.github.call(
            "update_comment", installation, repository=repository, comment_id=comment_id, json={"body": body}
        )

    async def _edited(self, row: dict[str, Any], edit: Callable[[], Awaitable[Any]]) -> bool:
        """Edit what an earlier write created (by its id, under `row`'s name): False when GitHub
        says it is gone from a repository that still has the name (create it again). A 404 asks
        GitHub the repository id's name first (`WriteTarget.moved`): renamed, the edit is tried
        under the new name; the id gone, `RepositoryGone`; never a create in another repository.
        Renamed again at every try (`RENAMES_FOLLOWED` of them): tried again later, not created."""
        for _ in range(RENAMES_FOLLOWED):
            try:
                await edit()
                return True
            except NotFound:
                if not await self._target.moved(row):
                    return False
        raise GitHubUnavailable("renamed at every try of an edit: tried again later", ambiguous=False)

    async def _comment_once(self, row: dict[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        installation, number = row["installation_id"], payload["number"]
        existing_id = payload.get("comment_id") or (row["result"] or {}).get("comment_id")

        def body() -> str:  # the marker names the effect's key, which a rename moves
            return f"{payload['body']}\n\n{marker(row['dedupe_key'])}"

        async def edit(comment_id: int) -> None:
            await self._edit_comment(installation, row["repository"], comment_id, body())

        if existing_id:
            if await self._edited(row, lambda: edit(existing_id)):
                return {"comment_id": existing_id}
            log.warning("the comment was deleted; writing it again", comment_id=existing_id)
        if row["ambiguous"]:  # an earlier attempt's create may have landed (after the delete, too)
            found = await own_comment(self.github, self.app_id, row, number, other_than=existing_id)
            if found is not None:
                log.info("found the comment an earlier attempt created", comment_id=found)
                if row["kind"] in self.renderers:  # rendered again since: show the latest state
                    await edit(found)
                return {"comment_id": found}
        await self._space_content_write(row)
        created = await self.github.call(
            "create_comment", installation, repository=row["repository"], number=number, json={"body": body()}
        )
        if not isinstance(created, dict):
            return {"comment_id": None}
        return {"comment_id": created.get("id"), "html_url": created.get("html_url")}

    async def _check_run_once(self, row: dict[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        """Create the check on its commit once (found again after an ambiguous failure), then update it."""
        installation = row["installation_id"]
        existing_id = (row["result"] or {}).get("check_run_id")
        if existing_id is None and row["ambiguous"]:
            existing_id = await own_check_run(self.github, self.app_id, row, payload)
        if existing_id is not None:  # GitHub offers no way to delete a check-run: a 404 is rare
            update = {k: v for k, v in payload.items() if k != "head_sha"}

            def edit() -> Awaitable[Any]:
                return self.github.call(
                    "update_check_run", installation, repository=row["repository"],
                    check_run_id=existing_id, json=update,
                )  # fmt: skip

            if await self._edited(row, edit):
                return {"check_run_id": existing_id}
            log.warning("the check-run is gone; creating it again", check_run_id=existing_id)
        await self._space_content_write(row)
        created = await self.github.call(
            "create_check_run", installation, repository=row["repository"], json=dict(payload)
        )
        return {"check_run_id": created.get("id") if isinstance(created, dict) else None}

    async def _space_content_write(self, row: dict[str, Any]) -> None:
        """Take the installation's next content-write slot (shared by every process), then go.

        Not yet: `_Deferred` to the slot's time. Taken: the effect is marked in flight.
        """
        if self.spacing > 0:
            allowed = await self._slots.claim_write(row["installation_id"], self.clock(), self.spacing)
            if allowed is not None:
                raise _Deferred(allowed)
        await self._in_flight(row)


class _LeaseLost(Exception):  # noqa: N818 - control flow, not an error
    """Another outbox took the effect over (this one's lease expired): leave it to that one."""


ASSIGNMENT_AFTER = 0.5
"""Seconds an assignment waits after the time the one ahead of it for the same issue is due."""


class _Deferred(Exception):  # noqa: N818 - control flow, not an error
    """Not now: content-creating writes are spaced, and an assignment waits for the one ahead of
    it; try again at `until`."""

    def __init__(self, until: float) -> None:
        super().__init__(f"deferred until {until}")
        self.until = until


def _digest(payload: Mapping[str, Any]) -> str:
    """What a rendered write says, to skip writing what GitHub already shows."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
