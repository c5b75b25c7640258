"""Engines that produce measurements: the offline reference engine (``reference/``) and serving engines."""
