"""Test-only stand-ins for ``python -m sglang.launch_server``, ``vllm.entrypoints.openai.api_server`` and
``atom.entrypoints.openai_server``.

They parse the engine's own launch flags (as golden-al's ``--launch`` writes them),
derive the draft length by the engine's rules, and serve ``serve-reference`` in that
engine's flavor: the reference engine when the model paths are directories, else the
deterministic fake engine. Put this directory on ``PYTHONPATH`` (``--env``).

Environment (test knobs):

* ``GOLDEN_AL_FAKE_FAULT_FILE``: a file of ``--fault`` specs (one per line), read and
  deleted at startup (one-shot: a relaunch after the fault runs clean);
* ``GOLDEN_AL_FAKE_PID_DIR``: the server writes ``<pid>.pid`` there;
* ``GOLDEN_AL_FAKE_STEP_DELAY``: seconds per verify step of the fake engine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def _faults() -> list[str]:
    path = os.environ.get("GOLDEN_AL_FAKE_FAULT_FILE")
    if not path or not Path(path).exists():
        return []
    specs = [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]
    Path(path).unlink()
    return specs


def serve(flavor: str, k: int, host: str, port: int, target: str, draft: str | None, served: str | None,
          algorithm: str = "standalone") -> None:
    from golden_al.servers.reference_server import FaultPlan, ReferenceServer, ServeConfig, parse_fault
    from golden_al.servers.served_engine import FakeServedEngine

    pid_dir = os.environ.get("GOLDEN_AL_FAKE_PID_DIR")
    if pid_dir:
        Path(pid_dir).mkdir(parents=True, exist_ok=True)
        (Path(pid_dir) / f"{os.getpid()}.pid").write_text(str(os.getpid()))
    if draft and Path(target, "config.json").exists() and Path(draft, "config.json").exists():
        from golden_al.servers.served_engine import ReferenceServedEngine

        engine = ReferenceServedEngine(target, draft, k, model_name=served or target)
    else:
        engine = FakeServedEngine(k, step_delay_s=float(os.environ.get("GOLDEN_AL_FAKE_STEP_DELAY", "0")),
                                  model_name=served or target)
    faults = FaultPlan([parse_fault(f) for f in _faults()])
    config = ServeConfig(flavor=flavor, host=host, port=port, served_model_name=served, algorithm=algorithm,
                         faults=faults, decode_log_interval=5, log_stats_interval_s=0.5)
    server = ReferenceServer(engine, config, sys.stdout)
    server.serve_forever()


def sglang_main(argv: list[str]) -> None:
    from golden_al.engines import sglang as es

    ap = argparse.ArgumentParser()
    ap.add_argument("--model-path", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=30000)
    ap.add_argument("--tp-size", type=int, default=1)
    ap.add_argument("--speculative-draft-model-path")
    ap.add_argument("--speculative-algorithm", required=True)
    ap.add_argument("--speculative-num-steps", type=int)
    ap.add_argument("--speculative-eagle-topk", type=int)
    ap.add_argument("--speculative-num-draft-tokens", type=int)
    ap.add_argument("--speculative-dspark-block-size", type=int)
    ap.add_argument("--served-model-name")
    a, _unknown = ap.parse_known_args(argv)
    k = es.draft_len(a.speculative_algorithm, num_steps=a.speculative_num_steps,
                            eagle_topk=a.speculative_eagle_topk, num_draft_tokens=a.speculative_num_draft_tokens,
                            dspark_block_size=a.speculative_dspark_block_size).k
    serve("sglang", k, a.host, a.port, a.model_path, a.speculative_draft_model_path, a.served_model_name,
          a.speculative_algorithm.lower())


def vllm_main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--tensor-parallel-size", type=int, default=1)
    ap.add_argument("--speculative-config", required=True)
    ap.add_argument("--served-model-name")
    a, _unknown = ap.parse_known_args(argv)
    cfg = json.loads(a.speculative_config)
    serve("vllm", int(cfg["num_speculative_tokens"]), a.host, a.port, a.model, cfg.get("model"), a.served_model_name)


def atom_main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--server-port", type=int, default=8000)
    ap.add_argument("-tp", "--tensor-parallel-size", type=int, default=1)
    ap.add_argument("--method", required=True)
    ap.add_argument("--num-speculative-tokens", type=int, default=1)
    ap.add_argument("--draft-model")
    ap.add_argument("--served-model-name")
    a, _unknown = ap.parse_known_args(argv)
    serve("atom", a.num_speculative_tokens, a.host, a.server_port, a.model, a.draft_model, a.served_model_name)
