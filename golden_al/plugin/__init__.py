"""The plugin surface: everything an engine folder may use of golden-al, and nothing else (``__all__``).

An engine (``golden_al/engines/<name>/``, or a package of its own registered by entry point) imports
``golden_al.plugin``, :mod:`distributions` and its own modules only (``tests/unit/test_layers.py`` holds every
built-in to it). Here it finds the contract (:class:`EngineProfile` and its capability groups, :func:`lazy` hooks),
the types its hooks take and give (pins, run evidence, server facts, AL sources, imported runs, the serve-reference
flavor), the readers of its outputs' formats (Prometheus text, counters, log
lines, per-request records), value parsers, the shell-text helpers pin builders use, the sampler base, bounded file
reading, the HTTP client, and the errors it raises. The surface names no engine.

Names load on first use (:func:`__getattr__`), so importing the surface costs nothing: a profile stays cheap to
import, and the server side (the HTTP client, the sources) loads only when a hook that needs it runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # The surface's table of homes, one statement a home with its names wrapped (read by _homes):
    # isort: off
    from golden_al.errors import (CounterResetError, CounterSemanticsError, CountsDisagreeError, EngineError,
                                  GoldenALError, HashMismatchError, InputFileError, LossyAcceptanceError,
                                  MetricMissingError, MixedDraftLengthsError, NoVerifyStepsError, ServerError,
                                  UsageError)
    from golden_al.formats.counters import (DraftCounters, check_not_backwards, counter, counters_delta,
                                            int_label, no_steps, optional, spec_counters, to_counts)
    from golden_al.formats.logs import LineTally, number, pattern, read_log_file, scan_log_text
    from golden_al.formats.prometheus import MetricsSnapshot, parse_metrics_text
    from golden_al.formats.responses import (RequestSpecCounts, build_counts, optional_count, optional_number,
                                             where)
    from golden_al.formats.validate import check_acceptance_counts, check_counts, check_observed_k
    from golden_al.httpclient import ServerClient
    from golden_al.plugin.checks_ran import ran
    from golden_al.plugin.evidence import RunEvidence, no_lines, read_logs, run_budget
    from golden_al.plugin.facts import ServerFacts, filter_args, is_chain
    from golden_al.plugin.flavor import Flavor, Generation, ServedEngine, ServeSettings, now_log, now_short
    from golden_al.plugin.hooks import HookSpec
    from golden_al.plugin.imported import (MAX_BYTES, ImportedDataset, ImportedRun, ImportedWindows,
                                           ImportOptions, TimedUnit, json_lines, looks_json, read_capped,
                                           read_json_doc)
    from golden_al.plugin.pins import (AgenticInfo, DraftInfo, ModelName, Pin, PinSite, ThinkingSignal, clean,
                                       value_of)
    from golden_al.plugin.profile import (CAPABILITIES, GROUPS, Capability, Caveat, CheckSupport, CommandLine,
                                          CommandLineReading, DraftLen, DraftLenRule, EngineBuild,
                                          EngineProfile, EngineVersion, EnvOption, LaunchRequest,
                                          LaunchSupport, Lazy, Limit, LOG_NUMBER, LogPattern, LogReader, Metric,
                                          PinContext, PinReview, RecipeFormat, ResponseField, RunLogSupport,
                                          RuntimeDraftLen, ServerSupport, SimulateOption, SimulateSupport,
                                          Source, Speculation, SyntheticKnob, VersionChoice, group_of, lazy,
                                          reads_off)
    from golden_al.plugin.sources import (CounterSource, MixedDraftLengths, PrometheusSource, ResponseCounts,
                                          Snapshot, require_distribution, server_errors)
    from golden_al.plugin.spec import config_json, settings_draft
    from golden_al.plugin.values import (format_value, int_flag, json_object, parse_number,
                                         parse_rates, scalar_text, selector_text, set_flag)
    from golden_al.provenance import atomic_write_text, now_iso
    from golden_al.safeio import LineStats, iter_lines, read_json
    from golden_al.shell import harden, has_unknown, show
    from simulators.base import EngineSampler, ForcingDisabledError, SamplerError
    from simulators.rates import SyntheticRatesSampler
    # isort: on

__all__ = [
    "CAPABILITIES", "GROUPS", "LOG_NUMBER", "MAX_BYTES", "AgenticInfo", "Capability", "Caveat", "CheckSupport",
    "CommandLine", "CommandLineReading", "CounterResetError", "CounterSemanticsError", "CounterSource",
    "CountsDisagreeError", "DraftCounters", "DraftInfo", "DraftLen", "DraftLenRule", "EngineBuild",
    "EngineError", "EngineProfile", "EngineSampler", "EngineVersion", "EnvOption", "Flavor",
    "ForcingDisabledError", "Generation", "GoldenALError", "HashMismatchError", "HookSpec", "ImportOptions",
    "ImportedDataset", "ImportedRun", "ImportedWindows", "InputFileError", "LaunchRequest", "LaunchSupport",
    "Lazy", "Limit", "LineStats", "LineTally", "LogPattern", "LogReader", "LossyAcceptanceError", "Metric",
    "MetricMissingError", "MetricsSnapshot", "MixedDraftLengths", "MixedDraftLengthsError", "ModelName",
    "NoVerifyStepsError", "Pin", "PinContext", "PinReview", "PinSite", "PrometheusSource", "RecipeFormat",
    "RequestSpecCounts", "ResponseCounts", "ResponseField", "RunEvidence", "RunLogSupport",
    "RuntimeDraftLen", "SamplerError", "ServeSettings", "ServedEngine", "ServerClient", "ServerError",
    "ServerFacts", "ServerSupport", "SimulateOption", "SimulateSupport", "Snapshot", "Source", "Speculation",
    "SyntheticKnob", "SyntheticRatesSampler", "ThinkingSignal", "TimedUnit", "UsageError", "VersionChoice",
    "atomic_write_text", "build_counts", "check_acceptance_counts", "check_counts", "check_not_backwards",
    "check_observed_k", "clean", "config_json", "counter", "counters_delta", "filter_args", "format_value",
    "group_of", "harden", "has_unknown", "int_flag", "int_label", "is_chain", "iter_lines", "json_lines",
    "json_object", "lazy", "looks_json", "no_lines", "no_steps", "now_iso", "now_log",
    "now_short", "number", "optional", "optional_count", "optional_number", "parse_metrics_text",
    "parse_number", "parse_rates", "pattern", "ran", "read_capped", "read_json", "read_json_doc",
    "read_log_file", "read_logs", "reads_off", "require_distribution", "run_budget", "scalar_text",
    "scan_log_text", "selector_text", "server_errors", "set_flag", "settings_draft", "show", "spec_counters",
    "to_counts", "value_of", "where",
]


def _homes() -> dict[str, str]:
    """Each name of :data:`__all__` -> the module it lives in, read from this file's ``TYPE_CHECKING`` imports (the
    one list of homes)."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If))
    return {alias.name: node.module for node in block.body if isinstance(node, ast.ImportFrom) and node.module
            for alias in node.names}


_HOMES: dict[str, str] = {}


def __getattr__(name: str) -> Any:
    """A name of the surface, imported from its home on first use."""
    if not _HOMES:
        _HOMES.update(_homes())
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (the plugin surface is its __all__)")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
