"""toyserve's server side for golden-al: a fake toyserve server (stdlib only), its probe and its AL
source, as a third-party package brings them. Nothing in golden-al names any of it: the profile
names the probe (``server_probe``) and the source (``al_sources``/``source_impls``).

The fake server drafts ``k`` tokens per verify step and accepts a fixed cycle of draft counts,
so every measurement of it has a known answer: each response carries its own per-request
histogram (``toy_stats.accepted_histogram``) and ``usage.completion_tokens`` = the prefill token +
one token per verify step + the accepted drafts.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "toy-model"
VERSION = "0.1.0"
INFO_PATH = "/toy/info"


def steps_for(max_tokens: int, k: int, cycle: Sequence[int]) -> list[int]:
    """Accepted drafts of each verify step of one request that generates ``max_tokens`` tokens."""
    out: list[int] = []
    left = max_tokens - 1  # the prefill token is no verify step
    i = 0
    while left > 0:
        a = min(cycle[i % len(cycle)], k, left - 1)
        out.append(a)
        left -= 1 + a
        i += 1
    return out


class FakeToyServer:
    """A toyserve imitation on a free loopback port (``url``); ``close()`` stops it."""

    def __init__(self, k: int, cycle: Sequence[int] = (3, 0, 7, 1, 2)) -> None:
        self.k, self.cycle = k, tuple(cycle)
        self.served = 0  #: answers given (each gets its own id, as a real server's do)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, doc: Any, status: int = 200) -> None:
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self._send({"object": "list", "data": [{"id": MODEL, "object": "model"}]})
                elif self.path == INFO_PATH:
                    self._send({"version": VERSION, "draft_len": server.k, "model": MODEL})
                else:
                    self._send({"error": "not found"}, 404)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                req = json.loads(self.rfile.read(length) or b"{}")
                if self.path != "/v1/chat/completions":
                    self._send({"error": "not found"}, 404)
                    return
                n = int(req.get("max_tokens") or 16)
                steps = steps_for(n, server.k, server.cycle)
                hist = [0] * (server.k + 1)
                for a in steps:
                    hist[a] += 1
                server.served += 1
                self._send({"id": f"toy-{server.served}", "object": "chat.completion", "model": MODEL,
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": "toy " * n},
                                         "finish_reason": "length"}],
                            "usage": {"prompt_tokens": 8, "completion_tokens": n, "total_tokens": 8 + n},
                            "toy_stats": {"accepted_histogram": hist}})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


# ------------------------------------------------------------------ golden-al's side of it
async def probe(client: Any, facts: Any, *, log_text: str | None) -> None:
    """golden-al's server probe for toyserve: version and draft length from ``/toy/info``."""
    from golden_al.plugin import MetricMissingError

    info = await client.get_json(INFO_PATH, label=f"GET {INFO_PATH}", optional=True)
    if not isinstance(info, Mapping):
        raise MetricMissingError(f"the server has no {INFO_PATH}: is this toyserve? (--engine)")
    facts.version = str(info.get("version"))
    if isinstance(info.get("draft_len"), int):
        facts.draft_len = info["draft_len"]
        facts.draft_len_rule = f"{INFO_PATH} draft_len"
    facts.draft_method = "draft-model"
    facts.chain = True


def _read_counts(resp: Mapping[str, Any], k: int, label: str) -> Any:
    from distributions.counts import from_histogram
    from golden_al.plugin import MetricMissingError

    stats = resp.get("toy_stats")
    hist = stats.get("accepted_histogram") if isinstance(stats, Mapping) else None
    if not isinstance(hist, list):
        raise MetricMissingError(f"{label}: the response has no toy_stats.accepted_histogram "
                                 f"(top-level keys: {sorted(resp)})")
    return from_histogram(hist, k=k, source=label)


def _per_request() -> Any:
    from golden_al.plugin import ResponseCounts

    return ResponseCounts(_read_counts)


PER_REQUEST = _per_request()
