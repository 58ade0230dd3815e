"""Whether a stored PR's head branch is in the PR's own repository is decided by GitHub's
repository ids (migration 0025), through the SQL store on SQLite and PostgreSQL: names are
moved, passed on and reused, ids are not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alembic import command
from sqlalchemy import insert, select

from app.store import pulls
from app.store.database import Database, alembic_config
from app.store.repositories import place, repositories
from handlers.observe import pull_request_from
from support.databases import migrated_back_to
from tests.fakes.github import pull_answer

VAULT, FORK = 1, 2


def test_a_forks_pull_request_links_nothing_by_branch_after_the_repository_takes_the_forks_name(
    database: Database,
) -> None:
    """bravo forked acme/vault (id 1) as bravo/vault (id 2) and opened PR #7 from its agent/12;
    then bravo deleted the fork and acme transferred acme/vault to bravo, where it is called
    bravo/vault now. The stored PR's head still names bravo/vault, the fork's name when it was
    seen, but is another repository: asked for the PRs from the repository's own agent/12 (a
    delivery reporting that branch), the fork's PR is not one of them."""
    answer = pull_answer(
        "acme/vault", 7, head_ref="agent/12", head_repository="bravo/vault",
        head_repository_id=FORK, repository_id=VAULT,
    )  # fmt: skip
    pull = pull_request_from(answer, "acme/vault", 0.0)
    assert pull is not None and not pull.head_in_repository
    with database.write() as connection:
        place(connection, VAULT, "acme/vault", None, 1.0)
        pulls.remember(connection, pull, set())
        place(connection, VAULT, "bravo/vault", None, 2.0)
    with database.read() as connection:
        stored = pulls.stored_pull(connection, "bravo/vault", 7)
        assert stored is not None and not stored[0].head_in_repository
        assert pulls.pulls_where(connection, "bravo/vault", head_ref="agent/12") == []


@pytest.fixture
def before_0025(database: Database) -> Iterator[Database]:
    """The database at 0024, before PRs kept their repositories' ids, back to head afterwards."""
    with migrated_back_to(database, "0024"):
        yield database


def test_the_migration_gives_ids_to_heads_named_like_their_repository_and_forks_stay_forks(
    before_0025: Database,
) -> None:
    """acme/vault is repository 1: its PRs get 1, and a head named acme/vault (any case) 1 too;
    a fork's head (bravo/vault) and a deleted fork's get none, so neither is in acme/vault, even
    once acme/vault is transferred into the fork's name. A PR of a name railyard knows no id for
    (a/b) keeps none, and its names decide, as before."""
    heads = {("acme/vault", 9): "ACME/Vault", ("acme/vault", 10): "bravo/vault", ("acme/vault", 11): None}
    heads[("a/b", 3)] = "a/b"
    with before_0025.write() as connection:
        connection.execute(insert(repositories).values(id=VAULT, full_name="acme/vault", updated_at=1.0))
        for (name, number), head in heads.items():
            connection.execute(
                insert(pulls.pull_requests).values(  # 0024's columns only
                    repository=name, number=number, url="u", open=True, merged=False, linked=[],
                    updated_at=1.0, head_repository=head, head_ref="agent/12",
                )
            )  # fmt: skip
    command.upgrade(alembic_config(before_0025.url), "head")
    columns = (pulls.pull_requests.c.number, pulls.pull_requests.c.repository_id)
    with before_0025.read() as connection:
        ids = connection.execute(select(*columns, pulls.pull_requests.c.head_repository_id)).all()
    assert sorted(tuple(row) for row in ids) == [(3, None, None), (9, 1, 1), (10, 1, None), (11, 1, None)]
    with before_0025.write() as connection:
        place(connection, VAULT, "bravo/vault", None, 2.0)
    with before_0025.read() as connection:
        own = [pull.number for pull, _ in pulls.pulls_where(connection, "bravo/vault", head_ref="agent/12")]
        legacy = pulls.pulls_where(connection, "a/b", head_ref="agent/12")
    assert own == [9]
    assert [pull.number for pull, _ in legacy] == [3]
