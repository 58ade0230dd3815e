"""The running server finds deliveries GitHub failed to make and asks for them again,
talking to the GitHub stand-in over loopback with its app JWT."""

from __future__ import annotations

import asyncio
from pathlib import Path

from github_standin import standin_subprocess
from tests.fakes import WEBHOOK_SECRET, ServerProcess, private_key_pem


async def test_the_server_asks_github_to_redeliver_what_never_arrived(tmp_path: Path) -> None:
    """A failed delivery that is not stored is redelivered; a successful one is left alone."""
    lost = {"event": "issue_comment", "guid": "lost-1", "action": "created", "installation_id": 7}
    lost |= {"status": "Invalid HTTP Response: 503", "status_code": 503}
    fine = {"event": "issue_comment", "guid": "fine-1", "action": "created", "installation_id": 7}
    seed = {"deliveries": [lost, fine]}
    with standin_subprocess(tmp_path / "standin.port", seed=seed) as github:
        server = ServerProcess(
            env={
                "DATABASE_URL": f"sqlite:///{tmp_path}/recovery.db",
                "APP_ID": "1",
                "PRIVATE_KEY": private_key_pem(),
                "WEBHOOK_SECRET": WEBHOOK_SECRET,
                "GITHUB_API_URL": github.url,
                "RECOVERY_INTERVAL_SECONDS": "1",
            },
            cwd=tmp_path,
        )
        await server.start()
        try:
            for _ in range(100):
                state = github.control("GET", "state")
                if state["redelivery_attempts"]:
                    break
                await asyncio.sleep(0.1)
        finally:
            server.stop()
        calls = github.calls()
    original = next(d for d in state["deliveries"] if d["guid"] == "lost-1" and not d["redelivery"])
    assert state["redelivery_attempts"] == [original["id"]]
    listing = [c for c in calls if c["path"].startswith("/app/hook/deliveries") and c["method"] == "GET"]
    assert listing and all(c["auth"] == "jwt" for c in listing)
