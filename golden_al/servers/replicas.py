"""Data-parallel replicas: several ``--server URL`` of one configuration measured as one cell.

* :func:`check_replicas_agree` refuses replicas that disagree about what is measured:
  the model, the engine version, the draft method, the draft length, and every
  speculative or synthetic-acceptance setting they report.
* :func:`shard` assigns prompt ``i`` to replica ``i mod n`` (a resumed run sends a
  missing prompt to the same replica when the list of servers is the same).
* :func:`per_server_shares` sums each replica's lines of ``requests.jsonl`` (tagged
  ``extra.server``) into the record's ``per_server`` sub-counts.

A router (one URL in front of the replicas) needs none of this with a per-request
source: each response carries its own counts. With an aggregate source behind a
router the counters would be one replica's (or the router's), so measure the
replicas' own URLs instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from golden_al.errors import ServerError, UsageError
from golden_al.measure.schema import RequestResult, ServerShare
from golden_al.measure.totals import counts_from_requests
from golden_al.plugin.facts import ServerFacts

__all__ = ["check_replicas_agree", "identified", "identity", "identity_changes", "per_server_shares", "shard"]

T = TypeVar("T")

#: server_args that may differ between replicas of one configuration (where they listen, which GPUs, ...).
_PLACEMENT = ("host", "port", "base_gpu_id", "gpu_id", "dist_init_addr", "nccl_port", "node_rank", "dp_rank",
              "random_seed", "file_storage_path", "metrics_port", "log_file", "device", "bootstrap_port",
              "disaggregation_bootstrap_port", "served_model_name_suffix", "uvicorn_port")
_COMPARED_PREFIXES = ("speculative", "spec_", "num_speculative", "model", "served_model_name", "tokenizer", "dtype",
                      "kv_cache_dtype", "quantization", "tp_size", "tensor_parallel", "enable_thinking",
                      "environ", "method")
_SYNTHETIC_WORDS = ("simulat", "synthetic", "force", "acceptance")


def _compared_args(args: Mapping[str, Any] | None) -> dict[str, Any]:
    if not args:
        return {}
    out = {}
    for key, value in args.items():
        low = key.lower()
        if low in _PLACEMENT:
            continue
        if low.startswith(_COMPARED_PREFIXES) or any(w in low for w in _SYNTHETIC_WORDS):
            out[key] = value
    return out


def identity(facts: ServerFacts) -> dict[str, Any]:
    """What a server reports of itself that changes AL: engine and version, the models it serves, the
    draft method, k, whether drafts chain, and its model, speculative and synthetic-acceptance
    arguments (not where it listens). Part of a cell's fingerprint: a resumed run or another replica
    must report the same."""
    return {"engine": facts.engine, "version": facts.version, "models": sorted(facts.models),
            "draft_method": facts.draft_method, "draft_len": facts.draft_len, "chain": facts.chain,
            "args": _compared_args(facts.server_args)}


def identity_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Every field in which two :func:`identity` values of one server differ (``args`` key by key). A field
    the server did not report before (None: llama-server tells its k only once it has drafted) is not a
    change; one it reported and now reports otherwise, or no longer reports, is."""
    out: list[str] = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if name == "args" and isinstance(a, Mapping) and isinstance(b, Mapping):
            out.extend(f"{key} {a.get(key)!r} -> {b.get(key)!r}" for key in sorted(set(a) | set(b))
                       if a.get(key) != b.get(key) and a.get(key) is not None)
        elif a is not None and a != b:
            out.append(f"{name} {a!r} -> {b!r}")
    return out


def identified(facts: ServerFacts) -> bool:
    """Whether the server says enough about itself to tell two configurations apart (its draft method
    or its arguments)."""
    return facts.draft_method is not None or bool(_compared_args(facts.server_args))


def check_replicas_agree(urls: Sequence[str], facts: Sequence[ServerFacts]) -> None:
    """Raise ServerError naming every field in which a replica differs from the first.

    Compared: the models listed at ``/v1/models``, the version, the draft method and
    length, whether drafts chain, and the speculative, model and synthetic-acceptance
    server arguments (not where each replica listens or which GPUs it uses).
    """
    if len(urls) != len(facts):
        raise UsageError(f"{len(urls)} servers but {len(facts)} descriptions")
    if len(set(urls)) != len(urls):
        dup = sorted({u for u in urls if list(urls).count(u) > 1})
        raise UsageError(f"--server {dup[0]} is given twice", hint="each replica once")
    ref = facts[0]
    diffs: list[str] = []
    for url, f in zip(urls[1:], facts[1:], strict=True):
        for name, a, b in (("models", ref.models, f.models), ("version", ref.version, f.version),
                           ("draft method", ref.draft_method, f.draft_method),
                           ("draft length", ref.draft_len, f.draft_len), ("chain", ref.chain, f.chain)):
            if a != b:
                diffs.append(f"{url} {name} {b!r} vs {a!r} at {urls[0]}")
        ra, rb = _compared_args(ref.server_args), _compared_args(f.server_args)
        for key in sorted(set(ra) | set(rb)):
            if ra.get(key) != rb.get(key):
                diffs.append(f"{url} {key}={rb.get(key)!r} vs {ra.get(key)!r} at {urls[0]}")
    if diffs:
        raise ServerError("the --server replicas are not one configuration: " + "; ".join(diffs[:8])
                          + (f" (and {len(diffs) - 8} more)" if len(diffs) > 8 else ""),
                          hint="data-parallel replicas must serve the same model, version, draft and settings; "
                          "measure different configurations as separate cells")


def shard(items: Sequence[T], n: int, index: Any = None) -> list[list[T]]:
    """``n`` shards: item ``i`` (or the one whose ``index(item)`` is ``i``) goes to shard ``i mod n``."""
    key = index or (lambda item: item.index)
    out: list[list[T]] = [[] for _ in range(n)]
    for item in items:
        out[int(key(item)) % n].append(item)
    return out


def per_server_shares(urls: Sequence[str], rows: Sequence[RequestResult], draft_len: int) -> list[ServerShare]:
    """Each replica's sub-counts from the lines tagged ``extra.server``."""
    from golden_al.measure.totals import request_indices

    shares = []
    for i, url in enumerate(urls):
        mine = [r for r in rows if r.extra and r.extra.get("server") == i]
        c = counts_from_requests(mine, draft_len)
        steps = float(c.num_verify_steps)
        shares.append(ServerShare(url=url, num_requests=len(request_indices(mine)), clusters=len(mine),
                                  num_verify_steps=c.num_verify_steps, num_accepted_drafts=c.num_accepted_drafts,
                                  histogram=c.histogram,
                                  al=(1.0 + float(c.num_accepted_drafts) / steps) if steps > 0 else None))
    return shares
