"""`OWNER/REPO#N` as the command line reads it (`policies.model.TicketKey.parse`)."""

from __future__ import annotations

import pytest

from policies.model import TicketKey, ascii_digits


def test_a_ticket_key_is_read_and_a_number_of_other_digits_is_refused_readably() -> None:
    """`acme/web#12` reads; `acme/web#²` (a digit to `str.isdigit`, not to `int`) is refused with
    the usage message, not `int`'s."""
    assert TicketKey.parse(" acme/web#12 ") == TicketKey("acme/web", 12)
    with pytest.raises(ValueError, match="expected OWNER/REPO#NUMBER"):
        TicketKey.parse("acme/web#²")
    assert ascii_digits("120") and not ascii_digits("²") and not ascii_digits("")
