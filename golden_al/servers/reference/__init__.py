"""serve-reference's settings and flavors: :mod:`.config` (settings, faults), :mod:`.flavor` (what a
flavor is), and one module per imitated engine (:mod:`.sglang`, :mod:`.vllm`, :mod:`.atom`), each named
by its engine's profile. The server itself: :mod:`golden_al.servers.reference_server`."""
