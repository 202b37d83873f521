"""Flake-Code (MainType FLAKE): a unique, time-sortable identifier of 64 to 256 bits.

The body is a 48-bit big-endian count of milliseconds since the Unix epoch followed by a
counter. The first Flake of a millisecond seeds the counter from ``os.urandom``; each further
Flake in the same millisecond takes the next value. Flakes are not reproducible and are not part
of the conformance vectors.

This module may read the clock and ``os.urandom``, and nothing else. The counter must be shared
by every caller in a process (two calls in one millisecond must not collide), so it lives in
one explicit :class:`FlakeGenerator`, guarded by a lock; :func:`gen_flake_code_v0` and
:class:`Flake` use the process-wide :data:`DEFAULT_GENERATOR`. Tests and other callers can
make their own generator with an injected clock and entropy source.

Reached only through the public API: neither the daemon nor the commands make Flake-Codes. The
module is here so that :mod:`isccd.iscc` offers what iscc-core 1.5.0 offers; the differential
tests against iscc-core (``tests/iscc/test_flake.py``) keep it right.
"""

from __future__ import annotations

import builtins
import datetime
import os
import threading
import time
from collections.abc import Callable

from isccd.iscc.codec import encode_component
from isccd.iscc.constants import MT, ST, VS
from isccd.iscc.exceptions import IsccError
from isccd.iscc.multibase import decode_base32hex, encode_base32hex

__all__ = [
    "DEFAULT_GENERATOR",
    "Flake",
    "FlakeGenerator",
    "gen_flake_code",
    "gen_flake_code_v0",
    "uid_flake_v0",
]

_TIME_BYTES = 6


def _check_bits(bits: int) -> int:
    if not isinstance(bits, int) or isinstance(bits, bool):
        raise TypeError(f"bits must be an int, got {type(bits).__name__}")
    if not 64 <= bits <= 256 or bits % 32:
        raise IsccError(f"Flake-Codes have 64 to 256 bits in steps of 32, got {bits}")
    return bits


class FlakeGenerator:
    """Makes Flake digests whose counter is unique per millisecond.

    Thread-safe. Only the current millisecond's counter is kept, so memory stays constant
    however long the process runs.

    Args:
        clock: nanoseconds since the Unix epoch (default ``time.time_ns``).
        entropy: ``n -> n`` random bytes (default ``os.urandom``).
    """

    def __init__(
        self,
        clock: Callable[[], int] = time.time_ns,
        entropy: Callable[[int], bytes] = os.urandom,
    ) -> None:
        self._clock = clock
        self._entropy = entropy
        self._lock = threading.Lock()
        self._millis = -1
        self._counter = 0

    def digest(self, bits: int = 64, millis: int | None = None) -> bytes:
        """The body of a new Flake-Code.

        Args:
            bits: 64 to 256, a multiple of 32.
            millis: the time in milliseconds since the Unix epoch; now when omitted.

        Returns:
            ``bits / 8`` bytes: the 48-bit time, then the counter (modulo its size).

        Raises:
            IsccError: a bit length out of range, or a time outside 0..2**48-1 ms.
        """
        nbytes = _check_bits(bits) // 8 - _TIME_BYTES
        with self._lock:
            if millis is None:
                millis = self._clock() // 1_000_000
            if not 0 <= millis < 1 << (8 * _TIME_BYTES):
                raise IsccError(f"Flake time must fit in 48 bits of milliseconds, got {millis}")
            if millis != self._millis:
                # Seed wide enough for the largest counter (26 bytes); it is reduced per size.
                self._millis = millis
                self._counter = int.from_bytes(self._entropy(32), "big")
            else:
                self._counter += 1
            counter = self._counter
        return millis.to_bytes(_TIME_BYTES, "big") + (counter % (1 << 8 * nbytes)).to_bytes(
            nbytes, "big"
        )


