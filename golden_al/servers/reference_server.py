"""``serve-reference``: an HTTP server that answers like one engine (its *flavor*).

It wraps a :class:`~golden_al.servers.served_engine.ServedEngine` (the reference
engine, or the deterministic fake) behind the endpoints, fields, counters and log
lines that ``measure``/``sweep``/``check-run`` read from real engines, so all of
them can be tested end to end over real HTTP. This module owns what every flavor shares
(HTTP, the bounded request reader, ``/v1/chat/completions``, ``/v1/models``, ``/metrics``,
``/health``, the fault plan); what is an engine's own lives in its flavor
(:mod:`golden_al.servers.reference`: SGLang 0.5.23, vLLM 0.33.0, ATOM ffdf3bb5d, each citing
the upstream files it reproduces), which the engine's profile names
(:attr:`~golden_al.plugin.profile.ServerSupport.reference_flavor`).

Faults for tests (:class:`FaultPlan`, ``--fault KIND@N`` on the command line; ``N``
counts chat/generate requests received, from 1, as ``N``, ``N-M`` or ``N+``):
``500``/``502``/``503`` answer that status; ``sleep`` sleeps ``fault_sleep_s`` first
(past the client's timeout) and then still generates; ``reset`` zeroes every
counter first (a restart); ``nospec`` omits the spec fields; ``die`` exits the
process at once (a killed server); ``claim-synthetic`` (a server-level flag)
reports synthetic acceptance in ``/server_info`` and the startup log. Servers that lie
(issue 23): ``redirect`` answers 302 with a body that claims every draft was accepted;
``claim-all`` answers with every draft accepted on every step; ``claim-all-no-usage`` does so and omits the
token counts; ``tokens-1`` reports one completion token; ``tokens-text`` reports it as a string;
``fewer-drafts`` reports ``k - 1`` proposed drafts per step; ``no-proposed`` omits the
proposed-draft count (the answer's one evidence of k); ``list`` answers a JSON list;
``endless`` sends a body that never ends; ``trickle`` sends one byte a second; ``gzip-bomb``
sends 64 MiB of zeros gzipped twice (``Content-Encoding: gzip, gzip``, about 1 KB on the wire);
``duplicate-usage`` sends the ``usage`` key twice, an honest count first and then one that
would hide the claim of ``claim-all``; ``model-swap`` answers as another model (a server
replaced mid-run); ``no-model`` omits the answer's ``model``; ``inflate-usage`` claims every draft and
raises the token counts to match the claim (only the text, re-tokenized, tells); ``upgrade`` reports another version from
then on (answers unchanged: a server restarted on another release mid-run).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO

from golden_al.errors import UsageError
from golden_al.plugin import registry
from golden_al.plugin.flavor import Flavor, ServedEngine, now_log
from golden_al.servers.reference.config import Fault, FaultPlan, ServeConfig, parse_fault

__all__ = ["FLAVORS", "Fault", "FaultPlan", "ReferenceServer", "ServeConfig", "flavors", "parse_fault"]


def flavors() -> dict[str, Any]:
    """Engine -> the hook (``lazy("module:Class")``) of its serve-reference flavor, for every engine that has one."""
    out = {}
    for name in registry.engine_names():
        ref = registry.get_profile(name).server.reference_flavor
        if ref is not None:
            out[name] = ref
    return out


#: The engines serve-reference imitates (their profiles name a flavor).
FLAVORS: tuple[str, ...] = tuple(flavors())


class _BoundedHTTPServer(ThreadingHTTPServer):
    """A threading server with at most ``max_workers`` connections handled at once: one more is
    answered 503 at once and closed (a flood of stalled connections cannot hold unbounded threads)."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *, max_workers: int) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(max_workers)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            try:
                body = json.dumps({"object": "error", "message": "too many connections", "code": 503}).encode()
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _lie(resp: dict[str, Any], kinds: list[str], k: int, flavor: Flavor) -> dict[str, Any]:
    """The answer with the counts a lying server reports instead (faults ``claim-all``, ``tokens-1``,
    ``fewer-drafts``, ``no-proposed``, ``model-swap``, ``no-model``): the usage and model here, the engine's own
    per-request fields by its flavor (:meth:`Flavor.lie`)."""
    if "tokens-1" in kinds:
        resp["usage"]["completion_tokens"] = 1
    if "tokens-text" in kinds:  # the count as a string: a reader that skips what it cannot parse trusts the rest
        resp["usage"]["completion_tokens"] = str(resp["usage"]["completion_tokens"])
    if "claim-all-no-usage" in kinds or "inflate-usage" in kinds:
        kinds = [*kinds, "claim-all"]  # claim every draft; then drop, or inflate to match, the token counts
    if "claim-all-no-usage" in kinds:
        resp.pop("usage", None)
    claimed = flavor.lie(resp, kinds, k)
    if "inflate-usage" in kinds and claimed is not None and isinstance(resp.get("usage"), dict):
        resp["usage"]["completion_tokens"] = claimed
    if "model-swap" in kinds:
        resp["model"] = f"{resp.get('model')}-swapped"
    if "no-model" in kinds:
        resp.pop("model", None)
    return resp


