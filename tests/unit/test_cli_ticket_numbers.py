"""`railyard status OWNER/REPO#N` with a number GitHub never gives: a clear usage error (exit 2),
never the database driver's `OverflowError` as an unexpected failure."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from app.cli import main


@pytest.mark.parametrize("number", ["99999999999999999999", "2147483648"])
def test_a_ticket_number_past_githubs_is_a_usage_error(
    number: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/r.db")
    assert main(["migrate"], out=io.StringIO(), err=io.StringIO()) == 0
    err = io.StringIO()
    status = main(["status", f"acme/app#{number}"], out=io.StringIO(), err=err)
    assert (status, "unexpected" in err.getvalue()) == (2, False), err.getvalue()
    assert f"acme/app#{number} is not a ticket" in err.getvalue()
