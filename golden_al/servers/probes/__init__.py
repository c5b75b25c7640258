"""Each engine's server probe: what its server says about itself (the engine profile's ``server_probe``
names the function, ``"module:function"``; :func:`golden_al.servers.probe.probe_server` calls it)."""