def _duplicate_usage(resp: dict[str, Any], kinds: list[str], k: int, flavor: Flavor) -> bytes:
    """The answer with ``usage`` twice: the honest count first, then the one a ``claim-all`` needs
    (a reader that keeps the last key believes the claim)."""
    honest = json.dumps(resp["usage"])
    lie = _lie(resp, [*kinds, "claim-all"], k, flavor)
    claimed = flavor.lie(lie, ["claim-all"], k)
    if claimed is not None:
        lie["usage"]["completion_tokens"] = claimed
    return json.dumps(lie).replace('"usage": ', f'"usage": {honest}, "usage": ', 1).encode()


class ReferenceServer:
    """The HTTP server. ``start()`` serves in a background thread; ``serve_forever()`` blocks.

    Args:
        engine: what generates.
        config: flavor, address, intervals, faults.
        log_stream: where log lines go (the server's "log"); flushed per line.
    """

    def __init__(self, engine: ServedEngine, config: ServeConfig, log_stream: TextIO) -> None:
        known = flavors()
        if config.flavor not in known:
            raise UsageError(f"unknown flavor {config.flavor!r}", hint="one of " + ", ".join(known))
        if config.meta_version not in ("0.5.23", "0.5.15", "old"):
            raise UsageError(f"unknown SGLang meta_info version {config.meta_version!r}", hint="0.5.23, 0.5.15 or old")
        if config.per_request_metrics not in (None, "none", "summary", "detailed"):
            raise UsageError(f"bad per-request metrics level {config.per_request_metrics!r}")
        self.engine = engine
        self.config = config
        self._log_stream = log_stream
        self._log_lock = threading.Lock()
        self.lock = threading.Lock()
        self.running = 0
        flavor_class: type[Flavor] = registry.load_hook(known[config.flavor])
        self.flavor = flavor_class(config, engine, self.log, lambda: self.model_name)
        self.reset()
        self._counter = 0
        self._counter_lock = threading.Lock()
        self._stop = threading.Event()
        self.httpd = _BoundedHTTPServer((config.host, config.port), self._handler_class(),
                                        max_workers=config.max_workers)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ logging
    def log(self, line: str) -> None:
        """Write one log line and flush."""
        with self._log_lock:
            self._log_stream.write(line + "\n")
            self._log_stream.flush()

    @property
    def model_name(self) -> str:
        """The served model name."""
        return self.config.served_model_name or self.engine.model_name

    def reset(self) -> None:
        """Zero every counter, as a restarted server would (a fresh registry, a new start time)."""
        from prometheus_client import CollectorRegistry, Gauge

        self.registry = CollectorRegistry()
        start = Gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                      registry=self.registry)
        start.set(time.time())
        self.flavor.reset(self.registry)

    def set_running(self, delta: int) -> None:
        """``delta`` more (or fewer) requests are being generated."""
        with self.lock:
            self.running += delta
            self.flavor.set_running(self.running)

    def metrics_text(self) -> bytes:
        """The ``/metrics`` body."""
        from prometheus_client import generate_latest

        with self.lock:
            return generate_latest(self.registry)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Serve in background threads (plus the vLLM stats-logging ticker)."""
        for line in self.flavor.startup_lines(self.port):
            self.log(line)
        t = threading.Thread(target=self.httpd.serve_forever, name="serve-reference", daemon=True)
        t.start()
        self._threads.append(t)
        if self.flavor.tick_interval_s is not None:
            tick = threading.Thread(target=self._ticker, name="stats-logger", daemon=True)
            tick.start()
            self._threads.append(tick)
        self.log(f"[{now_log()}] golden-al serve-reference ({self.config.flavor} flavor, k={self.engine.draft_len}) "
                 f"listening on http://{self.config.host}:{self.port}")

    def serve_forever(self) -> None:
        """Start and block until :meth:`shutdown` (or Ctrl-C)."""
        self.start()
        try:
            while not self._stop.wait(0.5):
                pass
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Stop serving."""
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _ticker(self) -> None:
        assert self.flavor.tick_interval_s is not None
        while not self._stop.wait(self.flavor.tick_interval_s):
            with self.lock:
                self.flavor.tick()

    @property
    def url(self) -> str:
        """Base URL."""
        return f"http://{self.config.host}:{self.port}"

    # ------------------------------------------------------------------ answers
    def next_request_number(self) -> int:
        with self._counter_lock:
            self._counter += 1
            return self._counter

    # ------------------------------------------------------------------ handler
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        """The request handler bound to this server; ``timeout``: seconds a connection may stay silent
        (headers, body, or idle between keep-alive requests)."""
        return type("Handler", (_Handler,), {"ref": self, "timeout": self.config.io_timeout_s})



