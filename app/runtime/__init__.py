"""The background loops: the worker, the outbox, the watchdog, housekeeping, and their supervisor."""
