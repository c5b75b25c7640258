"""The async client: bounded retries with backoff on 5xx/timeouts, never a silent drop."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from golden_al.servers.client import RequestFailedError, RetryPolicy, ServerClient

FAST = RetryPolicy(max_attempts=3, backoff_initial_s=0.01, backoff_max_s=0.02, request_timeout_s=5)


def _run(handler, coro_fn, policy=FAST, notes=None):
    async def main():
        async with ServerClient("http://test", policy=policy, transport=httpx.MockTransport(handler),
                                on_retry=(notes.append if notes is not None else None)) as c:
            return await coro_fn(c)

    return asyncio.run(main())


def test_retries_5xx_then_succeeds():
    calls = []

    def handler(request):
        calls.append(request)
        if len(calls) < 3:
            return httpx.Response(503, text="overloaded")
        return httpx.Response(200, json={"ok": True})

    notes: list[str] = []
    out = _run(handler, lambda c: c.post_json("/v1/chat/completions", {"a": 1}, label="request 7"), notes=notes)
    assert out == {"ok": True}
    assert len(calls) == 3
    assert len(notes) == 2
    assert "request 7" in notes[0]
    assert "HTTP 503" in notes[0]


def test_exhausted_retries_name_the_request_and_every_attempt():
    def handler(request):
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(RequestFailedError) as info:
        _run(handler, lambda c: c.post_json("/v1/chat/completions", {}, label="request 3 (k=2)"))
    msg = str(info.value)
    assert "request 3 (k=2)" in msg
    assert "failed after 3 attempts" in msg
    assert msg.count("timed out") == 3
    assert info.value.retryable


def test_4xx_is_not_retried():
    calls = []

    def handler(request):
        calls.append(1)
        return httpx.Response(400, json={"message": "bad model"})

    with pytest.raises(RequestFailedError, match="HTTP 400") as info:
        _run(handler, lambda c: c.post_json("/x", {}, label="r"))
    assert len(calls) == 1
    assert not info.value.retryable


def test_connection_errors_are_retried():
    calls = []

    def handler(request):
        calls.append(1)
        if len(calls) == 1:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json={})

    assert _run(handler, lambda c: c.post_json("/x", {}, label="r")) == {}
    assert len(calls) == 2


def test_optional_404_and_non_json():
    def handler(request):
        if request.url.path == "/server_info":
            return httpx.Response(404)
        return httpx.Response(200, text="not json")

    assert _run(handler, lambda c: c.get_json("/server_info", optional=True)) is None
    from golden_al.errors import ServerError

    with pytest.raises(ServerError, match="non-JSON"):
        _run(handler, lambda c: c.get_json("/version"))


def test_backoff_is_exponential_and_capped():
    p = RetryPolicy(backoff_initial_s=1, backoff_max_s=5)
    assert [p.delay(i) for i in range(1, 6)] == [1, 2, 4, 5, 5]
