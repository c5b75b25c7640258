"""TensorRT-LLM's own tests: they reach the engine relatively (``from .. import``) and golden-al through its commands
and floors, never another engine by name; the iteration rows they read are written by ``_iteration_rows``."""
