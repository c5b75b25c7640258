"""Several --server replicas as one cell, refusals of disagreeing replicas, and a router in front of them.

Real HTTP throughout: in-process serve-reference servers (fake engine) and a small
round-robin router; the CLI runs in process.
"""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from _inproc import server_factory

from golden_al.cli.main import main
from golden_al.errors import ServerError, UsageError
from golden_al.plugin.facts import ServerFacts
from golden_al.servers.replicas import check_replicas_agree, shard

K = 3


@pytest.fixture
def servers():
    yield from server_factory()


class _Router:
    """Round-robin POSTs over ``backends``; GETs go to the first (like a gateway's passthrough)."""

    def __init__(self, backends: list[str]):
        turn = itertools.cycle(range(len(backends)))
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def _relay(self, method: str, url: str, body: bytes | None) -> None:
                r = httpx.request(method, url + self.path, content=body, timeout=30,
                                  headers={"Content-Type": "application/json"})
                self.send_response(r.status_code)
                self.send_header("Content-Type", r.headers.get("content-type", "application/json"))
                self.send_header("Content-Length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            def do_GET(self):
                self._relay("GET", backends[0], None)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    i = next(turn)
                self._relay("POST", backends[i], body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _prompts(tmp_path: Path, n: int = 8) -> Path:
    p = tmp_path / "prompts.jsonl"
    p.write_text("".join(json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": f"Write function {i}."}]})
                         + "\n" for i in range(n)))
    return p


def _measure(capsys, engine: str, urls: list[str], out: Path, prompts: Path, *extra: str) -> tuple[int, str]:
    args = ["measure", "--engine", engine, "--draft-len", str(K), "--prompts", f"chat-jsonl:{prompts}",
            "--max-tokens", "48", "--retries", "1", "--backoff", "0.05", "--out", str(out), *extra]
    for u in urls:
        args += ["--server", u]
    code = main(args)
    _o, err = capsys.readouterr()
    return code, err


def _record(out: Path) -> dict:
    return json.loads((out / "measurement.json").read_text())


def _totals(rec: dict) -> tuple:
    return rec["num_requests"], rec["num_verify_steps"], rec["num_accepted_drafts"], tuple(rec["histogram"])


@pytest.mark.parametrize(("engine", "extra"), [("sglang", ()), ("vllm", ("--concurrency", "2"))])
def test_two_replicas_make_one_record_with_per_server_counts(servers, tmp_path, capsys, engine, extra):
    prompts = _prompts(tmp_path)
    one = servers(engine)
    code, err = _measure(capsys, engine, [one.url], tmp_path / "single", prompts, *extra)
    assert code == 0, err
    a, b = servers(engine), servers(engine)
    if engine == "vllm":  # attached vLLM replicas report no configuration without their logs: refused by default
        code, err = _measure(capsys, engine, [a.url, b.url], tmp_path / "refused", prompts, *extra)
        assert code == 1
        assert "cannot tell whether the replicas are one configuration" in err
        extra = (*extra, "--assume-identical-replicas")
    code, err = _measure(capsys, engine, [a.url, b.url], tmp_path / "dp", prompts, *extra)
    assert code == 0, err
    single, dp = _record(tmp_path / "single"), _record(tmp_path / "dp")
    if engine == "vllm":
        assert any("assumed identical (--assume-identical-replicas)" in w for w in dp["warnings"])
    assert _totals(dp) == _totals(single)  # the fake engine is deterministic per prompt
    shares = dp["per_server"]
    assert [s["url"] for s in shares] == [a.url, b.url]
    assert [s["num_requests"] for s in shares] == [4, 4]  # prompt i on replica i mod 2
    assert sum(s["num_verify_steps"] for s in shares) == dp["num_verify_steps"]
    assert sum(s["num_accepted_drafts"] for s in shares) == dp["num_accepted_drafts"]
    assert [sum(col) for col in zip(*(s["histogram"] for s in shares), strict=True)] == dp["histogram"]
    assert single.get("per_server") is None


def test_replicas_that_disagree_are_refused(servers, tmp_path, capsys):
    prompts = _prompts(tmp_path)
    a, b = servers("sglang"), servers("sglang", algorithm="eagle")
    code, err = _measure(capsys, "sglang", [a.url, b.url], tmp_path / "out", prompts)
    assert code != 0
    assert "not one configuration" in err
    assert "speculative_algorithm" in err
    assert not (tmp_path / "out" / "measurement.json").exists()


def test_a_router_in_front_of_replicas_works_with_a_per_request_source(servers, tmp_path, capsys):
    prompts = _prompts(tmp_path)
    one = servers("sglang")
    assert _measure(capsys, "sglang", [one.url], tmp_path / "single", prompts, "--concurrency", "4")[0] == 0
    a, b = servers("sglang"), servers("sglang")
    router = _Router([a.url, b.url])
    try:
        code, err = _measure(capsys, "sglang", [router.url], tmp_path / "routed", prompts, "--concurrency", "4")
    finally:
        router.close()
    assert code == 0, err
    assert _totals(_record(tmp_path / "routed")) == _totals(_record(tmp_path / "single"))
    assert a.srv.next_request_number() > 1  # both replicas served
    assert b.srv.next_request_number() > 1


def _facts(**kw) -> ServerFacts:
    base = {"engine": "sglang", "version": "0.5.23", "models": ["m"], "draft_len": 3, "draft_method": "eagle",
            "chain": True, "server_args": {"speculative_num_steps": 3, "port": 30000, "model_path": "/m"}}
    base.update(kw)
    return ServerFacts(**base)  # type: ignore[arg-type]


def test_agreement_ignores_placement_and_names_each_difference():
    check_replicas_agree(["u1", "u2"], [_facts(), _facts(server_args={"speculative_num_steps": 3, "port": 30001,
                                                                       "model_path": "/m"})])
    with pytest.raises(ServerError, match=r"u2 version '0.5.22' vs '0.5.23'.*u2 draft length 4 vs 3"):
        check_replicas_agree(["u1", "u2"], [_facts(), _facts(version="0.5.22", draft_len=4)])
    with pytest.raises(ServerError, match="SGLANG_SIMULATE_ACC_LEN"):
        check_replicas_agree(["u1", "u2"], [_facts(), _facts(server_args={
            "speculative_num_steps": 3, "port": 1, "model_path": "/m", "environ": {"SGLANG_SIMULATE_ACC_LEN": "2"}})])
    with pytest.raises(UsageError, match="twice"):
        check_replicas_agree(["u1", "u1"], [_facts(), _facts()])


def test_shard_is_by_index_mod_n():
    class P:
        def __init__(self, i: int):
            self.index = i

    parts = shard([P(i) for i in (0, 1, 2, 3, 5, 8)], 3)
    assert [[p.index for p in part] for part in parts] == [[0, 3], [1], [2, 5, 8]]


@pytest.mark.parametrize(("per_request", "expected"), [("summary", "vllm-per-request"), (None, "vllm-prometheus")])
def test_auto_prefers_a_per_request_source_when_the_server_offers_one(servers, tmp_path, capsys, per_request,
                                                                     expected):
    prompts = _prompts(tmp_path, 4)
    s = servers("vllm", per_request_metrics=per_request)
    code, err = _measure(capsys, "vllm", [s.url], tmp_path / "out", prompts, "--concurrency", "2")
    assert code == 0, err
    assert _record(tmp_path / "out")["al_source"] == expected
    assert ("per-request spec-decode metrics" in err) == (per_request is not None)


def test_pipeline_options_through_the_cli(servers, tmp_path, capsys):
    prompts = _prompts(tmp_path, 6)
    s = servers("vllm")
    code, err = _measure(capsys, "vllm", [s.url], tmp_path / "out", prompts, "--concurrency", "3", "--request-rate",
                         "40", "--warmup", "2", "--scrape-interval", "0.05", "--seed", "3")
    assert code == 0, err
    rec = _record(tmp_path / "out")
    assert rec["num_requests"] == 6
    assert any("batch means" in w for w in rec["warnings"])
    # 6 measured, 2 warmup, 1 auto-source probe (does vLLM return per-request metrics?), 1 this call's own count
    assert s.srv.next_request_number() == 6 + 2 + 1 + 1
    for bad in (["--request-rate", "0"], ["--warmup", "-1"], ["--scrape-interval", "0"], ["--concurrency", "0"]):
        code, err = _measure(capsys, "vllm", [s.url], tmp_path / "bad", prompts, *bad)
        assert code == 2, bad
        assert bad[0] in err
