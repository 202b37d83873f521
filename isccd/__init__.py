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

#: The package's version, read by the packaging metadata (pyproject.toml) rather than from it:
#: looking the metadata up costs about 20 ms at every start of a command.
__version__ = "0.1.0.dev0"

__all__ = ["__version__"]
