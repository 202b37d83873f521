"""The ``isccd`` command line: a thin layer over the library and the daemon client.

Each command group lives in its own module with a ``register(subparsers)`` function. Command
modules import their heavy dependencies (numba, Pillow, the store) inside the handler, so that
``isccd --help`` stays instant.
"""
