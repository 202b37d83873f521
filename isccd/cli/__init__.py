"""The ``isccd`` command line: a thin layer over the library and the daemon client.

Each command group lives in its own module with a ``register(subparsers)`` function. Command
modules import their heavy dependencies (numba, Pillow, the store) inside the handler, so that
``isccd --help`` stays instant.
"""

#: Exit statuses of the commands (``isccd run`` ends with the daemon's, see
#: :mod:`isccd.daemon.run`).
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
#: Invalid configuration (EX_CONFIG), as ``isccd run`` exits.
EXIT_CONFIG = 78
EXIT_INTERRUPTED = 130


def log_to_stderr() -> None:
    """Send warnings and errors of the layers below (a hashing worker replaced, a tool that
    failed) to stderr, never into the output; ``isccd run`` configures its own logging.

    Called before a command runs, unless it is one of the quiet ones
    (:data:`isccd.cli.main.QUIET_COMMANDS`), which call it when they reach such a layer.
    """
    from isccd.logconf import configure_logging  # noqa: PLC0415 -- quiet commands skip it

    configure_logging("warning")
