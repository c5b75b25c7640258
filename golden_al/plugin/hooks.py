"""The hooks of a profile, each a declared call signature (as pytest declares its hook specs for pluggy).

Every field of a capability group that golden-al calls is typed with one of these protocols (a subclass of
:class:`HookSpec`); its ``__call__`` is what golden-al passes and expects back. The conformance kit
(:func:`golden_al.plugin.conformance.profile_problems`) derives from these types which fields are hooks, and checks
each implementation against its protocol: it must take the protocol's positional parameters, accept each of its
keyword-only parameters by name, and require nothing else. A hook is a callable, or :func:`~.profile.lazy` of one
(imported on first use); a hook that is a class is called to build its object.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from golden_al.formats.counters import SpecCounters
    from golden_al.formats.prometheus import MetricsSnapshot
    from golden_al.httpclient import ServerClient
    from golden_al.plugin.evidence import RunEvidence
    from golden_al.plugin.facts import ServerFacts
    from golden_al.plugin.flavor import Flavor, ServedEngine, ServeSettings
    from golden_al.plugin.imported import ImportedRun, ImportOptions
    from golden_al.plugin.pins import AgenticInfo, ModelName, Pin, PinSite
    from golden_al.plugin.profile import (
        CommandLineReading,
        DraftLen,
        LaunchRequest,
        PinContext,
        PinReview,
        Speculation,
    )
    from simulators.base import EngineSampler


class HookSpec(Protocol):
    """Marks a protocol as a hook's declared signature (its ``__call__``)."""


# ---------------------------------------------------------------- check
class SyntheticSettings(HookSpec, Protocol):
    """``(al, k, **options) -> settings``: each engine takes its own keyword options (SGLang's ``method``)."""

    __call__: Callable[..., dict[str, Any]]


class ShellValue(HookSpec, Protocol):
    def __call__(self, settings: Mapping[str, Any], k: int, curve_method: str | None, /) -> str: ...


class ShellEnv(HookSpec, Protocol):
    def __call__(self, settings: Mapping[str, Any], /) -> dict[str, str]: ...


class EnvDraftLen(HookSpec, Protocol):
    def __call__(self, algorithm: str | None, values: Mapping[str, int], /) -> DraftLen: ...


class ReviewPin(HookSpec, Protocol):
    def __call__(self, ctx: PinContext, /) -> PinReview: ...


class PinTolerance(HookSpec, Protocol):
    def __call__(self, ctx: PinContext, /) -> float: ...


class CurveSelectors(HookSpec, Protocol):
    def __call__(self, spec: Mapping[str, Any], k: int | None, /) -> dict[str, str]: ...


class SettingsDraftLen(HookSpec, Protocol):
    def __call__(self, spec: Speculation | None, /) -> DraftLen: ...


class ScriptSpeculation(HookSpec, Protocol):
    def __call__(self, flags: Mapping[str, Any], /) -> Speculation | None: ...


class ScriptPin(HookSpec, Protocol):
    def __call__(self, site: PinSite, /) -> Pin: ...


class HarnessPin(HookSpec, Protocol):
    def __call__(self, raw: str | None, spec: Speculation | None, /) -> tuple[Mapping[str, Any], list[str]]: ...


class ForcedInArgs(HookSpec, Protocol):
    def __call__(self, argv: Sequence[str], /) -> tuple[str, str] | None: ...


class ForcedInConfig(HookSpec, Protocol):
    def __call__(self, config: Mapping[str, Any], /) -> tuple[str, str] | None: ...


class ForcedInLogLine(HookSpec, Protocol):
    def __call__(self, line: str, /) -> tuple[str, str] | None: ...


class ReadCommandLine(HookSpec, Protocol):
    def __call__(self, args: Sequence[str], env: Mapping[str, str], /) -> CommandLineReading: ...


class CurveMethodOf(HookSpec, Protocol):
    def __call__(self, algorithm: str, /) -> str | None: ...


