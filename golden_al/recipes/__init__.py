"""Readers of benchmark configs: srt-slurm recipes and InferenceX master configs.

:mod:`golden_al.recipes.srt_slurm` is the one typed reader that ``check``
(:mod:`golden_al.checks.yaml_configs`) and ``inject`` (:mod:`golden_al.injection`) share,
so they see the same engine, roles, environment blocks and curve inputs.
"""
