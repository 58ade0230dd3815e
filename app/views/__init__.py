"""Every word people read: the status comment, the check-run, replies, and escaping user text."""
