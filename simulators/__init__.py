"""Engines' synthetic-acceptance samplers and throughput/latency models.

Depends on :mod:`distributions` only; never on :mod:`golden_al`.
"""
