"""golden-al: measure, fit, commit, inject and check speculative-decoding acceptance length.

The package is the application layer: CLI, file formats, engines and servers,
the golden curve store and the CI checks. Pure math lives in
:mod:`distributions`; engine samplers and throughput models in :mod:`simulators`.
Importing :mod:`golden_al` never imports torch or transformers.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
