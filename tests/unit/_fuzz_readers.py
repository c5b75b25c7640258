"""Hypothesis fuzzing of every reader, run in a child process by ``test_fuzz_readers.py``.

Each reader gets generated hostile input; it must return, or raise a named golden-al error
(the root, :class:`distributions.errors.Error`: exit 2/1);
any other exception is a bug. Every example must finish within ``PER_EXAMPLE_S``. The parent
asserts this process's peak RSS and wall time. Prints one ``ok <reader> <examples>`` line each.

    python tests/unit/_fuzz_readers.py [--examples N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distributions.errors import Error
from golden_al import safeio

PER_EXAMPLE_S = 3.0
_TMP = Path(tempfile.mkdtemp(prefix="golden-al-fuzz-"))

_YAML_ALPHABET = "[]{}&*:-?,|>!%@'\"#\n\t abxyz019."
_KNOBS = ["SGLANG_SIMULATE_ACC_LEN", "synthetic_acceptance_length", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",
          "--spec-decode-acceptance-length", "SYNTHETIC_ACCEPTANCE_LENGTH", "speculative-num-steps",
          "export ", "&a ", "*a", "<<: ", "!!python/object/apply:os.system", "\t", "\x00", "$(", "${X:-",
          "'", '"', "\n", "  ", "- ", ": ", "[", "{", "}", "]", "if [ ", "; then", "fi", "case ", "esac"]


def _bounded(name: str, fn: Callable[[Any], object]) -> Callable[[Any], None]:
    def run(value: Any) -> None:
        start = time.monotonic()
        try:
            fn(value)
        except Error:
            pass
        took = time.monotonic() - start
        assert took < PER_EXAMPLE_S, f"{name} took {took:.2f} s on {value!r:.200}"

    return run


def _file(data: bytes, suffix: str) -> Path:
    f = _TMP / f"in{suffix}"
    f.write_bytes(data)
    return f


hostile_text = st.one_of(
    st.text(alphabet=_YAML_ALPHABET, max_size=400),
    st.lists(st.sampled_from([*_KNOBS, "2.49", "3", "0", "-1", "nan", "1e999", "x"]), max_size=60).map("".join),
    st.builds(lambda n, w: "\n".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}" if i else "x"] * w) + "]"
                                     for i in range(n)), st.integers(1, 12), st.integers(1, 12)),
    st.builds(lambda n, c: c * n, st.integers(1, 5000), st.sampled_from(["[", "{", "- ", "? ", "a:\n "])),
)
hostile_bytes = st.one_of(st.binary(max_size=400), hostile_text.map(lambda t: t.encode("utf-8")),
                          hostile_text.map(lambda t: t.encode("utf-16")))
json_values = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
                           lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
                           max_leaves=30)
_SPEC_KEYS = ["spec_verify_ct", "spec_accept_length", "spec_accept_token_num", "spec_accept_histogram",
              "completion_tokens", "acceptance_histogram", "num_drafts", "num_draft_tokens", "num_accepted_tokens",
              "mean_acceptance_length", "enabled", "total_draft_tokens", "total_accepted_tokens", "distribution"]
spec_dicts = st.dictionaries(st.sampled_from(_SPEC_KEYS), json_values | st.lists(st.integers(-3, 50), max_size=6),
                             max_size=8)
_METRIC_LINES = ["# TYPE vllm:spec_decode_num_drafts counter", "vllm:spec_decode_num_drafts_total{model_name=\"m\"} ",
                 "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"", "process_start_time_seconds ",
                 "vllm:spec_decode_num_drafts_created ", "atom:mtp_decode_steps_total{accepted_tokens=\"",
                 "sglang:spec_verify_calls_total ", "# HELP x y", "{", "}", "\"", "=", " ", "\n", "1", "-1", "NaN",
                 "+Inf", "1e400", "0\"} 3"]
metrics_text = st.lists(st.sampled_from(_METRIC_LINES), max_size=40).map("".join)
_LOG_LINES = ["Decode batch, #running-req: {n}, accept len: {f}, accept rate: {f}, gen throughput (token/s): {f}, "
              "#queue-req: {n}",
              "SpecDecoding metrics: Mean acceptance length: {f}, Accepted throughput: {f} tokens/s, Drafted "
              "throughput: {f} tokens/s, Accepted: {n} tokens, Drafted: {n} tokens, Per-position acceptance rate: "
              "{f}, {f}, Avg Draft acceptance rate: {f}%",
              "[MTP Stats Interval] Average toks/fwd: {f}, Accepted/Total Draft tokens: {n}/{n}, Acceptance rate: "
              "{f}%, Accepted tokens distribution: {{0: '{f}%', 1: '{f}%'}}"]
numbers = st.sampled_from(["0", "1", "3", "12", "999999999999999999999", "-2", "2.5", "nan", "inf", "1e308", "0.00"])
log_text = st.lists(st.builds(lambda tpl, vals: tpl.replace("{n}", "{}").replace("{f}", "{}").format(
    *(vals * 20)[: tpl.count("{n}") + tpl.count("{f}")]), st.sampled_from(_LOG_LINES),
    st.lists(numbers, min_size=1, max_size=6)), max_size=20).map("\n".join)


def readers() -> list[tuple[str, Any, Callable[[Any], object]]]:
    from golden_al.checks.static import check_paths
    from golden_al.engines.atom.responses import parse_atom_mtp_stats
    from golden_al.engines.sglang.responses import parse_sglang_meta_info
    from golden_al.engines.vllm.responses import parse_vllm_spec_metrics
    from golden_al.formats.counters import spec_counters
    from golden_al.formats.logs import read_log_file
    from golden_al.formats.prometheus import parse_metrics_text, read_metrics_file
    from golden_al.golden import load_store, read_al_table
    from golden_al.golden.legacy import read_legacy_text
    from golden_al.golden.schema import load_yaml_roundtrip, parse_curve, to_plain
    from golden_al.measure.records import load_record, read_request_results

    store = load_store(Path(__file__).resolve().parents[1] / "fixtures" / "check" / "golden")

    def metrics(text: str) -> None:
        snap = parse_metrics_text(text)
        for engine in ("vllm", "sglang", "atom"):
            try:
                spec_counters(snap, engine)
            except Error:
                pass

    def curve(text: str) -> None:
        doc = load_yaml_roundtrip(text)
        parse_curve(to_plain(doc), doc=doc)

    return [
        ("decode_text", hostile_bytes, safeio.decode_text),
        ("iter_lines", hostile_bytes, lambda b: list(safeio.iter_lines(_file(b, ".log")))),
        ("load_yaml_documents", hostile_text, safeio.load_yaml_documents),
        ("load_yaml_roundtrip", hostile_text, safeio.load_yaml_roundtrip),
        ("load_json", st.one_of(hostile_text, json_values.map(json.dumps)), safeio.load_json),
        ("golden curve", hostile_text, curve),
        ("legacy golden curve", hostile_text, read_legacy_text),
        ("draft-lengths curve file", hostile_bytes, lambda b: read_al_table(_file(b, ".yaml"))),
        ("check yaml", hostile_bytes, lambda b: check_paths([_file(b, ".yaml")], store=store)),
        ("check json", hostile_bytes, lambda b: check_paths([_file(b, ".json")], store=store)),
        ("check shell", hostile_bytes, lambda b: check_paths([_file(b, ".sh")], store=store)),
        ("prometheus text", metrics_text, metrics),
        ("prometheus file", metrics_text, lambda t: read_metrics_file(_file(t.encode(), ".txt"))),
        ("server log", log_text, lambda t: read_log_file(_file(t.encode(), ".log"))),
        ("sglang meta_info", spec_dicts, lambda d: parse_sglang_meta_info(d, k=3)),
        ("vllm spec metrics", spec_dicts, lambda d: parse_vllm_spec_metrics(d, k=3)),
        ("atom mtp stats", spec_dicts, lambda d: parse_atom_mtp_stats(d, k=3)),
        ("measurement record", hostile_bytes, lambda b: load_record(_file(b, ".json"))),
        ("requests.jsonl", hostile_bytes, lambda b: read_request_results(_file(b, ".jsonl"))),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=60)
    args = ap.parse_args(argv)
    for name, strategy, fn in readers():
        run = settings(max_examples=args.examples, deadline=None, derandomize=True, database=None,
                       suppress_health_check=list(HealthCheck))(given(strategy)(_bounded(name, fn)))
        run()
        print(f"ok {name} {args.examples}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
