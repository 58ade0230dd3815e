"""API answers kept under (account, Idempotency-Key), on SQLite and PostgreSQL: kept with the unit,
one per key, the first kept wins a race, and an unkept unit keeps nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from app.bootstrap import wire
from app.store.database import Database
from handlers.ports import KeptAnswer

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def answer(key: str = "k1", account: int = 202, digest: str = "d1", status: int = 200) -> KeptAnswer:
    return KeptAnswer(account, key, digest, status, {"applied": status == 200, "n": [1, "two"]}, AT)


async def test_an_answer_is_kept_only_with_its_unit(database: Database) -> None:
    """Without commit nothing is kept; with it, the answer reads back whole."""
    store = wire(database).store
    async with store.unit() as uow:
        await uow.keep_answer(answer())
    async with store.read() as reads:
        assert await reads.kept_answer(202, "k1") is None
    async with store.unit() as uow:
        assert await uow.keep_answer(answer()) == answer()
        await uow.commit()
    async with store.read() as reads:
        assert await reads.kept_answer(202, "k1") == answer()
        assert await reads.kept_answer(303, "k1") is None  # keys are the account's own


async def test_the_first_answer_kept_under_a_key_wins(database: Database) -> None:
    """Two units keeping under one key at once: both get the same, first-committed answer."""
    store = wire(database).store

    async def keep(kept: KeptAnswer) -> KeptAnswer:
        async with store.unit() as uow:
            found = await uow.keep_answer(kept)
            await uow.commit()
            return found

    results = await asyncio.gather(keep(answer(digest="a", status=200)), keep(answer(digest="b", status=409)))
    assert results[0] == results[1]
    async with store.read() as reads:
        assert await reads.kept_answer(202, "k1") == results[0]
