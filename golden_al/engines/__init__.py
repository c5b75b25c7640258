"""Engines: one folder per serving engine, the top floor of golden-al (``docs/architecture.md``).

Each folder (``<name>/``) holds the engine's profile in ``__init__.py`` (``PROFILE``, an
:class:`golden_al.plugin.EngineProfile`), its sampler, the hooks its profile names, and its tests. An engine
folder imports :mod:`golden_al.plugin`, :mod:`distributions` and itself only, never another engine; nothing
below this floor imports an engine: commands reach one through :mod:`golden_al.plugin.registry`.
"""
