"""The small contracts the shell's packages share, at the bottom of the ranks.

Everything here is a protocol, a frozen value, a tiny in-memory default or a constant: no I/O.
The store, the GitHub client, the views and the loops meet through these names instead of
importing one another (`tests/unit/test_layers.py` holds the ranks):

- `shared_ports`: the limits and HTTP-cache protocols the GitHub client is given, and the
  metrics it counts into;
- `effect_types`: the intended GitHub writes (`Effect`, its `EffectKind`) and the reply that
  goes through a person's reply limit;
- `webhook_events`: the events railyard subscribes to.
"""
