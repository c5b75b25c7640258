"""One bounded async client for every engine's OpenAI-compatible server.

Every exchange is bounded (a server is never trusted to end its answer):

* **time**: ``request_timeout_s`` bounds the *whole* exchange (connect, headers and the body to
  its last byte), not each read; probes, ``/metrics`` and ``/server_info`` take their own total
  deadline (``timeout_s``);
* **bytes**: the body is read as a stream and the exchange stops at ``max_response_bytes``
  (:class:`ResponseTooLargeError`), so an endless body never reaches memory;
* **meaning**: a 3xx is not an answer (:class:`RedirectError`, naming the location; redirects are
  never followed); a JSON endpoint must answer ``application/json`` (or no content type) with a JSON
  object, a text endpoint must not answer JSON or HTML (:class:`ServerReplyError`).

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from golden_al.errors import ServerError

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
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
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
            chunks: list[bytes] = []
            size = 0
            async for chunk in resp.aiter_bytes():
                size += len(chunk)
                if size > cap:
                    raise ResponseTooLargeError(f"{label}: {path} sent more than {cap:,} bytes; stopped reading",
                                                hint="raise --max-response-bytes if such an answer is real")
                chunks.append(chunk)
            return _Reply(resp.status_code, resp.headers, b"".join(chunks))

    async def _request(self, method: str, path: str, *, label: str, json_body: Any = None,
                       retry: bool = True, timeout_s: float | None = None, ok_404: bool = False) -> _Reply | None:
        errors: list[str] = []
        attempts = self.policy.max_attempts if retry else 1
        total = self.policy.request_timeout_s if timeout_s is None else timeout_s
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
            return json.loads(reply.body)
        except (ValueError, RecursionError):
            raise ServerReplyError(f"{label}: {path} answered non-JSON: {_short(reply.text(), 120)}") from None
