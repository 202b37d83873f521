"""The daemon: the composition root that builds every component from the settings and owns the
lifecycle (start, reload, stop). See :mod:`isccd.daemon.app`; ``isccd run`` enters through
:func:`isccd.daemon.run.main`.

The package imports nothing itself: the command line and the hashing workers import just the
modules they use (a worker must not load the settings, the server and the watcher).

Modules: :mod:`.run` (the entry point and its exit statuses), :mod:`.config` (settings to
component options), :mod:`.app` (the lifecycle),
:mod:`.hasher` (the pipeline's hasher over :mod:`isccd.hashing.pool`), :mod:`.feed` (watcher
to work queue),
:mod:`.workqueue`, :mod:`.scans` (reconciles of whole roots), :mod:`.backend` (the socket
server's questions), :mod:`.heartbeat`, :mod:`.signals`, :mod:`.supervisor` (every background
loop), :mod:`.storehealth` (a store that cannot be written), :mod:`.roots` (the watcher, and
roots that come and go).
"""
