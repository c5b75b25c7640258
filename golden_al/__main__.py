"""``python -m golden_al`` is the ``golden-al`` command."""

from golden_al.cli.main import main

raise SystemExit(main())
