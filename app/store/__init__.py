"""Storage: the only SQL. The database and its tables and migrations, the ticket store (the one
door), the delivery queue and its intake writer, effects, replies, links and held observations."""
