"""A server measurement names the model the server serves, not its address (issue 54 item 1), and ``verify DIR``
finds the golden curve from it without ``--model``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from golden_al.cli.main import main
from golden_al.measure.schema import ModelInfo
from golden_al.measure.sweep import served_target
from tests.unit._inproc import InProcessServer

SERVED = "Qwen/Qwen2.5-Coder-1.5B-Instruct"


def test_the_record_names_the_served_model_and_keeps_the_url_as_the_address(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"q{i}", "messages": [{"role": "user", "content": f"f{i}(x)"}]})
                               + "\n" for i in range(6)))
    with InProcessServer("vllm", k=3, served_model_name=SERVED) as srv:
        assert main(["measure", "--engine", "vllm", "--server", srv.url, "--draft-len", "3", "--algorithm", "mtp", "--prompts",
                     f"chat-jsonl:{prompts}", "--max-tokens", "40", "--out", str(tmp_path / "run")]) == 0
        url = srv.url
    rec = json.loads((tmp_path / "run" / "measurement.json").read_text())
    assert rec["target"]["name"] == SERVED  # was the URL
    assert (rec["server"]["url"], rec["server"]["model"]) == (url, SERVED)
    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / "qwen.yaml").write_text(yaml.safe_dump({
        "schema_version": 1, "model": "qwen2.5-coder-1.5b-instruct", "draft": {"method": "mtp"},
        "thinking_off": {"points": {3: {"al": round(rec["al"], 3)}}}, "provenance": {"notes": "test"}}))
    capsys.readouterr()
    code = main(["verify", str(tmp_path / "run"), "--golden-dir", str(golden), "--format", "json"])
    out = capsys.readouterr()
    assert code in (0, 3), out.err  # a verdict, not "no golden curve for the record's model 'http://...'" (exit 2)
    assert json.loads(out.out)["results"][0]["golden_al"] == round(rec["al"], 3)


def test_the_target_is_what_the_server_serves() -> None:
    assert served_target(None, SERVED) == ModelInfo(name=SERVED, source="server")
    assert served_target(ModelInfo(name="/models/q15", source="server"), SERVED) == ModelInfo(
        name=SERVED, path="/models/q15", source="server")
    gguf = ModelInfo(name="qwen2.5-coder-1.5b-instruct", path="/c/q.gguf", source="gguf", sha256="ab")
    assert served_target(gguf, "q.gguf") is gguf  # a file identified by its hash keeps its registry name
