"""``golden-al serve-reference``: serve the reference engine (or a fake) over HTTP, answering like one engine
(its profile names the flavor)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from golden_al.cli._common import cache_dir
from golden_al.errors import UsageError

DESCRIPTION = (
    "Serve the reference engine (or a deterministic fake) over HTTP with an engine's endpoints (SGLang, vLLM, TensorRT-LLM, ATOM, llama.cpp), "
    "fields, Prometheus counters and log lines, so measure/sweep/check-run can be tested end to end. "
    "Faults can be injected for tests."
)

EXAMPLES = """\
examples:
  golden-al serve-reference --flavor sglang --draft-len 5 --port 30000
  golden-al serve-reference --flavor vllm --target /m/target --draft /m/draft --draft-len 3 --port 8000
  golden-al serve-reference --flavor vllm --fake --draft-len 4 --port 0 --log-file server.log
  golden-al serve-reference --flavor sglang --fake --draft-len 3 --fault 500@2 --fault die@7
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from golden_al.servers.reference_server import FLAVORS

    parser.add_argument("--flavor", choices=FLAVORS, required=True, help="the engine to answer like")
    parser.add_argument("--draft-len", "-k", type=int, required=True, metavar="K", help="draft length k")
    parser.add_argument("--target", metavar="DIR|NAME", help="target model directory or known model name "
                        "(default: the cached Qwen2.5-Coder pair)")
    parser.add_argument("--draft", metavar="DIR|NAME", help="draft model directory or known model name")
    parser.add_argument("--fake", action="store_true", help="serve the deterministic model-free fake engine")
    parser.add_argument("--fake-accept-rate", type=float, default=0.7, help="fake engine: per-position conditional acceptance")
    parser.add_argument("--fake-min-len", type=int, default=24, help="fake engine: shortest natural answer (tokens)")
    parser.add_argument("--fake-max-len", type=int, default=96, help="fake engine: longest natural answer (tokens)")
    parser.add_argument("--step-delay", type=float, default=0.0, metavar="S", help="fake engine: seconds per verify step")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16", "float64"),
                        help="reference engine dtype (default float32)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="port (0: any free port, printed on stdout)")
    parser.add_argument("--served-model-name", help="model id reported by /v1/models")
    parser.add_argument("--algorithm", default="standalone",
                        help="SGLang flavor: speculative_algorithm reported by /server_info (standalone, eagle, dflash, ...)")
    parser.add_argument("--meta-version", default="0.5.23", choices=("0.5.23", "0.5.15", "old"),
                        help="SGLang flavor: meta_info field names of this SGLang version")
    parser.add_argument("--decode-log-interval", type=int, default=40,
                        help="SGLang/ATOM flavor: request-steps per decode / MTP stats log line")
    parser.add_argument("--log-stats-interval", type=float, default=10.0, metavar="S",
                        help="vLLM flavor: seconds between SpecDecoding log lines")
    parser.add_argument("--per-request-spec-decode-metrics", choices=("none", "summary", "detailed"), default="none",
                        help="vLLM flavor: add metrics.speculative_decoding to responses (vLLM >= 0.33)")
    parser.add_argument("--iter-stats-max-iterations", type=int, default=1000, metavar="N",
                        help="TensorRT-LLM flavor: iteration rows /metrics keeps between two reads (older ones dropped)")
    parser.add_argument("--perf-metrics-max-requests", type=int, default=0, metavar="N",
                        help="trtllm flavor: finished requests GET /perf_metrics keeps between reads (0: off, an "
                             "empty list, as trtllm-serve without return_perf_metrics)")
    parser.add_argument("--fault", action="append", default=[], metavar="KIND@N",
                        help="inject a fault: 500|502|503|sleep|reset|nospec|die @ N, N-M or N+ (chat/generate requests, from 1)")
    parser.add_argument("--fault-sleep", type=float, default=30.0, metavar="S", help="seconds a 'sleep' fault sleeps")
    parser.add_argument("--server-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting the stand-in reports it runs with (SGLang: a /server_info field; vLLM: a "
                             "speculative-config key of its startup line); VALUE is read as JSON, else as text")
    parser.add_argument("--claim-synthetic", action="store_true",
                        help="report synthetic acceptance in /server_info and the startup log (tests the refusal)")
    parser.add_argument("--log-file", metavar="FILE", help="append log lines here (default: stderr)")
    parser.add_argument("--cache-dir", metavar="DIR", help="model cache (default: $GOLDEN_AL_CACHE or ~/.cache/golden-al)")


def _resolve_model(value: str | None, role: str, cache: Path) -> str:
    from golden_al.models import registry, resolve_model

    if value is None:
        pair = registry.PAIRS["qwen2.5-coder-pair"]
        value = pair.target if role == "target" else pair.draft
    if value.lower() in registry.MODELS:
        path = resolve_model(value.lower(), cache_dir=cache).path  # the conversion the loader would use
        if path is None or not path.is_dir():
            raise UsageError(f"{role} model {value} is not in the cache ({path})",
                             hint="run 'golden-al models fetch qwen2.5-coder-pair', or pass --fake")
        return str(path)
    if not Path(value).exists():
        raise UsageError(f"{role} model directory {value} does not exist", hint="pass a directory or a known model name")
    return value


