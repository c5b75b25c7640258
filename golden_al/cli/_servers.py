"""Options and the run of server measurements, shared by ``measure --engine sglang|vllm|atom`` and ``sweep``.

Only this CLI layer reads environment variables (the launch environment, the API
key); it passes plain values to :mod:`golden_al.servers`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from golden_al.errors import UsageError
from golden_al.plugin import registry
from golden_al.servers.launch import MEASURABLE_ENGINES

__all__ = [
    "add_prompt_arguments",
    "add_server_arguments",
    "build_modes",
    "print_server_result",
    "serve_reference_needs",
    "server_options_from_args",
    "server_runner",
]

#: max_tokens per request for server measurements, as in the maintainers' collection (vLLM SPEED-Bench 4096).
SERVER_MAX_TOKENS = 4096


def _json_object(text: str, name: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{name} is not valid JSON: {exc.msg} at column {exc.colno}: {text!r}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{name} must be a JSON object, got {text!r}")
    return value


def add_server_arguments(parser: argparse.ArgumentParser, *, with_engine: bool = False,
                         with_resume: bool = True) -> None:
    """The server options (``--server``/``--launch`` and everything about the engine)."""
    g = parser.add_argument_group(f"server: which one ({', '.join(MEASURABLE_ENGINES)})")
    if with_engine:
        g.add_argument("--engine", choices=MEASURABLE_ENGINES, required=True, help="the serving engine")
    where = g.add_mutually_exclusive_group()
    where.add_argument("--server", metavar="URL", action="append", default=None,
                       help="attach to a running server (e.g. http://127.0.0.1:30000); repeat for data-parallel "
                       "replicas of one configuration: prompts are sharded over them, each keeps --concurrency "
                       "in flight, and the record holds totals plus per-server sub-counts")
    where.add_argument("--launch", action="store_true",
                       help="start the server from these options (per draft length), capture its log, always stop it")
    g.add_argument("--algorithm", metavar="NAME",
                   help="the speculative algorithm as the engine spells it: " + "; ".join(
                       f"{registry.get_profile(n).display_name} {', '.join(registry.get_profile(n).algorithms)}"
                       for n in registry.engine_names() if registry.get_profile(n).algorithms)
                   + "; the reference engine: draft-model (the default) or dflash (a DFlash or DFlash2 block draft; "
                   "--draft is its folder)")
    g.add_argument("--server-log", action="append", default=[], metavar="FILE",
                   help="attach: the server's log, read for its startup arguments and checked for synthetic "
                   "acceptance; once per --server, in the same order")
    g.add_argument("--assume-identical-replicas", action="store_true",
                   help="pool replicas that report no configuration of their own (the record says so); without it "
                   "such replicas are refused")
    g.add_argument("--served-model-name", metavar="NAME", help="model name in requests (default: first of /v1/models)")
    g.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the server's API key")
    launch = parser.add_argument_group("server: launching one (--launch)")
    launch.add_argument("--tp", type=int, default=1, metavar="N", help="tensor parallelism (default 1)")
    launch.add_argument("--engine-arg", action="append", default=[], metavar="ARG",
                        help="one more engine argument, verbatim (repeat; write --engine-arg=--flag for dashes)")
    launch.add_argument("--engine-args", default="", metavar="STRING", help="more engine arguments, shell-split")
    launch.add_argument("--speculative-extra", default=None, metavar="JSON",
                        help="vLLM: keys merged into its speculative config JSON, e.g. '{\"prompt_lookup_max\": 4}'")
    launch.add_argument("--per-request-metrics", choices=("summary", "detailed"), default=None,
                        help="vLLM >= 0.33 launch: add --per-request-spec-decode-metrics (AL source vllm-per-request)")
    launch.add_argument("--serve-reference", action="store_true",
                        help="with --launch: start golden-al serve-reference (the reference engine behind this engine's "
                        "API, on --target/--draft) instead of the engine: rehearse a sweep without GPUs")
    launch.add_argument("--python", default="python3", metavar="PATH", help="interpreter with the engine (default python3)")
    launch.add_argument("--llama-server", metavar="PATH", default=None,
                        help="llama.cpp launch: this llama-server binary (default: the one `golden-al engines build "
                        "llamacpp` cached; built on first use)")
    launch.add_argument("--command-prefix", default="", metavar="STRING",
                        help="words before the command, shell-split (e.g. 'srun --gres=gpu:8' or 'docker exec C')")
    launch.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="extra launch environment (repeat)")
    launch.add_argument("--image", metavar="IMAGE", help="container image, recorded in the record")
    launch.add_argument("--host", default="127.0.0.1", help="launch: host to bind (default 127.0.0.1)")
    launch.add_argument("--port", type=int, default=None, help="launch: port (default: a free one)")
    launch.add_argument("--ready-timeout", type=float, default=1800.0, metavar="S", help="launch: readiness timeout (1800)")
    launch.add_argument("--print-command", action="store_true",
                        help="print the exact server command(s) --launch would run, and exit")
    req = parser.add_argument_group("server: requests, bounds and prompts on the wire")
    req.add_argument("--concurrency", type=int, default=1, metavar="N",
                     help="requests in flight at all times, per server: a new one starts the moment any finishes "
                     "(default 1)")
    req.add_argument("--request-rate", type=float, default=None, metavar="R",
                     help="Poisson arrivals at R requests/s (seeded by --seed), capped by --concurrency "
                     "(default: as fast as --concurrency allows)")
    req.add_argument("--warmup", type=int, default=0, metavar="N",
                     help="send N requests first (prompts from the set) and leave them out of the record (default 0)")
    req.add_argument("--shard", default=None, metavar="I/N",
                     help="measure only prompts i with i mod N == I (0 <= I < N); records of the N shards pool into "
                     "one cell with 'golden-al pool' or 'fit'")
    req.add_argument("--request-timeout", type=float, default=1800.0, metavar="S",
                     help="bound of one request's whole exchange: connect, headers and body (1800)")
    req.add_argument("--max-response-bytes", default="64M", metavar="SIZE",
                     help="largest answer read from a server, enforced while reading (64M; e.g. 512k, 1G)")
    req.add_argument("--retries", type=int, default=3, metavar="N",
                     help="retries of a request on 5xx, timeouts and connection errors, with exponential backoff (3)")
    req.add_argument("--backoff", type=float, default=2.0, metavar="S", help="first retry delay, doubled each time (2)")
    req.add_argument("--extra-body", default=None, metavar="JSON", help="more fields merged into every request body")
    req.add_argument("--save-text", action="store_true", help="keep each response text in requests.jsonl")
    req.add_argument("--tokenizer", default=None, metavar="DIR",
                     help="render prompts locally with this tokenizer's chat template (needed by --al-source "
                     "sglang-generate; also makes prompt and dataset hashes match the reference engine's)")
    req.add_argument("--retokenize", action="store_true",
                     help="re-tokenize every answer's text with --tokenizer: it must give the token count the server "
                          "reports, within 2 + 5%% (evidence that does not rest on the server's usage; for trained "
                          "models, whose tokens re-encode as they were generated: a random model's do not)")
    req.add_argument("--model-family", default=None, metavar="FAMILY",
                     help="thinking preset family, for the reference engine and servers alike (default: the "
                          "target's own, from its config, else its name / the served model)")
    req.add_argument("--chat-template-kwargs", default=None, metavar="JSON",
                     help="chat_template_kwargs instead of the thinking preset's: one object for every request, or "
                     '{"on": {...}, "off": {...}} per thinking mode')
    src = parser.add_argument_group("server: where AL comes from")
    from golden_al.plugin.registry import get_profile
    from golden_al.plugin.sources import source_names

    src.add_argument("--al-source", choices=("auto", *source_names()), default="auto",
                     help="where AL comes from (auto: the engine's first, or its per-request source where the "
                     "server reports one: " + "; ".join(f"{e}: {', '.join(get_profile(e).server.al_sources)}"
                                                          for e in MEASURABLE_ENGINES) + ")")
    src.add_argument("--scrape-interval", type=float, default=1.0, metavar="S",
                     help="aggregate counters (vllm-prometheus, atom-mtp-stats) at --concurrency > 1: seconds between "
                     "two scrapes; the interval is by batch means over the windows (default 1.0)")
    if with_resume:
        g.add_argument("--resume", action="store_true",
                       help="continue an interrupted run in --out (finished requests are kept, none counted twice)")


def add_prompt_arguments(parser: argparse.ArgumentParser) -> None:
    """Prompt and sampling options of ``sweep`` (``measure`` has its own)."""
    g = parser.add_argument_group("prompts and sampling")
    g.add_argument("--prompts", default="humaneval", metavar="SRC",
                   help="humaneval, speed-bench:PATH[:category], chat-jsonl:PATH, ... (default humaneval)")
    g.add_argument("--num-prompts", type=int, default=None, metavar="N", help="use the first N prompts")
    g.add_argument("--max-tokens", type=int, default=4096, metavar="M", help="max_tokens per request (default 4096)")
    g.add_argument("--temperature", type=float, default=None, help="override the thinking preset's temperature")
    g.add_argument("--top-p", type=float, default=None, help="override the thinking preset's top_p")
    g.add_argument("--seed", type=int, default=None, help="request seed base (request i gets seed+i)")


# ---------------------------------------------------------------------------- options
def check_server_url(url: str) -> None:
    """A ``--server`` URL has a scheme and a host (``localhost:8000`` alone would be retried, then fail).

    Raises:
        UsageError: with the URL as it should be written.
    """
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        fixed = "http://" + url.split("://", 1)[-1]
        raise UsageError(f"--server {url!r} is not an http(s) URL with a host", hint=f"write --server {fixed}")
    try:
        parts.port  # noqa: B018 (a bad port raises)
    except ValueError:
        raise UsageError(f"--server {url!r}: the port is not a number from 0 to 65535") from None


def server_options_from_args(args: argparse.Namespace, engine: str) -> Any:
    """:class:`golden_al.measure.sweep.ServerOptions` from parsed arguments (reads the environment)."""
    from golden_al.cli._common import parse_size
    from golden_al.httpclient import RetryPolicy
    from golden_al.measure.sweep import ServerOptions
    from golden_al.servers.launch import LaunchSpec

    if not args.server and not args.launch:
        raise UsageError(f"--engine {engine} needs --server URL or --launch")
    if args.retries < 0:
        raise UsageError(f"--retries must be >= 0, got {args.retries}")
    for url in args.server or []:
        check_server_url(url)
    env: dict[str, str] = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--env expects KEY=VALUE, got {item!r}")
        env[key] = value
    engine_args = list(args.engine_arg) + shlex.split(args.engine_args or "")
    launch = None
    if args.launch:
        target = getattr(args, "target", None)
        draft = getattr(args, "draft", None)
        profile = registry.get_profile(engine)
        if profile.launch.model_files == "gguf":  # a known model name (the default pair when omitted): its GGUF
            from golden_al.measure.reference import DEFAULT_DRAFT, DEFAULT_TARGET

            target = gguf_file(target or DEFAULT_TARGET, args, "--target")
            draft = gguf_file(draft or DEFAULT_DRAFT, args, "--draft")
        if not target:
            raise UsageError("--launch needs --target (the model the server loads)")
        launch = LaunchSpec(
            engine=engine, target=target, draft_len=1, algorithm=args.algorithm,
            binary=None if profile.launch.executable is None else
            (getattr(args, "llama_server", None) or profile.launch.executable) if args.print_command else
            _server_binary(args, profile),
            draft=draft,
            tp=args.tp, host=args.host, port=args.port, served_model_name=args.served_model_name,
            engine_args=engine_args,
            speculative_extra=_json_object(args.speculative_extra, "--speculative-extra") if args.speculative_extra else {},
            per_request_metrics=args.per_request_metrics,
            python=sys.executable if args.serve_reference and args.python == "python3" else args.python,
            serve_reference=args.serve_reference,
            command_prefix=shlex.split(args.command_prefix or ""), env=env, image=args.image,
        )
    elif getattr(args, "llama_server", None):
        raise UsageError("--llama-server only applies with --launch")
    elif env or engine_args or args.speculative_extra or args.per_request_metrics or args.print_command \
            or args.serve_reference:
        raise UsageError("--env, --engine-arg(s), --speculative-extra, --per-request-metrics, --print-command "
                         "and --serve-reference only apply with --launch")
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise UsageError(f"--api-key-env {args.api_key_env}: the variable is not set")
    return ServerOptions(
        engine=engine, urls=list(args.server or []), launch=launch, base_env=dict(os.environ),
        ready_timeout_s=args.ready_timeout,
        policy=RetryPolicy(max_attempts=args.retries + 1, backoff_initial_s=args.backoff,
                           request_timeout_s=args.request_timeout,
                           max_response_bytes=parse_size(args.max_response_bytes)),
        al_source=args.al_source, concurrency=args.concurrency, api_key=api_key, server_logs=list(args.server_log),
        assume_identical_replicas=args.assume_identical_replicas,
        request_rate=args.request_rate, warmup=args.warmup, scrape_interval_s=args.scrape_interval,
        arrival_seed=int(args.seed or 0),
        served_model_name=args.served_model_name,
        extra_body=_json_object(args.extra_body, "--extra-body") if args.extra_body else {},
        save_text=args.save_text,
        tokenizer=_tokenizer_path(getattr(args, "tokenizer", None)) if getattr(args, "retokenize", False) else None,
    )


def _tokenizer_path(path: str | None) -> str:
    """``--tokenizer`` for ``--retokenize``, loaded once now so that a bad path is refused before any request."""
    if path is None:
        raise UsageError("--retokenize needs --tokenizer (the served model's tokenizer)")
    from golden_al.servers.retokenize import load_tokenizer

    load_tokenizer(path)
    return path


def gguf_file(value: str | None, args: argparse.Namespace, what: str) -> str | None:
    """A GGUF path for llama.cpp: a ``.gguf`` path as given, or a known model's cached official GGUF.

    Raises:
        UsageError: a known model whose GGUF is not cached (with the fetch command), or a
            value that is neither.
    """
    from golden_al.cli._common import cache_dir
    from golden_al.models import registry
    from golden_al.models.cache import cached_models

    if value is None:
        return None
    if str(value).endswith(".gguf"):
        return str(Path(value).expanduser())
    name = str(value).strip().lower()
    if name not in registry.MODELS:
        raise UsageError(f"llama.cpp loads GGUF files; {what} {value} is neither a .gguf file nor a known model",
                         hint="known models: " + ", ".join(registry.MODELS))
    for m in cached_models(cache_dir(getattr(args, "cache_dir", None))):
        if m.name == name and m.gguf_path and m.gguf_status in ("verified", "verified-now"):
            return m.gguf_path
    pair = registry.pair_for_model(name)
    raise UsageError(f"{what} {value}: its official GGUF is not in the cache",
                     hint=f"golden-al models fetch {pair.name if pair else name}")


def _gguf_info(given: str | None, path: str | None) -> Any:
    """The record's ModelInfo of a GGUF: the registry name when it is a known model's file."""
    from golden_al.measure.schema import ModelInfo
    from golden_al.models import registry

    p = Path(path or str(given))
    for name, entry in registry.MODELS.items():
        if p.name == entry.gguf_filename:
            return ModelInfo(name=name, path=str(p), source="gguf", shipped_dtype=entry.shipped_dtype,
                             sha256=entry.gguf_sha256)
    return ModelInfo(name=p.name.removesuffix(".gguf"), path=str(p), source="gguf")


def _server_binary(args: argparse.Namespace, profile: Any) -> str:
    """The executable to launch (llama.cpp's ``llama-server``): ``--llama-server``, else the engine's
    cached build (:attr:`~golden_al.plugin.profile.LaunchSupport.build`, built now when missing), else its
    executable on ``PATH``."""
    from golden_al.cli._common import cache_dir, note
    from golden_al.cli.progress import progress

    if getattr(args, "llama_server", None):
        if profile.launch.build is None:
            raise UsageError(f"--llama-server: {profile.display_name} is not a binary golden-al builds or checks")
        return str(registry.load_hook(profile.launch.build.check)(args.llama_server))
    if profile.launch.build is None:
        return str(profile.launch.executable)
    build = registry.load_hook(profile.launch.build.build)
    with progress(f"{profile.launch.executable} (cached build)", unit="steps") as bar:
        result = build(cache_dir(getattr(args, "cache_dir", None)), progress=bar, note=note)
    return result.binary


# ---------------------------------------------------------------------------- prompts
def _messages_hash(messages: Sequence[Any], kwargs: dict[str, Any]) -> str:
    blob = json.dumps({"messages": list(messages), "chat_template_kwargs": kwargs}, sort_keys=True,
                      ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()




def _is_mode_name(text: str) -> bool:
    """``on``, ``off`` or a level name: a key of per-mode ``--chat-template-kwargs``."""
    from golden_al.prompts.thinking import normalize_mode

    try:
        return normalize_mode(text) == text
    except ValueError:
        return False


def build_modes(args: argparse.Namespace, thinking: Sequence[str], *, target_name: str | None) -> list[Any]:
    """One :class:`~golden_al.measure.sweep.ModeSpec` per thinking mode (prompts, preset sampling, kwargs)."""
    from golden_al.cli._common import cache_dir
    from golden_al.measure.schema import DatasetInfo, SamplingInfo
    from golden_al.measure.server import ChatPrompt
    from golden_al.measure.sweep import ModeSpec, prompts_hash
    from golden_al.prompts import load_prompts
    from golden_al.prompts.render import prompt_hash, render_messages

    tokenizer = _tokenizer(args)
    shard = parse_shard(getattr(args, "shard", None))
    prompt_set = load_prompts(args.prompts, cache_dir=cache_dir(getattr(args, "cache_dir", None)),
                              limit=args.num_prompts)
    items = list(prompt_set.conversations)
    if not items:
        raise UsageError(f"--prompts {args.prompts} holds no prompts")
    explicit = _json_object(args.chat_template_kwargs, "--chat-template-kwargs") \
        if getattr(args, "chat_template_kwargs", None) else None
    per_mode = explicit is not None and bool(explicit) and all(_is_mode_name(m) for m in explicit) \
        and all(isinstance(v, dict) for v in explicit.values())
    modes = []
    for mode in thinking:
        kwargs, temperature, top_p, top_k = _preset(args, mode, target_name)
        if explicit is not None:
            if per_mode and mode not in explicit:
                raise UsageError(f"--chat-template-kwargs gives no kwargs for thinking {mode}",
                                 hint='e.g. \'{"on": {"enable_thinking": true}, "off": {"enable_thinking": false}}\'')
            kwargs = dict(explicit[mode]) if per_mode else dict(explicit)
        if args.temperature is not None:
            temperature = float(args.temperature)
        if args.top_p is not None:
            top_p = float(args.top_p)
        prompts = []
        for i, item in enumerate(items):
            msgs = [dict(m) for m in item.messages]
            if tokenizer is not None:
                text, _ids = render_messages(tokenizer, msgs, kwargs=kwargs)
                prompts.append(ChatPrompt(i, tuple(msgs), prompt_hash(text), text))
            else:
                prompts.append(ChatPrompt(i, tuple(msgs), _messages_hash(msgs, kwargs)))
        source_hash = prompts_hash(prompts)
        if shard is not None:
            prompts = [p for p in prompts if p.index % shard[1] == shard[0]]
            if not prompts:
                raise UsageError(f"--shard {shard[0]}/{shard[1]} holds no prompt of the {len(items)} in the set")
        data_hash = prompts_hash(prompts)
        dataset = DatasetInfo(
            name=str(prompt_set.name or args.prompts.split(":", 1)[0]),
            category=prompt_set.category,
            count=len(prompts),
            hash=data_hash,
            source=args.prompts,
            source_hash=source_hash,
            selection=[p.index for p in prompts],
        )
        max_tokens = SERVER_MAX_TOKENS if args.max_tokens is None else int(args.max_tokens)
        seed = None if args.seed is None else int(args.seed)
        sampling = SamplingInfo(temperature=temperature, top_p=top_p, top_k=top_k, max_tokens=max_tokens, seed=seed)
        modes.append(ModeSpec(mode, prompts, dataset, sampling, kwargs))  # type: ignore[arg-type]
    return modes


def serve_reference_needs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``--launch --serve-reference`` starts the reference engine (torch) behind the engine's API."""
    return [("engine", "--serve-reference (the reference engine behind the API)")] if args.serve_reference else []


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"I/N"`` -> ``(I, N)`` with ``0 <= I < N`` (None stays None)."""
    if text is None:
        return None
    i, sep, n = text.partition("/")
    try:
        pair = (int(i), int(n)) if sep else None
    except ValueError:
        pair = None
    if pair is None or not 0 <= pair[0] < pair[1]:
        raise UsageError(f"--shard expects I/N with 0 <= I < N, got {text!r}", hint="e.g. --shard 0/4 ... --shard 3/4")
    return pair


def _tokenizer(args: argparse.Namespace) -> Any:
    """The tokenizer that renders prompts locally, or None (messages are sent as they are)."""
    path = getattr(args, "tokenizer", None)
    from golden_al.plugin.sources import make_source

    source = getattr(args, "al_source", None)
    if path is None and source not in (None, "auto") and make_source(source, args.engine).needs_text:
        path = getattr(args, "target", None)
        if path is None:
            raise UsageError(f"--al-source {source} sends rendered prompts: pass --tokenizer DIR")
    if path is None:
        return None
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise UsageError("--tokenizer needs transformers", hint="pip install 'golden-al[engine]'") from None
    try:
        return AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load the tokenizer {path}: {exc}") from None


def _preset(args: argparse.Namespace, mode: str, target_name: str | None) -> tuple[dict[str, Any], float, float, int | None]:
    """``(chat_template_kwargs, temperature, top_p, top_k)`` from the thinking-preset registry.

    Sampling the preset does not document falls back to greedy (temperature 0, top_p 1).
    With explicit ``--chat-template-kwargs`` a family without this thinking mode is fine:
    the kwargs are the user's, and the sampling comes from ``--temperature``/``--top-p``.
    """
    from golden_al.prompts import thinking as presets

    family = getattr(args, "model_family", None)
    preset = presets.preset_for(family or target_name or "generic")
    try:
        kwargs = preset.kwargs_for(mode)
        sampling = preset.sampling_for(mode)
    except UsageError:
        if not getattr(args, "chat_template_kwargs", None):
            raise
        kwargs, sampling = {}, {}
    top_k = sampling.get("top_k")
    return (kwargs, float(sampling.get("temperature", 0.0)), float(sampling.get("top_p", 1.0)),
            int(top_k) if top_k is not None else None)


# ---------------------------------------------------------------------------- running
def server_runner(args: argparse.Namespace, *, engine: str, draft_lens: list[int], thinking: list[str], out: Path,
                  layout: str, one_run: bool = False, validate_k: Sequence[int] = (),
                  allow_derived: bool = False) -> Any:
    """The :class:`~golden_al.measure.sweep.ServerRun` of parsed arguments, or None after ``--print-command``
    printed the launch commands."""
    from golden_al.cli._common import note
    from golden_al.measure.schema import ModelInfo
    from golden_al.measure.sweep import ServerRun, SweepSpec, launch_commands

    options = server_options_from_args(args, engine)
    target = getattr(args, "target", None)
    draft = getattr(args, "draft", None)
    target_info = ModelInfo(name=target, source="server") if target else None
    draft_name = draft or (args.algorithm or "").lower() or "server-draft"
    draft_info = ModelInfo(name=draft_name, source="ngram" if (args.algorithm or "").lower() == "ngram" else "server")
    if registry.get_profile(engine).launch.model_files == "gguf" and options.launch is not None:
        target_info = _gguf_info(getattr(args, "target", None), options.launch.target)
        draft_info = _gguf_info(getattr(args, "draft", None), options.launch.draft)
        target = target_info.name
    modes = [] if args.print_command else build_modes(args, thinking, target_name=target or options.served_model_name)
    spec = SweepSpec(draft_lens=draft_lens, modes=modes, target=target_info, draft=draft_info,
                     draft_method=(args.algorithm or None) and args.algorithm.lower(), one_run=one_run,
                     validate_k=list(validate_k), allow_derived=allow_derived, bootstrap_seed=int(args.seed or 0),
                     layout=layout,  # type: ignore[arg-type]
                     check_modes=not args.print_command)
    if args.print_command:
        for line in launch_commands(options, spec):
            sys.stdout.write(line + "\n")
        return None
    return ServerRun(options, spec, out, note=note)


def print_server_result(result: Any) -> None:
    """A server run's records (one line each, with the guards that passed), validation rows and warnings."""
    from golden_al.cli._common import clusters_text, warn_few_clusters

    warn_few_clusters(result.records)
    for r in sorted(result.records, key=lambda r: (r.thinking, r.draft_len)):
        tag = f" (derived from k={r.derived_from_draft_len})" if r.derived else ""
        sys.stdout.write(f"{r.engine} thinking {r.thinking} k={r.draft_len}: AL {r.al:.3f} "
                         f"[{r.al_ci95[0]:.3f}, {r.al_ci95[1]:.3f}] over {clusters_text(r)} "
                         f"from {r.num_requests} requests, "
                         f"{r.num_verify_steps} verify steps, source {r.al_source}{tag}\n")
        if r.checks:
            sys.stdout.write("  checks passed: " + ", ".join(f"{n} x{c}" for n, c in sorted(r.checks.items())) + "\n")
    for v in result.validation:
        sys.stdout.write(f"validate thinking {v.thinking} k={v.draft_len}: derived {v.derived_al:.3f} vs measured "
                         f"{v.measured_al:.3f}, difference {v.difference:+.3f} "
                         f"({'within' if v.within_ci else 'OUTSIDE'} the combined 95% CI)\n")
    for w in result.warnings:
        sys.stderr.write(f"golden-al: warning: {w}\n")
