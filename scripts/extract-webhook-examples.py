#!/usr/bin/env python3
"""Copy the subscribed events' examples from `@octokit/webhooks-examples` into tests/fixtures.

npm pack @octokit/webhooks-examples@7.6.1 && tar xzf octokit-webhooks-examples-7.6.1.tgz
python scripts/extract-webhook-examples.py package
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.contracts.webhook_payloads import SUBSCRIBED_EVENTS, UNLISTED_EVENTS

EVENTS = (*SUBSCRIBED_EVENTS, *UNLISTED_EVENTS)
ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "tests" / "fixtures" / "webhooks"


def main(package: Path) -> None:
    """Write one file per example: webhooks/<host>/<event>/<nn>-<action>.json."""
    written = 0
    for index in sorted(package.glob("*/index.json")):
        for entry in json.loads(index.read_text()):
            if entry["name"] not in EVENTS:
                continue
            folder = TARGET / index.parent.name / entry["name"]
            folder.mkdir(parents=True, exist_ok=True)
            for number, example in enumerate(entry["examples"], start=1):
                action = example.get("action", "none")
                path = folder / f"{number:02d}-{action}.json"
                path.write_text(json.dumps(example, indent=2, sort_keys=True) + "\n")
                written += 1
    print(f"wrote {written} examples under {TARGET}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