def _forced_acceptance(engine: str, k: int, environ: Mapping[str, str]) -> tuple[Any, str]:
    """The fake engine's forced acceptance when the engine's own environment knob is set, as the real server
    reads it: each step's accepted drafts drawn by the engine's sampler at the AL the value means (the
    profile's unit); ``(None, "")`` when the knob is unset or the engine runs real acceptance at that value."""
    from golden_al.plugin.registry import get_profile, get_sampler
    from simulators.base import SamplerError

    profile = get_profile(engine)
    for knob in profile.check.synthetic_knobs:
        if knob.kind != "env" or knob.role != "value" or profile.simulate.default_sampler is None:
            continue
        name = next((n for n in (knob.name, *knob.aliases) if n in environ), None)
        if name is None:
            continue
        raw = environ[name]
        try:
            value: float | None = float(raw)
        except ValueError:
            value = None
        review = profile.review_value(knob.name, raw, value, k)
        if review.al is None or review.problems:
            raise UsageError(f"{name}={raw!r} cannot be forced at k={k}: " + "; ".join(p for _, p in review.problems))
        sampler = get_sampler(engine, profile.simulate.default_sampler)
        al = review.al
        try:
            sampler.pmf(al, k)
        except SamplerError as exc:
            return None, f"{name}={raw}: {exc.message} (the fake runs its own acceptance)"

        return _draw(sampler, al, k), f"forced acceptance from {name}={raw}: AL {al:g} ({engine} sampler {profile.simulate.default_sampler})"
    return None, ""


def _draw(sampler: Any, al: float, k: int) -> Any:
    """``(rng, k_step) -> accepted drafts``: one step drawn by ``sampler`` at ``(al, k)``."""
    def draw(rng: Any, k_step: int) -> int:
        return int(sampler.simulate(al, k, 1, rng)[0]) - 1
    return draw


def needs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """A model is served by the reference engine (torch); ``--fake`` serves none."""
    return [] if args.fake else [("engine", "serve-reference with a model (without --fake)")]


def run(args: argparse.Namespace) -> int:
    from golden_al.servers.reference_server import FaultPlan, ReferenceServer, ServeConfig, parse_fault
    from golden_al.servers.served_engine import FakeServedEngine

    if args.draft_len < 1:
        raise UsageError(f"--draft-len must be >= 1, got {args.draft_len}")
    faults = FaultPlan([parse_fault(f) for f in args.fault])
    engine: Any
    if args.fake:
        if args.target or args.draft:
            raise UsageError("--fake serves no model; drop --target/--draft")
        forced, said = _forced_acceptance(args.flavor, args.draft_len, os.environ)
        engine = FakeServedEngine(args.draft_len, accept_rate=args.fake_accept_rate, min_len=args.fake_min_len,
                                  max_len=args.fake_max_len, step_delay_s=args.step_delay,
                                  model_name=args.served_model_name or "fake-target", forced=forced)
        if said:
            sys.stderr.write(f"serve-reference: {said}\n")
    else:
        from golden_al.servers.served_engine import ReferenceServedEngine

        cache = cache_dir(args.cache_dir)
        target = _resolve_model(args.target, "target", cache)
        draft = _resolve_model(args.draft, "draft", cache)
        engine = ReferenceServedEngine(target, draft, args.draft_len, dtype=args.dtype,
                                       model_name=args.served_model_name)
    config = ServeConfig(
        flavor=args.flavor, host=args.host, port=args.port, served_model_name=args.served_model_name,
        algorithm=args.algorithm, meta_version=args.meta_version, decode_log_interval=args.decode_log_interval,
        log_stats_interval_s=args.log_stats_interval,
        per_request_metrics=None if args.per_request_spec_decode_metrics == "none" else args.per_request_spec_decode_metrics,
        faults=faults, fault_sleep_s=args.fault_sleep, claim_synthetic=args.claim_synthetic,
        iter_stats_max_iterations=args.iter_stats_max_iterations,
        server_settings=_server_settings(args.server_setting),
        perf_metrics_max_requests=args.perf_metrics_max_requests,
    )
    log_stream = open(args.log_file, "a", encoding="utf-8") if args.log_file else sys.stderr
    try:
        server = ReferenceServer(engine, config, log_stream)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    sys.stdout.write(f"serving {args.flavor} flavor, k={args.draft_len}, on {server.url}\n")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if log_stream is not sys.stderr:
            log_stream.close()
    return 0


def _server_settings(items: list[str]) -> dict[str, Any]:
    """``--server-setting KEY=VALUE`` pairs, each VALUE read as JSON when it is JSON, else as text."""
    import json

    out: dict[str, Any] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--server-setting {item!r}: expected KEY=VALUE")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out
