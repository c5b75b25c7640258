"""The async client: bounded retries with backoff on 5xx/timeouts, never a silent drop."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from golden_al.httpclient import (
    RequestFailedError,
    ResponseTooLargeError,
    RetryPolicy,
    ServerClient,
    ServerReplyError,
)

pytestmark = pytest.mark.hostile

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
    from golden_al.httpclient import RedirectError

    def handler(request):
        return httpx.Response(302, headers={"location": "http://elsewhere/v1/chat/completions"},
                              json={"usage": {"completion_tokens": 32}, "meta_info": {"spec_verify_ct": 8}})

    with pytest.raises(RedirectError, match="redirect to http://elsewhere/v1/chat/completions") as info:
        _run(handler, lambda c: c.post_json("/v1/chat/completions", {}, label="request 1"))
    assert info.value.exit_code == 2


@pytest.mark.timeout(60)
def test_an_endless_body_stops_at_the_byte_cap_without_filling_memory():
    import tracemalloc

    from golden_al.httpclient import ResponseTooLargeError

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
    from golden_al.httpclient import ResponseTooLargeError

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
    from golden_al.httpclient import ServerReplyError

    def handler(request):
        return httpx.Response(200, headers={"content-type": content_type}, content=body)

    with pytest.raises(ServerReplyError, match=said) as info:
        _run(handler, lambda c: c.post_json("/v1/chat/completions", {}, label="request 1"))
    assert info.value.exit_code == 2


def test_metrics_that_are_json_are_refused():
    from golden_al.httpclient import ServerReplyError

    def handler(request):
        return httpx.Response(200, json={"not": "prometheus"})

    with pytest.raises(ServerReplyError, match="not a text exposition"):
        _run(handler, lambda c: c.get_text("/metrics"))


# ---------------------------------------------------------------------------- bounded inflation
class _Chunks(httpx.AsyncByteStream):
    """A streamed body (as a real transport gives it: read by golden-al, not by httpx beforehand)."""

    def __init__(self, data: bytes, size: int = 4096) -> None:
        self.data, self.size = data, size

    async def __aiter__(self):
        for i in range(0, len(self.data), self.size):
            yield self.data[i:i + self.size]


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, compresslevel=9)


def _streamed(body: bytes, encoding: str | None, seen: list | None = None):
    def handler(request):
        if seen is not None:
            seen.append(request.headers.get("accept-encoding"))
        headers = {"content-type": "application/json"}
        if encoding:
            headers["content-encoding"] = encoding
        return httpx.Response(200, headers=headers, stream=_Chunks(body))

    return handler


def test_a_gzip_gzip_bomb_stops_at_the_cap_without_inflating_it():
    """64 MiB of zeros, gzipped twice, is ~1 KB on the wire: each layer is bounded, so memory stays small."""
    import tracemalloc

    bomb = _gzip(_gzip(b"0" * (64 << 20)))
    assert len(bomb) < 16_000
    cap = 1 << 20
    policy = RetryPolicy(max_attempts=1, request_timeout_s=30, max_response_bytes=cap)
    tracemalloc.start()
    try:
        with pytest.raises(ResponseTooLargeError, match=r"inflates \(gzip\) to more than 1,048,576 bytes"):
            _run(_streamed(bomb, "gzip, gzip"), lambda c: c.post_json("/v1/chat/completions", {}, label="req"),
                 policy=policy)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 12 * cap, f"peak {peak:,} bytes while refusing a {cap:,}-byte cap"


@pytest.mark.parametrize(("encoding", "encode"), [
    ("gzip", _gzip),
    ("gzip, gzip", lambda b: _gzip(_gzip(b))),
    ("deflate", lambda b: __import__("zlib").compress(b)),
    ("deflate", lambda b: __import__("zlib").compress(b)[2:-4]),  # raw deflate, as some servers send it
    ("identity", lambda b: b),
    ("gzip", lambda b: _gzip(b[:10]) + _gzip(b[10:])),  # concatenated gzip members
])
def test_a_compressed_answer_within_the_cap_is_read(encoding, encode):
    body = json.dumps({"choices": [{"text": "x" * 5000}], "usage": {"completion_tokens": 7}}).encode()
    seen: list = []
    out = _run(_streamed(encode(body), encoding, seen),
               lambda c: c.post_json("/v1/chat/completions", {}, label="req"))
    assert out["usage"]["completion_tokens"] == 7
    assert len(out["choices"][0]["text"]) == 5000
    assert seen == ["gzip, deflate"]  # golden-al asks only for what it inflates itself


@pytest.mark.parametrize(("encoding", "body", "match"), [
    ("br", b"\x00\x01", "Content-Encoding 'br', which golden-al did not ask for"),
    ("gzip", b"not gzip at all", "declared Content-Encoding gzip but its body does not inflate"),
    ("gzip", None, "ends before its compressed stream does"),
])
def test_a_body_that_does_not_inflate_as_declared_is_refused(encoding, body, match):
    if body is None:
        body = _gzip(b'{"a": 1}' * 100)[:-12]  # cut short
    with pytest.raises(ServerReplyError, match=match):
        _run(_streamed(body, encoding), lambda c: c.post_json("/v1/chat/completions", {}, label="req"))


def test_a_json_answer_with_a_duplicate_key_is_refused():
    """{"usage": {...honest...}, "usage": {...}}: which one counts is undefined, so neither is read."""
    body = b'{"choices": [], "usage": {"completion_tokens": 9}, "usage": {"completion_tokens": 3}}'
    with pytest.raises(ServerReplyError, match="the key 'usage' twice"):
        _run(_streamed(body, None), lambda c: c.post_json("/v1/chat/completions", {}, label="req"))


@pytest.mark.parametrize("call", ["get_text", "get_json"])
def test_a_probe_never_outlasts_the_request_timeout(call):
    """/metrics and the other probes had a fixed 60 s deadline: a slow one held a run at --request-timeout 5."""
    async def slow(request):
        await asyncio.sleep(30)
        return httpx.Response(200, text="never")

    policy = RetryPolicy(max_attempts=1, request_timeout_s=0.2)
    with pytest.raises(RequestFailedError, match=r"no complete answer within 0.2 s"):
        _run(slow, lambda c: getattr(c, call)("/metrics", label="GET /metrics"), policy=policy)
