"""The web pages as people read them: pure functions from the record's data to HTML.

No HTTP and no database here: `app/web/` reads the store, calls these, and builds the response
(status, security headers). Every user text goes in through `markupsafe`, which escapes
whatever is not already `Markup`.
"""
