"""Test stand-in for ``python -m atom.entrypoints.openai_server`` (see tests/integration/fake_engines/_shim.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _shim import atom_main

if __name__ == "__main__":
    atom_main(sys.argv[1:])
