#!/usr/bin/env python3
"""A test-only stand-in for llama.cpp's ``llama-server`` (no model, no build).

It parses the flags golden-al's ``--launch`` writes (``--spec-draft-n-max/-n-min/-p-min``,
``--spec-synth-len``, ``--metrics``, ...) and answers in llama-server's shapes, as read
from llama.cpp 0c1e570 and checked against the real captures in
``golden_al/engines/llamacpp/tests/fixtures/llamacpp-0c1e570/``: ``/health``, ``/v1/models``, ``/props``,
``/metrics`` (``llamacpp:`` counters, added when a request finishes),
``/v1/chat/completions`` with ``timings.draft_n``/``draft_n_accepted``, and the
``draft acceptance = ...`` log line per request. Acceptance is a deterministic
per-position walk seeded by the prompt, so repeated runs agree. With
``--spec-synth-len`` it prints llama.cpp's synthetic-acceptance warning at startup.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STATE: dict[str, Any] = {"drafts": 0, "draft_tokens": 0, "accepted": 0, "per_pos": [], "processing": 0}
LOCK = threading.Lock()


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--model", "-m", required=True)
    p.add_argument("--spec-draft-model", "-md", default=None)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--metrics", action="store_true")
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--spec-type", default="none")
    p.add_argument("--spec-draft-n-max", type=int, default=3)
    p.add_argument("--spec-draft-n-min", type=int, default=0)
    p.add_argument("--spec-draft-p-min", type=float, default=0.0)
    p.add_argument("--spec-synth-len", type=float, default=None)
    p.add_argument("--alias", default=None)
    return p.parse_known_args()[0]


ARGS = _args()


def _generate(messages: object, max_tokens: int) -> tuple[int, list[int]]:
    """Tokens generated and accepted drafts per verify step (fixed k: steps draft exactly k)."""
    k = ARGS.spec_draft_n_max
    seed = int(hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:12], 16)
    rng = random.Random(seed)
    natural = rng.randint(20, 90)
    n_tokens = min(max_tokens, natural)
    steps: list[int] = []
    pos = 1
    while pos < n_tokens:
        if n_tokens - pos - 1 < k:  # get_n_draft_max < n_min: the draft is dropped, a plain decode step
            pos += 1
            continue
        run = 0
        while run < k and rng.random() < 0.7:
            run += 1
        steps.append(run)
        pos += run + 1
    return n_tokens, steps


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a: object) -> None:  # keep stderr for llama.cpp-style lines
        pass

    def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        name = ARGS.alias or ARGS.model.rsplit("/", 1)[-1]
        if self.path == "/health":
            self._send(200, b'{"status":"ok"}')
        elif self.path == "/v1/models":
            self._send(200, json.dumps({"object": "list", "data": [{"id": name, "object": "model"}]}).encode())
        elif self.path == "/props":
            self._send(200, json.dumps({"total_slots": ARGS.parallel, "model_alias": name, "model_path": ARGS.model,
                                        "endpoint_metrics": ARGS.metrics, "build_info": "b0-fake"}).encode())
        elif self.path == "/metrics" and ARGS.metrics:
            with LOCK:
                s = dict(STATE)
            lines = []
            for metric, typ, value in (("spec_decode_num_draft_tokens_total", "counter", s["draft_tokens"]),
                                       ("spec_decode_num_accepted_tokens_total", "counter", s["accepted"]),
                                       ("spec_decode_num_drafts_total", "counter", s["drafts"]),
                                       ("requests_processing", "gauge", s["processing"]),
                                       ("requests_deferred", "gauge", 0)):
                lines += [f"# HELP llamacpp:{metric} x", f"# TYPE llamacpp:{metric} {typ}", f"llamacpp:{metric} {value}"]
            if s["per_pos"]:
                lines += ["# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft "
                          "position", "# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter"]
                lines += [f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {v}'
                          for i, v in enumerate(s["per_pos"])]
            self._send(200, ("\n".join(lines) + "\n").encode(), "text/plain; version=0.0.4")
        else:
            self._send(501 if self.path == "/metrics" else 404, b'{"error":"not available"}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        k = ARGS.spec_draft_n_max
        n_tokens, steps = _generate(body.get("messages"), int(body.get("max_tokens") or 64))
        accepted = sum(steps)
        with LOCK:
            STATE["drafts"] += len(steps)
            STATE["draft_tokens"] += k * len(steps)
            STATE["accepted"] += accepted
            per_pos = STATE["per_pos"] or [0] * k
            for a in steps:
                for i in range(a):
                    per_pos[i] += 1
            STATE["per_pos"] = per_pos
            STATE["requests"] = task = STATE.get("requests", 0) + 1  # llama-server: a task id, a random completion id
        timings = {"prompt_n": 20, "predicted_n": n_tokens}
        if steps:
            timings.update(draft_n=k * len(steps), draft_n_accepted=accepted)
            mean_len = 1 + accepted / len(steps)
            print(f"slot print_timings: id  0 | task {task} | draft acceptance = {accepted / (k * len(steps)):0.5f} "
                  f"({accepted:5d} accepted / {k * len(steps):5d} generated), mean len = {mean_len:5.2f}",
                  file=sys.stderr, flush=True)
        name = ARGS.alias or ARGS.model.rsplit("/", 1)[-1]  # llama-server's meta->model_name, as /v1/models lists
        resp = {"id": f"chatcmpl-fake{task}", "object": "chat.completion", "model": name,
                "choices": [{"index": 0, "finish_reason": "stop" if n_tokens < int(body.get("max_tokens") or 64)
                             else "length", "message": {"role": "assistant", "content": "x " * n_tokens}}],
                "usage": {"prompt_tokens": 20, "completion_tokens": n_tokens, "total_tokens": 20 + n_tokens},
                "timings": timings}
        self._send(200, json.dumps(resp).encode())


def main() -> None:
    if ARGS.spec_synth_len is not None:
        print("spec common_specul: synthetic speculative acceptance is enabled for benchmarking; generated output "
              "is not valid", file=sys.stderr, flush=True)
    server = ThreadingHTTPServer((ARGS.host, ARGS.port), Handler)
    print(f"main: server is listening on http://{ARGS.host}:{ARGS.port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
