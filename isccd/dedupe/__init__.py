"""Acting on duplicates safely: ``isccd dedupe``.

The layers, from pure to I/O:

- :mod:`~isccd.dedupe.plan`: the plan model (groups, kept members, steps) and the steps of an
  action; :mod:`~isccd.dedupe.keep`: keep rules; both pure.
- :mod:`~isccd.dedupe.build`: the files of the index's groups as they are now, and the plan.
- :mod:`~isccd.dedupe.planfile`: the versioned plan file (docs/schema/plan.schema.json).
- :mod:`~isccd.dedupe.beneath`, :mod:`~isccd.dedupe.verify`: reaching files beneath their
  roots without following links, and the checks made immediately before and after each
  action; :mod:`~isccd.dedupe.owner`: whose file may stand for whose.
- :mod:`~isccd.dedupe.actions` (with :mod:`~isccd.dedupe.syscalls`): link, reflink, remove,
  move, each atomic and revertible until finished; :mod:`~isccd.dedupe.apply`: the steps
  carried out and logged; :mod:`~isccd.dedupe.lock`: the lock on the roots that keeps runs
  and undos apart; :mod:`~isccd.dedupe.log`: the action log; :mod:`~isccd.dedupe.undo`:
  reverting it.
- :mod:`~isccd.dedupe.script`: the steps as a reviewable shell script.

The daemon never imports this package: it stays read-only, and notices the changes dedupe
makes as it notices any other.
"""