#: The generator behind :func:`gen_flake_code_v0` and :class:`Flake`: one per process, because
#: Flakes made in the same millisecond anywhere in the process must differ.
DEFAULT_GENERATOR = FlakeGenerator()


def uid_flake_v0(ts: float | None = None, bits: int = 64) -> bytes:
    """A Flake digest for the Unix time ``ts`` in seconds (now when omitted).

    Raises:
        IsccError: a bit length out of range.
    """
    millis = None if ts is None else int(ts * 1000)
    return DEFAULT_GENERATOR.digest(bits, millis)


def gen_flake_code_v0(bits: int = 64) -> dict[str, str]:
    """Generate a Flake-Code with algorithm v0.

    Args:
        bits: 64 to 256, a multiple of 32.

    Returns:
        ``{"iscc": "ISCC:OA..."}``.

    Raises:
        IsccError: a bit length out of range.
    """
    digest = DEFAULT_GENERATOR.digest(bits)
    return {"iscc": "ISCC:" + encode_component(MT.FLAKE, ST.NONE, VS.V0, bits, digest)}


def gen_flake_code(bits: int = 64) -> dict[str, str]:
    """Generate a Flake-Code with the current algorithm (v0)."""
    return gen_flake_code_v0(bits)


class Flake:
    """A Flake-Code with its other forms: ``.iscc``, ``.string`` (base32hex, sorts by time),
    ``.int`` and ``.time``. Flakes compare and sort by their integer value.

    Args:
        ts: Unix time in seconds; now when omitted.
        bits: 64 to 256, a multiple of 32.
    """

    __slots__ = ("_bits", "_flake")

    def __init__(self, ts: float | None = None, bits: int = 64) -> None:
        self._flake = uid_flake_v0(ts, bits)
        self._bits = bits

    @classmethod
    def _from_digest(cls, digest: bytes) -> Flake:
        flake = cls.__new__(cls)
        flake._bits = _check_bits(len(digest) * 8)
        flake._flake = digest
        return flake

    @classmethod
    def from_int(cls, num: int, bits: int = 64) -> Flake:
        """The Flake whose integer form is ``num``.

        Raises:
            IsccError: ``num`` does not fit in ``bits``.
        """
        try:
            return cls._from_digest(num.to_bytes(_check_bits(bits) // 8, "big"))
        except OverflowError:
            raise IsccError(f"{num} is not a {bits}-bit Flake") from None

    @classmethod
    def from_string(cls, code: str) -> Flake:
        """The Flake whose base32hex form is ``code``.

        Raises:
            IsccError: malformed base32hex or a length that is no Flake size.
        """
        return cls._from_digest(decode_base32hex(code))

    @property
    def iscc(self) -> str:
        """The canonical ``ISCC:`` form."""
        return "ISCC:" + encode_component(MT.FLAKE, ST.NONE, VS.V0, self._bits, self._flake)

    @property
    def time(self) -> str:
        """The time part, ISO 8601 UTC with milliseconds and no zone suffix."""
        millis = int.from_bytes(self._flake[:_TIME_BYTES], "big")
        seconds, ms = divmod(millis, 1000)
        when = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
        return when.replace(microsecond=ms * 1000, tzinfo=None).isoformat(timespec="milliseconds")

    @property
    def int(self) -> int:
        """The body as an unsigned integer (time-sortable)."""
        return int.from_bytes(self._flake, "big")

    @property
    def string(self) -> str:
        """The body in base32hex (time-sortable)."""
        return encode_base32hex(self._flake)

    def __str__(self) -> str:
        return self.string

    def __repr__(self) -> str:
        return f'Flake("{self.string}")'

    def __int__(self) -> builtins.int:
        return self.int

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Flake) and self._flake == other._flake

    def __lt__(self, other: Flake) -> bool:
        return self.int < other.int

    def __gt__(self, other: Flake) -> bool:
        return self.int > other.int

    def __hash__(self) -> builtins.int:
        return hash(self._flake)
