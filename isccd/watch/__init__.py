"""Watching the roots: from file-system events to settled actions for the pipeline.

- :mod:`isccd.watch.debounce`: pure settling and coalescing (quiet period, maximum delay, one
  entry per path, moves kept as moves).
- :mod:`isccd.watch.handler`: the watchdog handler; on the observer thread it only hands events
  to the event loop.
- :mod:`isccd.watch.watcher`: one observer per root, inotify or polling, and the detection of
  what watchdog keeps quiet (queue overflow, watch-limit exhaustion, unreadable directories,
  network filesystems, a root moved or deleted); :mod:`isccd.watch.inotify` is watchdog's
  reader, hooked to tell it.
- :mod:`isccd.watch.presence`: whether a root is still the directory watched (its identity, a
  watch on its parent).

The reconcile walk that catches what watching misses is :mod:`isccd.walk`, below both.
"""
