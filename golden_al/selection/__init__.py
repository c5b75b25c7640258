"""Launch-time selection: the golden AL a recipe must run with, as launcher overrides (``golden-al select``).

    >>> from golden_al.selection import Identity, select_recipe
    >>> plan = select_recipe("recipe.yaml", identity=Identity(thinking="on"))   # doctest: +SKIP
    >>> [o.srtctl_args() for o in plan.variants[0].overrides]                    # doctest: +SKIP
"""

from golden_al.selection.plan import (
    Identity,
    Override,
    SelectionError,
    SelectionPlan,
    VariantPlan,
    plan_document,
    select_recipe,
)

__all__ = ["Identity", "Override", "SelectionError", "SelectionPlan", "VariantPlan", "plan_document", "select_recipe"]
