"""Write the experiment's prompt files (chat-jsonl) from the HumanEval and MT-Bench sets golden-al loads.

* ``heldout.jsonl``: HumanEval problems 0..31, the prompts AL is measured on (never trained on);
* ``train.jsonl``: HumanEval problems 32..163 and the 80 MT-Bench first turns, the prompts the
  target answers to make the draft's training data.

    python experiments/dflash-trained/make_prompts.py
"""

from __future__ import annotations

import json
from pathlib import Path

from golden_al.prompts import load_prompts

HERE = Path(__file__).resolve().parent
HELD_OUT = 32


def _write(path: Path, conversations: list) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for c in conversations:
            fh.write(json.dumps({"id": c.id, "messages": c.messages[:1]}, ensure_ascii=False) + "\n")


def main() -> None:
    cache = Path.home() / ".cache" / "golden-al"
    humaneval = load_prompts("humaneval", cache_dir=cache, limit=None).conversations
    mt_bench = load_prompts("mt-bench", cache_dir=cache, limit=None).conversations
    _write(HERE / "heldout.jsonl", humaneval[:HELD_OUT])
    _write(HERE / "train.jsonl", humaneval[HELD_OUT:] + mt_bench)
    print(f"heldout {HELD_OUT}, train {len(humaneval) - HELD_OUT + len(mt_bench)}")


if __name__ == "__main__":
    main()
