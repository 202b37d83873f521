"""Allow ``python -m isccd``."""

from isccd.cli.main import run

run()
