"""Each engine's server side, one module per engine: its probe (what its server says about itself;
the profile's ``server_probe`` names it, :func:`golden_al.servers.probe.probe_server` calls it) and
its AL sources (the profile's ``source_impls``, :mod:`golden_al.plugin.sources` builds them)."""
