"""How the stored ISCC-CODEs were composed, and composing them again after a change.

An ISCC-CODE is composed from a file's units; whether one of only Data- and Instance-Code of 128
bits or more is WIDE is an option (``[code] wide``), not a property of any unit, so a change of
it outdates no unit profile. The store records the option its ISCC-CODEs were composed with
(property :data:`PROPERTY`); a pipeline opened with another one composes every live file's
ISCC-CODE again from the stored units (nothing is read from disk) and logs ``file.changed`` for
each one that changes, chunk by chunk. The record is written once all are done, so that an
interrupted switch is simply run again (composing again is idempotent). A store that records
nothing (a new one) takes the pipeline's option.

The functions taking an :class:`Index` run on the store's owner thread, each as one job.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from isccd.pipeline.index import Index

_log = logging.getLogger("isccd.pipeline")

#: The store property holding the record: ``{"wide": <bool>}``.
PROPERTY = "iscc_code_composition"

_ALL_SIZES = (0, (1 << 63) - 1)  # every size SQLite can hold


def _decode(text: str) -> bool | None:
    """The recorded ``wide`` option; ``None`` for a record this isccd cannot read (the codes
    are then composed again)."""
    try:
        found = json.loads(text)["wide"]
    except (ValueError, KeyError, TypeError):
        found = None
    if not isinstance(found, bool):
        _log.warning("composition_record_unreadable", extra={"found": text})
        return None
    return found


def record(ix: Index, wide: bool) -> None:
    """Record ``wide`` as the option the stored ISCC-CODEs follow."""
    ix.store.set_property(PROPERTY, json.dumps({"wide": wide}))


def outdated(ix: Index, wide: bool) -> Sequence[int] | None:
    """The live files to compose again under ``wide`` (each chunk with
    :func:`isccd.pipeline.changes.recompose`), or ``None`` when the stored codes follow it
    already (a store that records no option takes this one)."""
    text = ix.store.get_property(PROPERTY)
    if text is None:
        record(ix, wide)
        return None
    if _decode(text) == wide:
        return None
    return ix.store.ids_by_size(*_ALL_SIZES)
