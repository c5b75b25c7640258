"""Write golden AL values into srt-slurm recipes in place (``golden-al inject``).

* :func:`analyze_recipe` -> :class:`RecipeAnalysis`: engine, per-role speculative
  settings and the draft length that sets the golden AL (shared with ``check``);
* :func:`plan_injection` / :func:`inject_file` -> :class:`InjectionResult` (changes,
  conflicts, unified diff).
"""

from __future__ import annotations

from golden_al.injection.inject import Change, InjectionResult, inject_file, plan_injection
from golden_al.injection.recipe import RecipeAnalysis, RoleSpec, analyze_recipe

__all__ = [
    "Change",
    "InjectionResult",
    "RecipeAnalysis",
    "RoleSpec",
    "analyze_recipe",
    "inject_file",
    "plan_injection",
]
