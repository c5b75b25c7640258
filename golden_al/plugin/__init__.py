"""The plugin surface: the engine contract (``docs/adding-an-engine.md``)."""
