"""Allow ``python -m isccd``."""

from isccd.cli.main import main

raise SystemExit(main())
