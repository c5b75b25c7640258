"""serve-reference's SGLang flavor (SGLang 0.5.23 ``python/sglang/srt/entrypoints/http_server.py``,
``entrypoints/openai/protocol.py``, ``managers/tokenizer_manager.py`` ``_calculate_spec_decoding_metrics``,
``managers/scheduler_components/metrics_reporter.py``, ``observability/metrics_collector.py``):
``/v1/chat/completions`` with ``choices[0].meta_info`` when ``return_meta_info`` and
``sglext.spec_tokens_details`` when ``return_spec_tokens_details``; ``/generate`` with ``meta_info``;
``/server_info`` (and ``/get_server_info``) with the server args, ``internal_states[0].avg_spec_accept_length``
(advanced only at each decode-log interval, as SGLang does) and ``version``; ``/metrics``; the
``Decode batch, ...`` log line every ``decode_log_interval`` request-steps. ``meta_version`` selects the
field names: ``0.5.23``, ``0.5.15`` (adds the ``spec_accepted_drafts`` / ``spec_proposed_drafts`` /
``spec_accept_histogram`` aliases) or ``old`` (``spec_accept_token_num`` / ``spec_draft_token_num`` /
``spec_accept_histogram`` only). As in SGLang, ``completion_tokens`` includes the prefill token and the
histogram list is only as long as the largest count seen."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar

from golden_al import plugin

from . import (
    DEFAULT_METHOD,
    ENV_LEN,
    ENV_METHOD,
    INFO_AVG_ACCEPT_LENGTH,
    INFO_INTERNAL_STATES,
    LOG_DECODE_BATCH_FORMAT,
    LOG_SERVER_ARGS_FORMAT,
    META_ACCEPT_LENGTH,
    META_ACCEPT_RATE,
    META_ACCEPTED_KEYS,
    META_COMPLETION_TOKENS,
    META_DETAILS,
    META_EXTENSION,
    META_HISTOGRAM_KEYS,
    META_INFO,
    META_PROPOSED_KEYS,
    META_VERIFY,
    METRIC_ACCEPT_LENGTH,
    METRIC_ACCEPT_RATE,
    METRIC_GENERATION_TOKENS,
    METRIC_NUM_REQUESTS,
    METRIC_VERIFY_CALLS,
    SERVER_INFO_FIELDS,
    SERVER_INFO_PATHS,
)

__all__ = ["SglangFlavor"]

_LABELS = ("model_name", "engine_type", "tp_rank")


def _histogram(accepted: list[int]) -> list[int]:
    """SGLang's dynamically grown list: index j = steps that accepted j drafts."""
    if not accepted:
        return []
    out = [0] * (max(accepted) + 1)
    for n in accepted:
        out[n] += 1
    return out


