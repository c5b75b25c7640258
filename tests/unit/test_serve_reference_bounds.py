"""serve-reference bounds its connections and answers every bad request with a 4xx JSON error (issue 23)."""

from __future__ import annotations

import io
import json
import socket

import pytest

from golden_al.servers.reference_server import ReferenceServer, ServeConfig
from golden_al.servers.served_engine import FakeServedEngine


@pytest.fixture
def server():
    srv = ReferenceServer(FakeServedEngine(3), ServeConfig(flavor="sglang", port=0, io_timeout_s=1.0,
                                                          max_body_bytes=1024, max_workers=4), io.StringIO())
    srv.start()
    yield srv
    srv.shutdown()


def _raw(server, data: bytes, *, read_timeout: float = 10.0) -> tuple[int, dict]:
    with socket.create_connection(("127.0.0.1", server.port), timeout=read_timeout) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            try:
                got = sock.recv(65536)
            except TimeoutError:
                break
            if not got:
                break
            chunks.append(got)
            raw = b"".join(chunks)
            head, sep, body = raw.partition(b"\r\n\r\n")
            if sep and b"content-length:" in head.lower():
                n = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                if len(body) >= n:
                    break
    raw = b"".join(chunks)
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    return status, json.loads(body) if body.strip() else {}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400),
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n[1]\n", 400),
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n\xff\xfe\x00ab", 400),
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 411),
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n{}", 413),
    (b"GARBAGE\r\n\r\n", 400),
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\n{\"messages\": 5}" + b" " * 15, 400),
])
def test_every_bad_request_gets_a_json_4xx(server, request_bytes, status):
    got, body = _raw(server, request_bytes)
    assert got == status
    assert body.get("object") == "error"


@pytest.mark.timeout(60)
def test_a_stalled_body_is_closed_after_the_io_timeout(server):
    """Content-Length promises 100 bytes, 2 arrive: the connection is answered and closed, not held."""
    got, body = _raw(server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{}")
    assert got == 408
    assert "stopped arriving" in body["message"]


@pytest.mark.timeout(60)
def test_connections_beyond_the_pool_are_refused_at_once(server):
    stalled = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(4)]
    try:
        for s in stalled:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n")  # headers never end
        got, body = _raw(server, b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (got, body["message"]) == (503, "too many connections")
    finally:
        for s in stalled:
            s.close()
