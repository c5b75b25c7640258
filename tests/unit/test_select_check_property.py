"""Issue 49's done-when: over every recipe of the test fixtures and of a real benchmark tree (InferenceX 843c625,
committed as fixtures), ``select``'s plan applied gives ``match`` under ``check``, or ``select`` refused with the
reason ``check`` gives for a pin written where ``select`` would have written it.

Each recipe is first made pin-free the product's own way (``select --mode eval-only``'s overrides applied), then
each variant srtctl runs is planned on its own. A plan that does not simulate (``off``, ``eval-only``) is judged too:
applied to the variant, and to the variant as the recipe wrote it (its pins included), ``check`` finds no pin left in
force. A file ``select`` cannot read (exit 2, naming its line) ``check`` refuses the same way, at the same line.
``REAL_TREE`` (an InferenceX checkout) adds every recipe of a full tree; ``experiments/inferencex-select`` records
that run. Each case records what it judged (``matched``, ``refused``, ``off_clean``, ``unreadable``) as junit
properties (``--junitxml``).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from golden_al.checks.findings import FAILING_VERDICTS
from golden_al.checks.static import check_paths
from golden_al.errors import InputFileError, UsageError
from golden_al.golden import load_store
from golden_al.recipes.derive import Identity, derive, recipe_facts, role_settings
from golden_al.recipes.plan import SelectionError, _write
from golden_al.recipes.srt_slurm import view_of
from golden_al.recipes.srtctl import apply_overrides, expand_variants
from golden_al.selection import select_recipe

FIX = Path(__file__).resolve().parents[1] / "fixtures"
SHIPPED = load_store(None)
INFX = load_store(FIX / "inferencex" / "golden_al_distribution")
REAL_TREE = os.environ.get("GOLDEN_AL_REAL_TREE")


def _recipes() -> list[tuple[Path, Any]]:
    out = [(p, SHIPPED) for p in sorted((FIX / "recipes").glob("*.yaml"))]
    out += [(p, SHIPPED) for d in ("", "runtime-k") for p in sorted((FIX / "select" / d).glob("*.yaml"))]
    out += [(p, load_store(FIX / "check" / "golden")) for p in sorted((FIX / "check" / "tree" / "recipes").rglob("*.yaml"))]
    out += [(p, SHIPPED) for p in sorted((FIX / "check" / "tree" / "broken").glob("*.yaml"))]  # select cannot read
    out += [(p, INFX) for d in ("inferencex", "inferencex-roles") for p in sorted((FIX / "select" / d).glob("*.yaml"))]
    if REAL_TREE:
        tree = Path(REAL_TREE)
        store = load_store(tree / "golden_al_distribution")
        out += [(p, store) for p in sorted((tree / "benchmarks/multi_node/srt-slurm-recipes").rglob("*.yaml"))]
    return out


RECIPES = _recipes()


def _pin_free(doc: dict[str, Any], path: Path, tmp: Path, store: Any) -> dict[str, Any]:
    """``doc`` with every synthetic setting taken out by ``select``'s eval-only overrides (each variant's)."""
    raw = tmp / "raw.yaml"
    raw.write_text(yaml.safe_dump(doc, sort_keys=False))
    plan = select_recipe(raw, identity=Identity(mode="eval-only"), store=store)
    return apply_overrides(doc, [o for v in plan.variants for o in v.overrides])


def _probe(data: dict[str, Any], path: Path, store: Any) -> dict[str, Any]:
    """The variant with the pin ``select`` would have written (the golden value where there is one, else AL 2 at k 1),
    written where ``select`` writes it: what ``check`` judges."""
    view = view_of(data)
    assert view is not None
    assert view.target is not None
    assert view.target.engine is not None
    facts = recipe_facts(view, str(path))
    derived = derive(role_settings(facts, view.target.engine, view.target.role), store)
    golden = derived if derived.point is not None else SimpleNamespace(k=1, al=2.0, al_at=lambda _k: 2.0)
    overrides, problem = _write(view, view.target, facts, golden, review=False)  # type: ignore[arg-type]
    assert problem is None, problem
    return apply_overrides(data, overrides)


def _verdicts(data: dict[str, Any], path: Path, tmp: Path, store: Any) -> list[tuple[str, str]]:
    out = tmp / path.relative_to(path.anchor)  # the recipe's own folders say agentic, as for select
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return [(f.verdict, f.message) for f in check_paths([str(out)], store=store).findings]


def _failing(data: dict[str, Any], path: Path, tmp: Path, store: Any) -> list[tuple[str, str]]:
    return [(v, m) for v, m in _verdicts(data, path, tmp, store) if v in FAILING_VERDICTS]


def _unreadable_alike(path: Path, store: Any) -> bool:
    """Whether ``select`` refuses the file itself (exit 2, naming its line); if so, ``check`` must refuse it the same
    way: a failing ``unreadable`` finding at that line, giving select's reason."""
    refused: InputFileError | None = None
    try:
        select_recipe(path, identity=Identity(mode="eval-only"), store=store)
    except InputFileError as exc:
        refused = exc
    except UsageError:
        return False  # the recipe as such: judged by the caller
    if refused is None:
        return False
    assert refused.exit_code == 2
    assert refused.line is not None, str(refused)
    reason = str(refused).split(f"{path}:{refused.line}: ", 1)[1]
    found = [(f.line, f.verdict, f.message) for f in check_paths([str(path)], store=store).findings]
    assert any(line == refused.line and v == "unreadable" and reason in m for line, v, m in found), (reason, found)
    return True


