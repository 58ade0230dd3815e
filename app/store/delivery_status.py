"""A stored webhook delivery's status (`webhook_deliveries.status`), apart from the queue that
moves it: the intake's writer process sets the first one without loading the tables' models."""

from __future__ import annotations

PENDING, DONE, IGNORED, FAILED = "pending", "done", "ignored", "failed"
REJECTED = "rejected"
"""Signed, but its payload does not have the shape of its event: kept for the audit, never processed."""
FINAL_STATUSES = (DONE, IGNORED, FAILED, REJECTED)
