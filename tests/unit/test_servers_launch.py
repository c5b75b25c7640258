"""Launch commands per engine, and the managed server process (readiness, log, always stopped)."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from golden_al.errors import ServerError, SyntheticAcceptanceActiveError, UsageError
from golden_al.servers.launch import (
    LaunchSpec,
    ManagedServer,
    build_command,
    free_port,
    relevant_env,
    shell_line,
)


def _flags(cmd: list[str], start: int) -> list[str]:
    return cmd[start:]


def test_sglang_dflash_uses_num_draft_tokens_k_plus_1():
    spec = LaunchSpec("sglang", "/m/target", 7, algorithm="dflash", draft="/m/dflash", tp=8, port=30000,
                      python="/venv/bin/python")
    cmd = build_command(spec)
    assert cmd[:3] == ["/venv/bin/python", "-m", "sglang.launch_server"]
    assert cmd[3:] == ["--model-path", "/m/target", "--host", "127.0.0.1", "--port", "30000", "--tp-size", "8",
                       "--speculative-draft-model-path", "/m/dflash", "--speculative-algorithm", "DFLASH",
                       "--speculative-num-draft-tokens", "8"]


@pytest.mark.parametrize("algo", ["eagle", "eagle3", "nextn"])
def test_sglang_eagle_family_chain_flags(algo):
    cmd = build_command(LaunchSpec("sglang", "t", 3, algorithm=algo, port=1))
    tail = cmd[cmd.index("--speculative-algorithm"):]
    assert tail == ["--speculative-algorithm", algo.upper(), "--speculative-num-steps", "3",
                    "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


def test_sglang_dspark_block_size_is_k():
    cmd = build_command(LaunchSpec("sglang", "t", 6, algorithm="dspark", port=1))
    assert cmd[cmd.index("--speculative-algorithm"):] == ["--speculative-algorithm", "DSPARK",
                                                          "--speculative-dspark-block-size", "6"]


def test_vllm_speculative_config_json_and_module_entry_point():
    spec = LaunchSpec("vllm", "/m/t", 3, algorithm="ngram", port=8011, served_model_name="smol",
                      speculative_extra={"prompt_lookup_max": 4, "prompt_lookup_min": 2},
                      engine_args=["--dtype", "bfloat16"], per_request_metrics="summary")
    cmd = build_command(spec)
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    cfg = json.loads(cmd[cmd.index("--speculative-config") + 1])
    assert cfg == {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    assert cmd[cmd.index("--tensor-parallel-size") + 1] == "1"
    assert cmd[cmd.index("--per-request-spec-decode-metrics") + 1] == "summary"
    assert cmd[-4:] == ["--served-model-name", "smol", "--dtype", "bfloat16"]


def test_vllm_draft_model_config_has_model_and_no_method():
    cmd = build_command(LaunchSpec("vllm", "/m/t", 2, draft="/m/d", port=1))
    assert json.loads(cmd[cmd.index("--speculative-config") + 1]) == {"model": "/m/d", "num_speculative_tokens": 2}


def test_atom_flags_and_server_port():
    cmd = build_command(LaunchSpec("atom", "/m/t", 3, algorithm="mtp", tp=8, port=9000))
    assert cmd[1:3] == ["-m", "atom.entrypoints.openai_server"]
    assert cmd[cmd.index("--server-port") + 1] == "9000"
    assert "--port" not in cmd  # ATOM's --port is its internal engine port
    assert cmd[cmd.index("--method"):cmd.index("--method") + 4] == ["--method", "mtp", "--num-speculative-tokens", "3"]


def test_command_prefix_goes_first():
    cmd = build_command(LaunchSpec("vllm", "t", 1, algorithm="ngram", port=1, command_prefix=["srun", "-N1"]))
    assert cmd[:3] == ["srun", "-N1", "python3"]


def test_serve_reference_stands_in_for_the_engine():
    """--serve-reference: golden-al serve-reference in the engine's flavor, at the launch's k, host and port."""
    spec = LaunchSpec("sglang", "/m/t", 4, algorithm="EAGLE3", draft="/m/d", port=4321, python="/v/bin/python",
                      command_prefix=["srun", "-N1"], engine_args=["--decode-log-interval=5"], serve_reference=True)
    assert build_command(spec) == ["srun", "-N1", "/v/bin/python", "-m", "golden_al", "serve-reference",
                                   "--flavor", "sglang", "--draft-len", "4", "--target", "/m/t", "--host", "127.0.0.1",
                                   "--port", "4321", "--draft", "/m/d", "--algorithm", "eagle3",
                                   "--decode-log-interval=5"]
    vllm = build_command(LaunchSpec("vllm", "/m/t", 2, port=1, serve_reference=True))
    assert vllm[vllm.index("--flavor") + 1] == "vllm"
    assert "--algorithm" not in vllm
    with pytest.raises(UsageError, match="--draft-len"):
        build_command(LaunchSpec("atom", "/m/t", 2, port=1, engine_args=["--draft-len=3"], serve_reference=True))


@pytest.mark.parametrize(("engine", "arg"), [
    ("sglang", "--speculative-num-steps=5"),
    ("sglang", "--port"),
    ("vllm", "--speculative-config"),
    ("atom", "--num-speculative-tokens"),
])
def test_reserved_engine_args_are_refused(engine, arg):
    with pytest.raises(UsageError, match="sets itself"):
        build_command(LaunchSpec(engine, "t", 2, algorithm="mtp" if engine == "atom" else "eagle", port=1,
                                 engine_args=[arg]))


def test_synthetic_engine_args_are_refused():
    with pytest.raises(SyntheticAcceptanceActiveError, match="rejection_sample_method"):
        build_command(LaunchSpec("vllm", "t", 3, algorithm="ngram", port=1,
                                 speculative_extra={"rejection_sample_method": "synthetic",
                                                    "synthetic_acceptance_length": 2.5}))
    with pytest.raises(SyntheticAcceptanceActiveError, match="--spec-decode-acceptance-rate"):
        build_command(LaunchSpec("atom", "t", 3, algorithm="mtp", port=1,
                                 engine_args=["--spec-decode-acceptance-rate", "0.5"]))


def test_missing_algorithm_and_unknown_engine():
    with pytest.raises(UsageError, match="needs --algorithm"):
        build_command(LaunchSpec("sglang", "t", 2, port=1))
    with pytest.raises(UsageError, match="cannot launch"):
        build_command(LaunchSpec("trtllm", "t", 2, port=1))
    with pytest.raises(UsageError, match="needs a draft"):
        build_command(LaunchSpec("vllm", "t", 2, algorithm="eagle3", port=1))


def test_relevant_env_drops_secrets_and_noise():
    env = {"SGLANG_SIMULATE_ACC_LEN": "-1", "VLLM_CPU_KVCACHE_SPACE": "2", "HF_TOKEN": "x", "VLLM_API_KEY": "y",
           "HOME": "/root", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert relevant_env(env) == {"CUDA_VISIBLE_DEVICES": "0,1", "SGLANG_SIMULATE_ACC_LEN": "-1",
                                 "VLLM_CPU_KVCACHE_SPACE": "2"}
    assert shell_line(["a", "b c"], {"X": "1 2"}) == "X='1 2' a 'b c'"


# ---------------------------------------------------------------------------- ManagedServer
_SERVER = textwrap.dedent("""
    import json, os, subprocess, sys, time
    from http.server import BaseHTTPRequestHandler, HTTPServer
    port, child_file, delay, die = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4] == "die"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    open(child_file, "w").write(str(child.pid))
    print("fake engine starting", flush=True)
    if die:
        sys.exit(3)
    time.sleep(delay)
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def do_GET(self):
            body = b"{}" if self.path == "/health" else json.dumps({"data": [{"id": "m"}]}).encode()
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
            self.wfile.write(body)
    HTTPServer(("127.0.0.1", port), H).serve_forever()
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of ours is not alive
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def _server(tmp_path: Path, *, delay: float = 0.0, die: bool = False, timeout: float = 20.0) -> tuple[ManagedServer, Path]:
    script = tmp_path / "fake_engine.py"
    script.write_text(_SERVER)
    port = free_port()
    child_file = tmp_path / "child.pid"
    cmd = [sys.executable, str(script), str(port), str(child_file), str(delay), "die" if die else "ok"]
    srv = ManagedServer(cmd, url=f"http://127.0.0.1:{port}", log_path=tmp_path / "logs" / "server.log",
                        ready_timeout_s=timeout, stop_timeout_s=5)
    return srv, child_file


