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


# ------------------------------------------------------------------ a server that misbehaves (issue 23)
def test_a_redirect_is_not_an_answer():
    """A 302 whose body claims every draft was accepted is refused, naming the location."""
    from golden_al.servers.client import RedirectError

    def handler(request):
        return httpx.Response(302, headers={"location": "http://elsewhere/v1/chat/completions"},
                              json={"usage": {"completion_tokens": 32}, "meta_info": {"spec_verify_ct": 8}})

    with pytest.raises(RedirectError, match="redirect to http://elsewhere/v1/chat/completions") as info:
        _run(handler, lambda c: c.post_json("/v1/chat/completions", {}, label="request 1"))
    assert info.value.exit_code == 2


@pytest.mark.timeout(60)
def test_an_endless_body_stops_at_the_byte_cap_without_filling_memory():
    import tracemalloc

    from golden_al.servers.client import ResponseTooLargeError

    async def endless():
        chunk = b"x" * 65536
        while True:
            yield chunk

    def handler(request):
        return httpx.Response(200, headers={"content-type": "application/json"}, content=endless())

    policy = RetryPolicy(max_attempts=3, backoff_initial_s=0.01, request_timeout_s=30, max_response_bytes=2 << 20)
    tracemalloc.start()
    with pytest.raises(ResponseTooLargeError, match="more than 2,097,152 bytes"):
        _run(handler, lambda c: c.get_json("/metrics"), policy=policy)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 16 << 20  # the cap, its chunks and the interpreter's own; never the endless body


def test_an_announced_huge_body_is_refused_before_reading():
    from golden_al.servers.client import ResponseTooLargeError

    def handler(request):
        return httpx.Response(200, headers={"content-length": str(1 << 40), "content-type": "application/json"},
                              content=b"{}")

    with pytest.raises(ResponseTooLargeError, match="announced"):
        _run(handler, lambda c: c.get_json("/server_info"))


@pytest.mark.timeout(60)
def test_a_server_that_sends_one_byte_a_second_is_bounded_by_the_whole_exchange():
    """--request-timeout bounds connect, headers and body together, not each read."""
    async def trickle():
        for _ in range(10_000):
            await asyncio.sleep(0.2)
            yield b" "

    def handler(request):
        return httpx.Response(200, headers={"content-type": "application/json"}, content=trickle())

    policy = RetryPolicy(max_attempts=2, backoff_initial_s=0.01, request_timeout_s=1.0)
    with pytest.raises(RequestFailedError, match="timed out: no complete answer within 1 s") as info:
        _run(handler, lambda c: c.post_json("/v1/chat/completions", {}, label="request 2"), policy=policy)
    assert info.value.errors[0].startswith("attempt 1")


@pytest.mark.parametrize(("content_type", "body", "said"), [
    ("application/json", b"[1, 2]", "answered a JSON list"),
    ("text/html", b"<html>login</html>", r"answered non-JSON \(text/html\)"),
])
def test_a_reply_of_the_wrong_shape_is_a_named_error(content_type, body, said):
    from golden_al.servers.client import ServerReplyError

    def handler(request):
        return httpx.Response(200, headers={"content-type": content_type}, content=body)

    with pytest.raises(ServerReplyError, match=said) as info:
        _run(handler, lambda c: c.post_json("/v1/chat/completions", {}, label="request 1"))
    assert info.value.exit_code == 2


def test_metrics_that_are_json_are_refused():
    from golden_al.servers.client import ServerReplyError

    def handler(request):
        return httpx.Response(200, json={"not": "prometheus"})

    with pytest.raises(ServerReplyError, match="not a text exposition"):
        _run(handler, lambda c: c.get_text("/metrics"))
