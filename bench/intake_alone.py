"""`railyard serve` with its worker, outbox, maintenance and watchdog left out: intake alone.

Started by `bench/intake.py` for a reference figure only; railyard itself always runs them.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp import web

from app.bootstrap import server
from app.cli.processes import _event_loop_policy
from app.settings import Settings

if __name__ == "__main__":
    _event_loop_policy()
    settings = Settings()
    app = server(settings, run_worker=False)
    web.run_app(app, host=settings.host, port=settings.port, access_log=None, print=None)
