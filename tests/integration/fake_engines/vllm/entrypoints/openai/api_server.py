"""Test stand-in for ``python -m vllm.entrypoints.openai.api_server`` (see tests/integration/fake_engines/_shim.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from _shim import vllm_main

if __name__ == "__main__":
    vllm_main(sys.argv[1:])
