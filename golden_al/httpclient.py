"""One bounded async client for every engine's OpenAI-compatible server.

Every exchange is bounded (a server is never trusted to end its answer):

* **time**: ``request_timeout_s`` bounds the *whole* exchange (connect, headers and the body to
  its last byte), not each read; probes, ``/metrics`` and ``/server_info`` take their own total
  deadline (``timeout_s``), never longer than ``request_timeout_s``;
* **bytes**: the body is read as a stream and the exchange stops at ``max_response_bytes``
  (:class:`ResponseTooLargeError`), so an endless body never reaches memory. The cap holds inside
  decompression: golden-al asks for ``gzip`` or ``deflate`` only and inflates every layer of a
  ``Content-Encoding`` chain itself, each call bounded by what is left of the cap, so a small
  compressed body (a bomb, or ``gzip, gzip`` of one) stops at the cap, not at the machine's memory;
  any other encoding is refused;
* **meaning**: a 3xx is not an answer (:class:`RedirectError`, naming the location; redirects are
  never followed); a JSON endpoint must answer ``application/json`` (or no content type) with a JSON
  object without duplicate keys (which would hide a value), a text endpoint must not answer JSON or
  HTML (:class:`ServerReplyError`).

Requests are retried on HTTP 5xx, on timeouts and on transport errors (refused or reset
connections), with exponential backoff (``initial * 2**(attempt-1)``, capped), up to
``max_attempts`` attempts. A 4xx, a redirect, an over-long or misshapen reply is not retried: it is
the server's or the request's fault, and retrying cannot change it. A request that still fails
raises :class:`RequestFailedError` naming the request and every attempt's error; nothing is
silently dropped.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from golden_al.errors import ServerError
from golden_al.safeio import duplicate_key_of, no_duplicate_keys

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "RedirectError", "RequestFailedError", "ResponseTooLargeError",
           "RetryPolicy", "ServerClient", "ServerReplyError"]

#: The default byte cap of one answer: 64 MiB, far above any real completion (a 32k-token answer with
#: per-step arrays is a few MB) and far below what would hurt this machine.
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class RetryPolicy:
    """Retries, deadlines and the byte cap of one request."""

    max_attempts: int = 4
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 30.0
    request_timeout_s: float = 1800.0  #: the whole exchange of one attempt
    connect_timeout_s: float = 10.0
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return min(self.backoff_max_s, self.backoff_initial_s * (2 ** (attempt - 1)))


class ServerReplyError(ServerError):
    """The server answered something its engine does not answer (a redirect, a body over the cap, a
    content type or JSON shape the endpoint never has). Bad input: exit 2."""

    exit_code = 2


class RedirectError(ServerReplyError):
    """A 3xx answer: golden-al does not follow redirects (a redirect is not a measurement)."""


class ResponseTooLargeError(ServerReplyError):
    """The body passed ``max_response_bytes`` while it was read."""


class RequestFailedError(ServerError):
    """A request failed on every attempt (or with a non-retryable answer)."""

    def __init__(self, label: str, errors: list[str], *, hint: str | None = None, retryable: bool = True) -> None:
        self.label = label
        self.errors = errors
        self.retryable = retryable
        n = len(errors)
        super().__init__(
            f"{label} failed after {n} attempt{'s' if n != 1 else ''}: " + "; ".join(errors),
            hint=hint or "finished requests are kept; fix the server and rerun with --resume",
        )


#: the encodings golden-al asks for (``Accept-Encoding``) and inflates itself, bounded
ACCEPTED_ENCODINGS = ("gzip", "deflate")


class _Inflate:
    """One ``Content-Encoding`` layer, inflated with every call bounded by what is left of the cap."""

    def __init__(self, name: str, label: str, path: str, cap: int) -> None:
        self.name, self.label, self.path, self.cap = name, label, path, cap
        self.out = 0
        self.raw_deflate = False  # deflate: zlib-wrapped as the RFC says, raw as some servers send it
        self._new()

    def _new(self) -> None:
        if self.name == "gzip":
            self.obj = zlib.decompressobj(16 + zlib.MAX_WBITS)
        else:
            self.obj = zlib.decompressobj(-zlib.MAX_WBITS if self.raw_deflate else zlib.MAX_WBITS)

    def _over(self) -> ResponseTooLargeError:
        return ResponseTooLargeError(f"{self.label}: {self.path} inflates ({self.name}) to more than {self.cap:,} "
                                     "bytes; stopped inflating", hint="raise --max-response-bytes if such an answer is real")

    def feed(self, data: bytes) -> bytes:
        """Inflate ``data``; at most ``cap + 1`` bytes ever leave this layer."""
        pieces: list[bytes] = []
        while data:
            try:
                piece = self.obj.decompress(data, self.cap - self.out + 1)
            except zlib.error as exc:
                if self.name == "deflate" and not self.raw_deflate and self.out == 0:
                    self.raw_deflate = True
                    self._new()
                    continue
                raise ServerReplyError(f"{self.label}: {self.path} declared Content-Encoding {self.name} but its "
                                       f"body does not inflate: {exc}") from None
            self.out += len(piece)
            if self.out > self.cap:
                raise self._over()
            pieces.append(piece)
            data = self.obj.unconsumed_tail
            if self.obj.eof and self.obj.unused_data:  # concatenated gzip members
                data = self.obj.unused_data
                self._new()
        return b"".join(pieces)

    def finish(self) -> bytes:
        """What the layer still holds; a body cut short of its end is refused."""
        tail = self.obj.flush()
        self.out += len(tail)
        if self.out > self.cap:
            raise self._over()
        if not self.obj.eof:
            raise ServerReplyError(f"{self.label}: {self.path} {self.name} body ends before its compressed stream "
                                   "does (cut short)")
        return tail


def _content_codings(header: str, label: str, path: str) -> list[str]:
    """The codings of a ``Content-Encoding`` header in the order they were applied; others refused."""
    codings = [c.strip().lower() for c in header.split(",") if c.strip() and c.strip().lower() != "identity"]
    for c in codings:
        if c not in ACCEPTED_ENCODINGS:
            raise ServerReplyError(f"{label}: {path} answered Content-Encoding {c!r}, which golden-al did not ask "
                                   f"for (Accept-Encoding: {', '.join(ACCEPTED_ENCODINGS)})")
    return codings


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass(frozen=True)
class _Reply:
    """One answer: status, headers and the (capped) body."""

    status: int
    headers: httpx.Headers
    body: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class ServerClient:
    """``async with ServerClient(url) as c: await c.post_json("/v1/chat/completions", ...)``."""

    def __init__(self, base_url: str, *, policy: RetryPolicy | None = None, api_key: str | None = None,
                 on_retry: Callable[[str], None] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, max_connections: int = 64) -> None:
        self.base_url = base_url.rstrip("/")
        self.policy = policy or RetryPolicy()
        self.on_retry = on_retry
        headers = {"Accept-Encoding": ", ".join(ACCEPTED_ENCODINGS)}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(self.policy.request_timeout_s, connect=self.policy.connect_timeout_s),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            transport=transport,
            follow_redirects=False,
        )

    async def __aenter__(self) -> ServerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def _exchange(self, method: str, path: str, json_body: Any, timeout: Any, label: str) -> _Reply:
        """One attempt: the status, headers and body, read as a stream up to the byte cap."""
        cap = self.policy.max_response_bytes
        async with self._client.stream(method, path, json=json_body, timeout=timeout) as resp:
            declared = resp.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > cap:
                raise ResponseTooLargeError(f"{label}: {path} announced {int(declared):,} bytes, over the "
                                            f"{cap:,}-byte cap", hint="raise --max-response-bytes if it is real")
            if resp.is_stream_consumed:  # an in-memory answer (httpx.MockTransport) httpx has already read
                if len(resp.content) > cap:
                    raise ResponseTooLargeError(f"{label}: {path} sent more than {cap:,} bytes")
                return _Reply(resp.status_code, resp.headers, resp.content)
            # the last coding applied is the first undone; each layer is bounded by the cap
            layers = [_Inflate(c, label, path, cap)
                      for c in reversed(_content_codings(resp.headers.get("content-encoding", ""), label, path))]
            chunks: list[bytes] = []
            size = 0

            def take(data: bytes) -> None:
                nonlocal size
                size += len(data)
                if size > cap:
                    raise ResponseTooLargeError(f"{label}: {path} sent more than {cap:,} bytes; stopped reading",
                                                hint="raise --max-response-bytes if such an answer is real")
                chunks.append(data)

            raw_size = 0
            async for raw in resp.aiter_raw():
                raw_size += len(raw)
                if raw_size > cap:
                    raise ResponseTooLargeError(f"{label}: {path} sent more than {cap:,} bytes; stopped reading",
                                                hint="raise --max-response-bytes if such an answer is real")
                data = raw
                for layer in layers:
                    data = layer.feed(data)
                if data:
                    take(data)
            for i, layer in enumerate(layers):
                data = layer.finish()
                for later in layers[i + 1:]:
                    data = later.feed(data)
                if data:
                    take(data)
            return _Reply(resp.status_code, resp.headers, b"".join(chunks))

    async def _request(self, method: str, path: str, *, label: str, json_body: Any = None,
                       retry: bool = True, timeout_s: float | None = None, ok_404: bool = False) -> _Reply | None:
        errors: list[str] = []
        attempts = self.policy.max_attempts if retry else 1
        # a probe's own deadline never outlasts the run's --request-timeout
        total = self.policy.request_timeout_s if timeout_s is None else min(timeout_s, self.policy.request_timeout_s)
        timeout = httpx.Timeout(total, connect=min(self.policy.connect_timeout_s, total))
        for attempt in range(1, attempts + 1):
            try:
                reply = await asyncio.wait_for(self._exchange(method, path, json_body, timeout, label), total)
            except (asyncio.TimeoutError, httpx.TimeoutException):
                errors.append(f"attempt {attempt}: timed out: no complete answer within {total:g} s")
            except httpx.TransportError as exc:
                errors.append(f"attempt {attempt}: {type(exc).__name__}: {_short(str(exc)) or 'transport error'}")
            else:
                if 300 <= reply.status < 400:
                    where = reply.headers.get("location") or "(no location given)"
                    raise RedirectError(f"{label} ({method} {path}): HTTP {reply.status} redirect to {where}; a "
                                        "redirect is not an answer and is never followed",
                                        hint="point --server at the engine itself (scheme, host, port, no proxy)")
                if reply.status < 300:
                    return reply
                if reply.status == 404 and ok_404:
                    return None
                errors.append(f"attempt {attempt}: HTTP {reply.status} {_short(reply.text())}")
                if reply.status < 500:
                    raise RequestFailedError(f"{label} ({method} {path})", errors, retryable=False,
                                             hint="the server rejected the request itself; not retried")
            if attempt < attempts:
                if self.on_retry is not None:
                    self.on_retry(f"{label}: {errors[-1]}; retrying in {self.policy.delay(attempt):g} s")
                await asyncio.sleep(self.policy.delay(attempt))
        raise RequestFailedError(f"{label} ({method} {path})", errors)

    async def post_json(self, path: str, payload: Any, *, label: str, retry: bool = True) -> dict[str, Any]:
        """POST JSON, return the JSON object answered (retrying per the policy)."""
        reply = await self._request("POST", path, label=label, json_body=payload, retry=retry)
        assert reply is not None
        obj = self._json(reply, label, path)
        if not isinstance(obj, dict):
            raise ServerReplyError(f"{label}: {path} answered a JSON {type(obj).__name__}, not the object every "
                                   "engine answers", hint="is --server the engine's own address?")
        return obj

    async def get_json(self, path: str, *, label: str | None = None, retry: bool = True,
                       optional: bool = False, timeout_s: float | None = 60.0) -> Any:
        """GET JSON (a total deadline of ``timeout_s``). With ``optional`` a 404 returns None."""
        reply = await self._request("GET", path, label=label or f"GET {path}", retry=retry,
                                    timeout_s=timeout_s, ok_404=optional)
        if reply is None:
            return None
        return self._json(reply, label or "GET", path)

    async def get_text(self, path: str, *, label: str | None = None, retry: bool = True,
                       optional: bool = False, timeout_s: float | None = 60.0) -> str | None:
        """GET text (e.g. Prometheus ``/metrics``, a total deadline of ``timeout_s``). With ``optional``
        a 404 returns None. JSON or HTML is not a text exposition: :class:`ServerReplyError`."""
        reply = await self._request("GET", path, label=label or f"GET {path}", retry=retry,
                                    timeout_s=timeout_s, ok_404=optional)
        if reply is None:
            return None
        if reply.content_type in ("application/json", "text/html"):
            raise ServerReplyError(f"{label or 'GET'}: {path} answered {reply.content_type}, not a text exposition: "
                                   f"{_short(reply.text(), 120)}")
        return reply.text()

    @staticmethod
    def _json(reply: _Reply, label: str, path: str) -> Any:
        kind = reply.content_type
        if kind and kind != "application/json" and not kind.endswith("+json"):
            raise ServerReplyError(f"{label}: {path} answered non-JSON ({kind}): {_short(reply.text(), 120)}",
                                   hint="is --server the engine's own address (not a proxy or login page)?")
        try:
            return json.loads(reply.body, object_pairs_hook=no_duplicate_keys)
        except (ValueError, RecursionError) as exc:
            if (key := duplicate_key_of(exc)) is not None:
                raise ServerReplyError(f"{label}: {path} answered a JSON object with the key {key!r} twice; which "
                                       "value counts is not defined, so neither is taken") from None
            raise ServerReplyError(f"{label}: {path} answered non-JSON: {_short(reply.text(), 120)}") from None