# ---------------------------------------------------------------- server
class ServerProbe(HookSpec, Protocol):
    def __call__(self, client: ServerClient, facts: ServerFacts, /, *, log_text: str | None) -> Awaitable[None]: ...


class SourceImpl(HookSpec, Protocol):
    """An AL source's implementation: a ``CounterSource`` subclass or a ``ResponseCounts`` (its shape varies)."""


class CounterReader(HookSpec, Protocol):
    def __call__(self, snap: MetricsSnapshot, labels: Mapping[str, str] | None = None, /) -> SpecCounters: ...


class PerRequestProbe(HookSpec, Protocol):
    def __call__(self, client: ServerClient, model: str, messages: Sequence[Mapping[str, Any]], /) -> Awaitable[bool]: ...


class StepsByDraftLen(HookSpec, Protocol):
    def __call__(self, resp: Mapping[str, Any], k: int, /, *, max_tokens: int | None, output_tokens: int | None) -> Any: ...


class ServerInfoDraftLen(HookSpec, Protocol):
    def __call__(self, info: Mapping[str, Any], /) -> DraftLen: ...


class ReferenceFlavor(HookSpec, Protocol):
    """The serve-reference imitation: a :class:`~golden_al.plugin.flavor.Flavor` subclass, built per server."""

    def __call__(self, config: ServeSettings, engine: ServedEngine, log: Callable[[str], None], model_name: Callable[[], str], /) -> Flavor: ...


# ---------------------------------------------------------------- launch
class ServerArgs(HookSpec, Protocol):
    def __call__(self, req: LaunchRequest, /) -> list[str]: ...


class SpecFlags(HookSpec, Protocol):
    """``(algorithm, k, **options) -> flags``: each engine takes its own keyword options (ATOM's ``draft_model``)."""

    __call__: Callable[..., list[str]]


class LaunchMethod(HookSpec, Protocol):
    def __call__(self, algorithm: str | None, draft: str | None, /) -> str: ...


class LaunchDraftLen(HookSpec, Protocol):
    def __call__(self, argv: Sequence[str], /) -> tuple[int, str]: ...


class BuildServer(HookSpec, Protocol):
    def __call__(self, cache_dir: str | Path, /, *, jobs: int, progress: Any, note: Any) -> Any: ...


class CheckBinary(HookSpec, Protocol):
    def __call__(self, path: str | Path, /) -> Path: ...


# ---------------------------------------------------------------- recipes
class ReadRole(HookSpec, Protocol):
    def __call__(self, args: Mapping[str, Any], /) -> Speculation | None: ...


class ConfigPin(HookSpec, Protocol):
    def __call__(self, path: str, line: int, value: Any, models: list[ModelName], thinking_for: Any, agentic: AgenticInfo, role: str | None, /) -> Pin | None: ...


# ---------------------------------------------------------------- simulate
class Sampler(HookSpec, Protocol):
    """A sampler class: built with the method's options."""

    def __call__(self, /, **options: Any) -> EngineSampler: ...


class SimulatorSettings(HookSpec, Protocol):
    def __call__(self, sampler: EngineSampler, al: float | None, k: int, /) -> dict[str, Any]: ...


class SimulateReport(HookSpec, Protocol):
    def __call__(self, sampler: EngineSampler, al: float, k: int, settings: Mapping[str, Any], /) -> dict[str, Any]: ...


# ---------------------------------------------------------------- run logs
class RunEvidenceReader(HookSpec, Protocol):
    def __call__(self, files: Sequence[str | Path], k: int, /, *, decode_log_interval: int) -> RunEvidence: ...


class LineParser(HookSpec, Protocol):
    def __call__(self, line: str, line_no: int = 0, /) -> Any: ...


class Importer(HookSpec, Protocol):
    def __call__(self, paths: Sequence[Path], opts: ImportOptions, /) -> list[ImportedRun]: ...
