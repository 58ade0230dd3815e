"""The server's start and stop: migrate, take over a dead process's leases (SQLite, when no other
live process takes leases on the file: `app.store.lease_holders`), start the intake writer,
GitHub's client and the supervised loops; stop them in reverse."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import structlog
from aiohttp import web

from app.runtime.supervisor import close_all
from app.store.effects import release_effect_leases
from app.store.lease_holders import LeaseHolders
from app.store.queue import release_all_leases
from app.web.app_keys import DATABASE, GITHUB, SETTINGS, SHELL, SUPERVISOR, WORKER, WRITER

log = structlog.get_logger("app.web.server")  # the name the lines had before the split


async def lifecycle(app: web.Application) -> AsyncIterator[None]:
    """Migrate, start the intake writer and the supervised loops; stop them in reverse on shutdown.

    Shutdown closes everything whatever a loop did: each step runs even if one before failed.
    """
    database = app[DATABASE]
    await asyncio.to_thread(database.migrate)
    worker = app.get(WORKER)
    if worker is not None:  # its connections opened now, not in the middle of its first commands
        await database.open_connections(worker.concurrency)
    holders = LeaseHolders(database)
    if database.is_sqlite and not await asyncio.to_thread(holders.join):
        log.warning("another live process takes leases on this database; its leases are left to run out")
    elif database.is_sqlite:
        # No other live process takes leases on the file: leases still held are a dead process's.
        released = await asyncio.to_thread(release_all_leases, database)
        if released:
            log.warning("took over deliveries leased before a restart", count=released)
        effects = await asyncio.to_thread(release_effect_leases, database)
        if effects:
            log.warning("took over GitHub writes leased before a restart", count=effects)
    writer = app[WRITER]
    await writer.start()
    github = app.get(GITHUB)
    if github is not None:
        await github.start()
    supervisor = app[SUPERVISOR]
    supervisor.start()
    log.info("railyard started", mode="running" if app[SETTINGS].configured else "setup")
    try:
        yield
    finally:
        await close_all(
            supervisor.close,  # every loop is stopped and awaited, none left behind
            lambda: asyncio.to_thread(holders.leave),
            writer.close,
            github.close if github is not None else None,
            lambda: asyncio.to_thread(app[SHELL].store.close),
            lambda: asyncio.to_thread(database.close),
        )