def _off_clean(plan: Any, variant: Any, original: dict[str, Any], path: Path, tmp: Path, store: Any) -> None:
    """A plan that does not simulate leaves no pin in force: ``check`` on it applied finds nothing failing, and the
    same holds for the variant as the recipe wrote it (its own pins), planned by ``select`` as it stands."""
    assert _failing(apply_overrides(variant.data, plan.overrides), path, tmp, store) == [], variant.selector
    if variant.selector not in original:
        return
    raw = tmp / "raw-variant.yaml"
    raw.write_text(yaml.safe_dump(dict(original[variant.selector].data), sort_keys=False))
    try:
        (as_written,) = select_recipe(raw, store=store).variants
    except SelectionError:
        return  # its pins are refused (the first branch judges the pin-free variant's reason)
    if as_written.mode != "throughput":
        applied = apply_overrides(original[variant.selector].data, as_written.overrides)
        assert _failing(applied, path, tmp, store) == [], (variant.selector, as_written.mode)


def _variants_as_written(doc: dict[str, Any]) -> dict[Any, Any]:
    try:
        return {v.selector: v for v in expand_variants(doc)}
    except UsageError:
        return {}


@pytest.mark.parametrize(("path", "store"), RECIPES, ids=[str(p.relative_to(p.parents[2])) for p, _ in RECIPES])
def test_selects_plan_is_a_match_under_check_or_select_refuses_for_checks_reason(
        path: Path, store: Any, tmp_path: Path, record_property: Callable[[str, object], None]) -> None:
    counts: Counter[str] = Counter()
    if _unreadable_alike(path, store):
        record_property("unreadable", 1)
        return
    doc = yaml.safe_load(path.read_text())
    try:
        clean = _pin_free(doc, path, tmp_path, store)
        variants = expand_variants(clean)
    except UsageError:
        pytest.skip("not a recipe select plans (srtctl would refuse it too)")
    original = _variants_as_written(doc)
    for variant in variants:
        target = tmp_path / "variant.yaml"
        target.write_text(yaml.safe_dump(dict(variant.data), sort_keys=False))
        try:
            (plan,) = select_recipe(target, store=store).variants
        except SelectionError as exc:
            reason = exc.message.split("]: ", 1)[1]
            verdicts = _verdicts(_probe(dict(variant.data), path, store), path, tmp_path, store)
            assert verdicts, (variant.selector, reason)
            assert all(v != "match" for v, _ in verdicts), (variant.selector, verdicts)
            assert any(reason in m for _, m in verdicts), (variant.selector, reason, verdicts)
            counts["refused"] += 1
            continue
        if plan.mode != "throughput":
            _off_clean(plan, variant, original, path, tmp_path, store)
            counts["off_clean"] += 1
            continue
        verdicts = _verdicts(apply_overrides(variant.data, plan.overrides), path, tmp_path, store)
        assert verdicts, variant.selector
        assert {v for v, _ in verdicts} == {"match"}, (variant.selector, verdicts)
        counts["matched"] += 1
    for name, n in counts.items():
        record_property(name, n)