def test_managed_server_ready_logged_and_whole_group_stopped(tmp_path):
    srv, child_file = _server(tmp_path, delay=0.5)
    with srv:
        assert srv.models == {"data": [{"id": "m"}]}
        assert srv.alive()
        child = int(child_file.read_text())
        assert _alive(child)
    assert not srv.alive()
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the engine's child process outlived the stop"
    log = (tmp_path / "logs" / "server.log").read_text()
    assert "fake engine starting" in log
    assert "server stopped" in log
    assert "# golden-al" in log


def test_managed_server_stopped_on_exception(tmp_path):
    srv, _ = _server(tmp_path)
    with pytest.raises(RuntimeError, match="boom"), srv:
        raise RuntimeError("boom")
    assert not srv.alive()


def test_managed_server_stopped_on_sigterm_to_us(tmp_path):
    srv, _child_file = _server(tmp_path)
    def interrupted() -> None:
        with srv:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    assert not srv.alive()
    assert signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, signal.default_int_handler) or callable(
        signal.getsignal(signal.SIGTERM))


def test_process_exit_before_ready_names_the_log(tmp_path):
    srv, _ = _server(tmp_path, die=True)
    with pytest.raises(ServerError, match=r"exited with code 3 before becoming ready.*fake engine starting"):
        with srv:
            pass
    assert not srv.alive()


def test_readiness_timeout(tmp_path):
    srv, _ = _server(tmp_path, delay=30, timeout=1.5)
    t0 = time.monotonic()
    with pytest.raises(ServerError, match="not ready after 2 s"), srv:
        pass
    assert time.monotonic() - t0 < 15
    assert not srv.alive()


def test_bad_python_is_a_clear_error(tmp_path):
    srv = ManagedServer(["/nonexistent/python", "-m", "x"], url="http://127.0.0.1:1", log_path=tmp_path / "l.log")
    with pytest.raises(ServerError, match="cannot start"), srv:
        pass
