"""``golden-al measure`` checks every option and input file before torch is imported.

Each case runs the CLI in a fresh interpreter (so ``sys.modules`` starts clean) and
checks: exit code 2, one error line naming the problem, and neither torch nor
transformers imported when it failed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_PROBE = """
import json, sys
from golden_al.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules}))
"""


def _run(args: list[str], cache: Path) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-c", _PROBE, "measure", "--cache-dir", str(cache), *args],
                          capture_output=True, text=True, timeout=120, check=False)
    lines = proc.stdout.strip().splitlines()
    assert lines, proc.stderr
    return json.loads(lines[-1]), proc.stderr.strip()


@pytest.fixture
def files(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [oops\n')
    done = tmp_path / "done"
    done.mkdir()
    (done / "requests.jsonl").write_text('{"index": 0}\n')
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "qwen2"}')
    return {"prompts": prompts, "bad": bad, "done": done, "model": model, "root": tmp_path}


@pytest.mark.parametrize(("case", "needle"), [
    ("nosuch", "unknown prompt source 'nosuch'"),
    ("missing-file", "no such file"),
    ("bad-file", "bad.jsonl:1"),
    ("missing-model", "does not exist"),
    ("out-has-results", "already holds results"),
    ("trajectory-without-replay", "--replay-trajectory-k"),
    ("thinking-on-qwen2", "thinking"),
])
def test_bad_input_fails_before_torch_is_imported(files, case, needle):
    root = files["root"]
    args = {
        "nosuch": ["--draft-len", "7", "--prompts", "nosuch"],
        "missing-file": ["--draft-len", "7", "--prompts", f"chat-jsonl:{root / 'nope.jsonl'}"],
        "bad-file": ["--draft-len", "7", "--prompts", f"chat-jsonl:{files['bad']}"],
        "missing-model": ["--draft-len", "7", "--target", str(root / "nomodel"), "--prompts",
                          f"chat-jsonl:{files['prompts']}"],
        "out-has-results": ["--draft-len", "7", "--target", str(files["model"]), "--draft", str(files["model"]),
                            "--prompts", f"chat-jsonl:{files['prompts']}", "--out", str(files["done"])],
        "trajectory-without-replay": ["--draft-lens", "1-3", "--replay-trajectory-k", "2"],
        "thinking-on-qwen2": ["--draft-len", "3", "--thinking", "on", "--target", str(files["model"]),
                              "--draft", str(files["model"]), "--prompts", f"chat-jsonl:{files['prompts']}"],
    }[case]
    result, err = _run(args, root / "cache")
    assert result["code"] == 2, err
    assert needle in err, err
    assert len(err.splitlines()) == 1, err
    assert not result["torch"], f"torch was imported before {case!r} was rejected"
    assert not result["transformers"]
