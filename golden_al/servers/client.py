"""An async client for OpenAI-compatible servers, with bounded retries.

Requests are retried on HTTP 5xx, on timeouts and on transport errors (refused or
reset connections), with exponential backoff (``initial * 2**(attempt-1)``,
capped), up to ``max_attempts`` attempts. A 4xx answer is not retried: it means
the request itself is wrong. A request that still fails raises
:class:`RequestFailedError` naming the request and every attempt's error; nothing
is silently dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from golden_al.errors import ServerError

__all__ = ["RequestFailedError", "RetryPolicy", "ServerClient"]


@dataclass(frozen=True)
class RetryPolicy:
    """Retries and timeouts for one request."""

    max_attempts: int = 4
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 30.0
    request_timeout_s: float = 1800.0
    connect_timeout_s: float = 10.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return min(self.backoff_max_s, self.backoff_initial_s * (2 ** (attempt - 1)))


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
        )

    async def __aenter__(self) -> ServerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def _request(self, method: str, path: str, *, label: str, json_body: Any = None,
                       retry: bool = True, timeout_s: float | None = None, ok_404: bool = False) -> httpx.Response | None:
        errors: list[str] = []
        attempts = self.policy.max_attempts if retry else 1
        timeout = httpx.USE_CLIENT_DEFAULT if timeout_s is None else httpx.Timeout(timeout_s, connect=self.policy.connect_timeout_s)
        for attempt in range(1, attempts + 1):
            try:
                resp = await self._client.request(method, path, json=json_body, timeout=timeout)
            except httpx.TimeoutException as exc:
                errors.append(f"attempt {attempt}: timed out ({type(exc).__name__})")
            except httpx.TransportError as exc:
                errors.append(f"attempt {attempt}: {type(exc).__name__}: {_short(str(exc)) or 'transport error'}")
            else:
                if resp.status_code < 400:
                    return resp
                if resp.status_code == 404 and ok_404:
                    return None
                body = _short(resp.text)
                errors.append(f"attempt {attempt}: HTTP {resp.status_code} {body}")
                if resp.status_code < 500:
                    raise RequestFailedError(f"{label} ({method} {path})", errors, retryable=False,
                                             hint="the server rejected the request itself; not retried")
            if attempt < attempts:
                if self.on_retry is not None:
                    self.on_retry(f"{label}: {errors[-1]}; retrying in {self.policy.delay(attempt):g} s")
                await asyncio.sleep(self.policy.delay(attempt))
        raise RequestFailedError(f"{label} ({method} {path})", errors)

    async def post_json(self, path: str, payload: Any, *, label: str, retry: bool = True) -> dict[str, Any]:
        """POST JSON, return the JSON object answered (retrying per the policy)."""
        resp = await self._request("POST", path, label=label, json_body=payload, retry=retry)
        assert resp is not None
        return self._json(resp, label, path)

    async def get_json(self, path: str, *, label: str | None = None, retry: bool = True,
                       optional: bool = False, timeout_s: float | None = 60.0) -> Any:
        """GET JSON. With ``optional`` a 404 returns None (the route does not exist)."""
        resp = await self._request("GET", path, label=label or f"GET {path}", retry=retry,
                                   timeout_s=timeout_s, ok_404=optional)
        if resp is None:
            return None
        return self._json(resp, label or "GET", path)

    async def get_text(self, path: str, *, label: str | None = None, retry: bool = True,
                       optional: bool = False, timeout_s: float | None = 60.0) -> str | None:
        """GET text (e.g. Prometheus ``/metrics``). With ``optional`` a 404 returns None."""
        resp = await self._request("GET", path, label=label or f"GET {path}", retry=retry,
                                   timeout_s=timeout_s, ok_404=optional)
        return None if resp is None else resp.text

    @staticmethod
    def _json(resp: httpx.Response, label: str, path: str) -> Any:
        try:
            return resp.json()
        except ValueError:
            raise ServerError(f"{label}: {path} answered non-JSON: {_short(resp.text)}") from None
