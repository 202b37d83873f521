"""isccd: a content-identity daemon built on ISCC codes (ISO 24138:2024).

The package is layered (see docs/architecture.md):

- :mod:`isccd.iscc` holds the pure ISCC algorithms (no I/O);
- :mod:`isccd.extract` turns media files into the plain inputs those algorithms take;
- :mod:`isccd.hashing` joins the two into one record per file;
- :mod:`isccd.store`, :mod:`isccd.hamming` and :mod:`isccd.match` remember and judge records,
  :mod:`isccd.pipeline` keeps them in step as files change (:mod:`isccd.walk` lists trees);
- :mod:`isccd.settings` and :mod:`isccd.config` turn the configuration into components' options;
- :mod:`isccd.watch`, :mod:`isccd.server` and :mod:`isccd.daemon` make the long-running service;
- :mod:`isccd.cli` is the command line.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("isccd")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
