"""The recipes floor: srtctl's semantics (:mod:`.srtctl`), the one reader of srt-slurm recipes and master configs
(:mod:`.srt_slurm`), and the one derivation from a recipe and a run to its golden point (:mod:`.derive`), which
``check``, ``select``, ``inject`` and the ``no-pins`` policy share."""
