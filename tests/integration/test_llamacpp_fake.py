"""``measure``/``sweep --engine llamacpp`` end to end against a stand-in llama-server (no build, no model).

The stand-in (``fake_engines/fake_llama_server.py``) parses the flags ``--launch`` writes and
answers in llama-server's shapes; the real server is ``test_llamacpp.py`` (opt-in).
"""

from __future__ import annotations

import json
from pathlib import Path

from _servers import FAKE_ENGINES, cli, write_prompts

FAKE = str(FAKE_ENGINES / "fake_llama_server.py")


def _pair(tmp_path: Path) -> list[str]:
    for name in ("t.gguf", "d.gguf"):
        (tmp_path / name).write_bytes(b"GGUF")
    return ["--target", str(tmp_path / "t.gguf"), "--draft", str(tmp_path / "d.gguf")]


def test_launch_measures_from_metrics_cross_checked_with_timings(tmp_path, capsys):
    prompts = write_prompts(tmp_path / "p.jsonl", 5)
    code, out, err = cli(["measure", "--engine", "llamacpp", "--launch", "--llama-server", FAKE, *_pair(tmp_path),
                          "--draft-lens", "2,4", "--prompts", f"chat-jsonl:{prompts}", "--max-tokens", "64",
                          "--temperature", "0", "--ready-timeout", "60", "--out", str(tmp_path / "m")], capsys)
    assert code == 0, err
    for k in (2, 4):
        rec = json.loads((tmp_path / "m" / f"k{k}" / "measurement.json").read_text())
        assert rec["engine"] == "llamacpp"
        assert rec["al_source"] == "llamacpp-prometheus"
        assert rec["draft_method"] == "draft-model"
        assert rec["num_requests"] == 5
        assert rec["al"] == 1 + rec["num_accepted_drafts"] / rec["num_verify_steps"]
        assert not any("could not be confirmed" in w for w in rec["warnings"])
        cmd = rec["server"]["command"]
        assert cmd[cmd.index("--spec-draft-n-max") + 1] == cmd[cmd.index("--spec-draft-n-min") + 1] == str(k)
        log = (tmp_path / "m" / "logs" / f"k{k}.server.log").read_text() if (tmp_path / "m" / "logs").exists() \
            else (tmp_path / "m" / f"k{k}" / "server.log").read_text()
        assert log.count("draft acceptance = ") == 5
    assert "llamacpp thinking off k=4: AL" in out


def test_synthetic_server_is_refused_from_its_log(tmp_path, capsys):
    prompts = write_prompts(tmp_path / "p.jsonl", 2)
    code, _, err = cli(["measure", "--engine", "llamacpp", "--launch", "--llama-server", FAKE, *_pair(tmp_path),
                        "--draft-len", "3", "--prompts", f"chat-jsonl:{prompts}", "--env", "LLAMA_ARG_SPEC_SYNTH_LEN=3",
                        "--out", str(tmp_path / "m")], capsys)
    assert code == 2
    assert "LLAMA_ARG_SPEC_SYNTH_LEN=3" in err


def test_attached_synthetic_server_is_refused_from_its_log_line(tmp_path, capsys):
    import sys

    from golden_al.servers.launch import ManagedServer, free_port

    prompts = write_prompts(tmp_path / "p.jsonl", 2)
    port = free_port()
    log = tmp_path / "server.log"
    cmd = [sys.executable, FAKE, "-m", "t.gguf", "-md", "d.gguf", "--port", str(port), "--metrics",
           "--spec-draft-n-max", "3", "--spec-draft-n-min", "3", "--spec-synth-len", "3.5"]
    with ManagedServer(cmd, url=f"http://127.0.0.1:{port}", log_path=log, ready_timeout_s=60):
        code, _, err = cli(["measure", "--engine", "llamacpp", "--server", f"http://127.0.0.1:{port}",
                            "--server-log", str(log), "--draft-len", "3", "--prompts", f"chat-jsonl:{prompts}",
                            "--out", str(tmp_path / "m")], capsys)
    assert code == 2
    # the launch command the log starts with (line 1) already names --spec-synth-len (the census reads every
    # string a server reports); llama.cpp's own warning follows on line 2
    assert "synthetic acceptance is active (--spec-synth-len=3.5, server log" in err
    assert "line 1" in err
