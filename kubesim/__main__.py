"""``python -m kubesim``: the same as ``spreadbus kubesim``."""

from kubesim.cli import main

raise SystemExit(main())
