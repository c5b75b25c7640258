"""Write golden AL values into srt-slurm recipes in place (``golden-al inject``): ``select``'s overrides applied to the
recipe's text (:func:`plan_injection`, :func:`inject_file` -> :class:`.inject.InjectionResult`: changes, conflicts, unified
diff), and the eval-only inverse (:mod:`golden_al.injection.restore`).
"""

from __future__ import annotations

from golden_al.injection.inject import inject_file, plan_injection

__all__ = ["inject_file", "plan_injection"]
