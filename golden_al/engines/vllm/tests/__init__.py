"""vLLM's own tests: they reach the engine relatively (``from .. import``) and golden-al through its commands and
floors, never another engine by name."""