class SglangFlavor(plugin.Flavor):
    """SGLang's counters, decode log line, ``/server_info``, ``/generate`` and ``meta_info``."""

    generate_paths: ClassVar[tuple[str, ...]] = ("/generate",)

    def reset(self, registry: Any) -> None:
        from prometheus_client import Counter, Gauge

        self.c_verify = Counter(METRIC_VERIFY_CALLS.removesuffix("_total"),
                                "Number of speculative decoding verification calls.", _LABELS, registry=registry)
        self.c_gen = Counter(METRIC_GENERATION_TOKENS.removesuffix("_total"),
                             "Number of generation tokens processed.", _LABELS, registry=registry)
        self.c_requests = Counter(METRIC_NUM_REQUESTS.removesuffix("_total"),
                                  "The number of processed requests.", _LABELS, registry=registry)
        self.g_accept_len = Gauge(METRIC_ACCEPT_LENGTH, "The average acceptance length of speculative "
                                  "decoding.", _LABELS, registry=registry)
        self.g_accept_rate = Gauge(METRIC_ACCEPT_RATE, "The average acceptance rate of speculative "
                                   "decoding.", _LABELS, registry=registry)
        for c in (self.c_verify, self.c_gen, self.c_requests):
            c.labels(self.model_name(), "unified", "0").inc(0)
        # the decode-log interval, and the lifetime totals advanced at each interval
        self.batches = self.tokens = self.bs = self.correct = 0
        self.total_tokens = self.total_forward = 0
        self.iv_start = time.monotonic()

    def record(self, gen: plugin.Generation) -> None:
        name = self.model_name()
        self.c_verify.labels(name, "unified", "0").inc(len(gen.accepted))
        self.c_gen.labels(name, "unified", "0").inc(gen.output_tokens)
        self.c_requests.labels(name, "unified", "0").inc()
        for n in gen.accepted:
            self.batches += 1
            self.tokens += n + 1
            self.bs += 1
            self.correct += n
            if self.batches >= self.config.decode_log_interval:
                self._line()

    def _line(self) -> None:
        k = self.engine.draft_len
        elapsed = max(time.monotonic() - self.iv_start, 1e-9)
        accept_len = self.tokens / self.bs
        accept_rate = self.correct / (self.bs * k)  # per round: speculative_num_draft_tokens - 1 (topk 1)
        self.total_tokens += self.tokens
        self.total_forward += self.bs
        name = self.model_name()
        self.g_accept_len.labels(name, "unified", "0").set(accept_len)
        self.g_accept_rate.labels(name, "unified", "0").set(accept_rate)
        self.log(LOG_DECODE_BATCH_FORMAT.format(
            time=plugin.now_log(), running=max(self.running, 1), tokens=self.tokens, accept_len=accept_len,
            accept_rate=accept_rate, throughput=self.tokens / elapsed))
        self.batches = self.tokens = self.bs = self.correct = 0
        self.iv_start = time.monotonic()

    def startup_lines(self, port: int) -> list[str]:
        k = self.engine.draft_len
        return [LOG_SERVER_ARGS_FORMAT.format(time=plugin.now_log(), model=self.engine.target_name,
                                                     algorithm=self.config.algorithm.upper(), steps=k,
                                                     draft_tokens=k + 1)]

    def get(self, path: str) -> Any | None:
        if path in SERVER_INFO_PATHS:
            return self.server_info()
        if path == "/get_model_info":
            return {"model_path": self.engine.target_name, "is_generation": True}
        return None

    def server_info(self) -> dict[str, Any]:
        """SGLang ``/server_info``: server args flattened, ``internal_states``, ``version``."""
        k = self.engine.draft_len
        algo = self.config.algorithm.upper()
        steps, ndt = (1, k + 1) if algo in ("DFLASH", "DSPARK") else (k, k + 1)
        f = SERVER_INFO_FIELDS
        avg = self.total_tokens / self.total_forward if self.total_forward else 0.0
        info: dict[str, Any] = {
            f["model_path"]: self.engine.target_name,
            f["served_model_name"]: self.model_name(),
            f["tp_size"]: 1,
            f["algorithm"]: algo,
            f["draft_model"]: self.engine.draft_name,
            f["num_steps"]: steps,
            f["eagle_topk"]: 1,
            f["num_draft_tokens"]: ndt,
            "decode_log_interval": self.config.decode_log_interval,
            f["adaptive"]: self.config.speculative_adaptive,
            f["accept_threshold_single"]: self.config.accept_threshold_single,
            f["accept_threshold_acc"]: 1.0,
            INFO_INTERNAL_STATES: [{INFO_AVG_ACCEPT_LENGTH: avg, "last_gen_throughput": 0.0}],
            "version": self.config.version,
        }
        if algo == "DSPARK":
            info[f["dspark_block_size"]] = k
        info.update(self.config.server_settings)
        if self.config.claim_synthetic:
            info["environ"] = {ENV_LEN: "2.5", ENV_METHOD: DEFAULT_METHOD}
        return info

    def meta_info(self, gen: plugin.Generation, rid: str, latency: float, nospec: bool) -> dict[str, Any]:
        """SGLang ``meta_info`` of a finished request (field names per ``meta_version``; ``nospec``: none of
        the ``spec_`` fields)."""
        k = self.engine.draft_len
        verify = len(gen.accepted)
        correct = sum(gen.accepted)
        proposed = verify * k
        hist = _histogram(gen.accepted)
        finish: dict[str, Any] = {"type": gen.finish_reason}
        if gen.finish_reason == "length":
            finish["length"] = gen.output_tokens
        meta: dict[str, Any] = {
            "id": rid,
            "finish_reason": finish,
            "prompt_tokens": gen.prompt_tokens,
            "completion_tokens": gen.output_tokens,
            "cached_tokens": 0,
            "e2e_latency": latency,
            META_VERIFY: verify,
        }
        if verify:
            meta[META_ACCEPT_LENGTH] = gen.output_tokens / verify
            meta[META_ACCEPT_RATE] = correct / proposed if proposed else 0.0
        # field names by version, newest first: (0.5.23, 0.5.15 alias, old) for accepted / proposed,
        # (0.5.23, 0.5.15 alias = old) for the histogram
        acc, prop, hists = META_ACCEPTED_KEYS, META_PROPOSED_KEYS, META_HISTOGRAM_KEYS
        version = self.config.meta_version
        if version == "old":
            meta.update({acc[2]: correct, prop[2]: proposed, hists[1]: hist})
        else:
            meta.update({acc[0]: correct, prop[0]: proposed, hists[0]: hist})
            if version == "0.5.15":
                meta.update({acc[1]: correct, prop[1]: proposed, hists[1]: hist})
        return {key: v for key, v in meta.items() if not key.startswith("spec_")} if nospec else meta

    @staticmethod
    def spec_tokens_details(meta: Mapping[str, Any]) -> dict[str, Any]:
        """SGLang ``SpecTokensDetails`` (0.5.23 ``entrypoints/openai/protocol.py``)."""
        keys = (META_ACCEPT_RATE, META_ACCEPT_LENGTH, META_ACCEPTED_KEYS[0],
                META_PROPOSED_KEYS[0], META_VERIFY, META_HISTOGRAM_KEYS[0])
        out: dict[str, Any] = {key: meta.get(key) for key in keys}
        out.update(spec_cap_length=None, spec_block_accept_length=None, spec_cap_lens_histogram=None)
        return out

    def generate_answer(self, gen: plugin.Generation, rid: str, latency: float, nospec: bool) -> dict[str, Any]:
        return {"text": gen.text, META_INFO: self.meta_info(gen, rid, latency, nospec)}

    def chat_fields(self, resp: dict[str, Any], choice: dict[str, Any], body: dict[str, Any], gen: plugin.Generation,
                    rid: str, latency: float, nospec: bool) -> None:
        meta = self.meta_info(gen, rid, latency, nospec)
        if body.get("return_meta_info"):
            choice[META_INFO] = meta
        if body.get("return_spec_tokens_details") and not nospec:
            resp[META_EXTENSION] = {META_DETAILS: self.spec_tokens_details(meta)}

    def lie(self, resp: dict[str, Any], kinds: list[str], k: int) -> int | None:
        """The faults on a chat answer's ``meta_info``: claim every draft (the histogram too), drop or inflate its
        completion tokens, drop the proposed count, or propose k - 1."""
        meta = next((c.get(META_INFO) for c in resp.get("choices") or [] if isinstance(c, dict)
                     and isinstance(c.get(META_INFO), dict)), None)
        if meta is None:
            return None
        steps = int(meta.get(META_VERIFY) or 0)
        claimed = None
        if "claim-all-no-usage" in kinds:
            meta.pop(META_COMPLETION_TOKENS, None)
        if "claim-all" in kinds:
            for key in META_ACCEPTED_KEYS:
                if key in meta:
                    meta[key] = steps * k
            for key in META_HISTOGRAM_KEYS:
                if key in meta:
                    meta[key] = [0] * k + [steps]
            claimed = 1 + steps * (k + 1)  # the tokens the claim would have emitted (the prefill's, k + 1 a step)
            if "inflate-usage" in kinds:
                meta[META_COMPLETION_TOKENS] = claimed
        if "no-proposed" in kinds:
            for key in META_PROPOSED_KEYS:
                meta.pop(key, None)
        if "fewer-drafts" in kinds:
            for key in META_PROPOSED_KEYS:
                if key in meta:
                    meta[key] = steps * (k - 1)
        return claimed
