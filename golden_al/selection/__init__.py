"""Launch-time selection: the golden AL a recipe must run with, as launcher overrides (``golden-al select``).

    >>> from golden_al.selection import select_recipe
    >>> from golden_al.recipes.derive import Identity
    >>> plan = select_recipe("recipe.yaml", identity=Identity(thinking="on"))   # doctest: +SKIP
    >>> [o.srtctl_args() for o in plan.variants[0].overrides]                    # doctest: +SKIP
"""

from golden_al.recipes.plan import SelectionError, SelectionPlan, VariantPlan, plan_document, select_recipe

__all__ = ["SelectionError", "SelectionPlan", "VariantPlan", "plan_document", "select_recipe"]
