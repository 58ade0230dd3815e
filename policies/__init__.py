"""railyard's functional core: states, roles, commands, events, the transition table,
the guards and the rails. Standard library only; no I/O, no clock, no GitHub, no database.
"""
