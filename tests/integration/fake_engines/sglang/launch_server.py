"""Test stand-in for ``python -m sglang.launch_server`` (see tests/integration/fake_engines/_shim.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _shim import sglang_main

if __name__ == "__main__":
    sglang_main(sys.argv[1:])
