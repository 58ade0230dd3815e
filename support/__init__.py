"""What the tests, `bench/` and `scripts/` share: the e2e worlds, the servers on loopback ports,
real webhook payloads, databases, and who acts. Not shipped in the wheel; not a test folder."""