class _Handler(BaseHTTPRequestHandler):
    """The HTTP side of :class:`ReferenceServer` (:meth:`ReferenceServer._handler_class` binds ``ref``)."""

    protocol_version = "HTTP/1.1"
    ref: ReferenceServer  #: the server this handler answers for

    def log_message(self, format: str, *args: Any) -> None:
        return

    def handle_one_request(self) -> None:
        """Every request gets an HTTP answer: anything the handlers did not foresee is a 400 or
        500 JSON error, a silent socket is closed after ``timeout``, never a traceback."""
        try:
            super().handle_one_request()
        except TimeoutError:
            self.close_connection = True
        except (ConnectionError, OSError):
            self.close_connection = True
        except Exception as exc:  # a bad request must never kill the server thread
            self.ref.log(f"[{now_log()}] golden-al: bad request: {type(exc).__name__}: {exc}")
            self._error(400, f"bad request: {type(exc).__name__}")
            self.close_connection = True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's malformed-request answers (a bad request line, headers too long),
        as JSON like every other error, always with an HTTP/1.1 status line."""
        if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":
            self.request_version = "HTTP/1.1"
        self._error(int(code), message or HTTPStatus(int(code)).phrase)
        self.close_connection = True

    def _body(self) -> dict[str, Any] | None:
        """The JSON object of the request body, under the byte cap, or None (answered with a 4xx)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self._error(411, "a Content-Length is required")
            self.close_connection = True  # the chunked body is not read: it must not pass for a request
            return None
        raw = self.headers.get("Content-Length") or "0"
        if not raw.strip().isdigit():
            self._error(400, f"bad Content-Length {raw[:40]!r}")
            return None
        length = int(raw)
        if length > self.ref.config.max_body_bytes:
            self._error(413, f"body of {length:,} bytes is over the {self.ref.config.max_body_bytes:,}-byte cap")
            self.close_connection = True
            return None
        try:
            data = self.rfile.read(length)
        except TimeoutError:
            self._error(408, f"the body stopped arriving ({self.ref.config.io_timeout_s:g} s without a byte)")
            self.close_connection = True
            return None
        if len(data) < length:
            self._error(400, "the body ended before its Content-Length")
            self.close_connection = True
            return None
        try:
            body = json.loads(data or b"{}")
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            self._error(400, f"bad JSON body: {type(exc).__name__}")
            return None
        if not isinstance(body, dict):
            self._error(400, "the body must be a JSON object")
            return None
        return body

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode())

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"object": "error", "message": message, "type": HTTPStatus(status).phrase,
                            "code": status})

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/health", "/health_generate"):
            self._send(200, self.ref.flavor.health_body)
        elif path == "/v1/models":
            self._json(200, {"object": "list", "data": [
                {"id": self.ref.model_name, "object": "model", "owned_by": "golden-al",
                 "root": self.ref.engine.target_name, "max_model_len": 1 << 20}]})
        else:
            with self.ref.lock:  # a flavor's own answer first: TensorRT-LLM's /metrics is JSON
                answer = self.ref.flavor.get(path)
            if answer is not None:
                self._json(200, answer)
            elif path == "/metrics":
                self._send(200, self.ref.metrics_text(), "text/plain; version=0.0.4; charset=utf-8")
            else:
                self._error(404, f"no route {path}")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        body = self._body()
        if body is None:
            return
        if path == "/v1/chat/completions":
            self._generate(body, chat=True)
        elif path in self.ref.flavor.generate_paths:
            self._generate(body, chat=False)
        else:
            self._error(404, f"no route {path}")

    def _generate(self, body: dict[str, Any], *, chat: bool) -> None:
        n = self.ref.next_request_number()
        kinds = self.ref.config.faults.kinds(n, body)
        if self._fault_before(kinds, n):
            return
        try:
            if chat:
                messages = body.get("messages")
                if not isinstance(messages, list) or not messages:
                    self._error(400, "messages must be a non-empty list")
                    return
                if body.get("stream"):
                    self._error(400, "streaming is not supported by serve-reference")
                    return
                max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
                temperature = float(body.get("temperature", 1.0))
                top_p = float(body.get("top_p", 1.0))
                text = None
            else:
                sp = body.get("sampling_params") or {}
                messages = None
                text = body.get("text")
                if not isinstance(text, str):
                    self._error(400, "/generate needs a text prompt")
                    return
                max_tokens = int(sp.get("max_new_tokens", 128))
                temperature = float(sp.get("temperature", 1.0))
                top_p = float(sp.get("top_p", 1.0))
            seed = body.get("seed")
            seed = int(seed) if seed is not None else None
            kwargs = body.get("chat_template_kwargs") or {}
        except (TypeError, ValueError) as exc:
            self._error(400, f"bad request field: {exc}")
            return
        self.ref.set_running(+1)
        t0 = time.monotonic()
        try:
            if "sleep" in kinds:
                self.ref.log(f"[{now_log()}] golden-al fault: request {n}: sleeping {self.ref.config.fault_sleep_s:g} s")
                time.sleep(self.ref.config.fault_sleep_s)
            try:
                gen = self.ref.engine.generate(messages=messages, text=text, max_tokens=max_tokens,
                                             temperature=temperature, top_p=top_p, seed=seed,
                                             chat_template_kwargs=kwargs)
            except Exception as exc:  # a bad request must never kill the server thread
                self.ref.log(f"[{now_log()}] engine error on request {n}: {type(exc).__name__}: {exc}")
                self._error(500, f"engine error: {type(exc).__name__}: {exc}")
                return
            with self.ref.lock:
                self.ref.flavor.record(gen)
        finally:
            self.ref.set_running(-1)
        latency = time.monotonic() - t0
        if self._misbehave(kinds, n):
            return
        nospec = "nospec" in kinds
        rid = uuid.uuid4().hex
        if not chat:
            self._json(200, self.ref.flavor.generate_answer(gen, rid, latency, nospec))
            return
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": gen.text},
                                  "logprobs": None, "finish_reason": gen.finish_reason}
        resp: dict[str, Any] = {
            "id": f"chatcmpl-{rid}", "object": "chat.completion", "created": int(time.time()),
            "model": self.ref.model_name, "choices": [choice],
            "usage": {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.output_tokens,
                      "total_tokens": gen.prompt_tokens + gen.output_tokens},
        }
        self.ref.flavor.chat_fields(resp, choice, body, gen, rid, latency, nospec)
        if "duplicate-usage" in kinds:
            self._send(200, _duplicate_usage(resp, kinds, self.ref.engine.draft_len, self.ref.flavor))
            return
        self._json(200, _lie(resp, kinds, self.ref.engine.draft_len, self.ref.flavor))

    def _fault_before(self, kinds: list[str], n: int) -> bool:
        """The faults that strike before generating (``die``, an HTTP status, ``reset``); True when answered."""
        if "die" in kinds:
            self.ref.log(f"[{now_log()}] golden-al fault: request {n}: exiting (simulated kill)")
            os._exit(17)
        for status in ("500", "502", "503"):
            if status in kinds:
                self.ref.log(f"[{now_log()}] golden-al fault: request {n}: HTTP {status}")
                self._error(int(status), f"injected fault on request {n}")
                return True
        if "reset" in kinds:
            self.ref.log(f"[{now_log()}] golden-al fault: request {n}: counters reset (simulated restart)")
            with self.ref.lock:
                self.ref.reset()
        if "upgrade" in kinds and not self.ref.config.version.endswith("+upgraded"):
            self.ref.log(f"[{now_log()}] golden-al fault: request {n}: now reporting another version")
            with self.ref.lock:
                self.ref.config.version += "+upgraded"
        return False

    def _misbehave(self, kinds: list[str], n: int) -> bool:
        """The faults that replace the answer itself; True when one did."""
        if "list" in kinds:
            self._json(200, [1, 2, 3])
        elif "redirect" in kinds:
            body = json.dumps({"usage": {"completion_tokens": 32}, "choices": [{"message": {"content": "elsewhere"}}]})
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:9/elsewhere")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())
        elif "gzip-bomb" in kinds:
            import gzip

            bomb = gzip.compress(gzip.compress(b"0" * (64 << 20), 9), 9)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip, gzip")
            self.send_header("Content-Length", str(len(bomb)))
            self.end_headers()
            self.wfile.write(bomb)
        elif "endless" in kinds or "trickle" in kinds:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            chunk = b" " * (65536 if "endless" in kinds else 1)
            try:
                for _ in range(10**9):
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    if "trickle" in kinds:
                        time.sleep(1.0)
            except (BrokenPipeError, ConnectionResetError, OSError):
                pass
            self.close_connection = True
        else:
            return False
        self.ref.log(f"[{now_log()}] golden-al fault: request {n}: {kinds}")
        return True
