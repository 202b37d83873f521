"""Data-Code and Instance-Code in one pass, combined into an ISCC-CODE (SubType SUM or WIDE).

Mirrors ``gen_sum_code_v0`` of iscc-lib (same arguments and result keys), except that it takes a
stream or bytes rather than a path: the core does no file I/O, the caller opens the file. Each
block read is pushed to both hashers while it is hot in the cache.

Pure: reads only from the stream it is given.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from isccd.iscc._bits import require_unit_bits
from isccd.iscc._stream import BytesLike, Readable, feed
from isccd.iscc.data import DataHasherV0
from isccd.iscc.exceptions import IsccError
from isccd.iscc.instance import InstanceHasherV0
from isccd.iscc.iscc_code import gen_iscc_code_v0

__all__ = ["SumCode", "SumHasher", "gen_sum_code_v0"]


class SumCode(TypedDict):
    """The result of :func:`gen_sum_code_v0` and :meth:`SumHasher.result`."""

    iscc: str
    datahash: str
    filesize: int
    units: NotRequired[list[str]]


def _require_sum_args(bits: int, wide: bool) -> int:
    bits = require_unit_bits(bits)
    if bits < 64:
        raise IsccError(f"an ISCC-CODE needs units of at least 64 bits, got {bits}")
    if not isinstance(wide, bool):
        raise TypeError(f"wide must be a bool, not {type(wide).__name__}")
    return bits


class SumHasher:
    """Feeds every piece of input to a Data-Code and an Instance-Code hasher."""

    def __init__(self, data: BytesLike | None = None) -> None:
        """Start hashing, optionally with a first piece of data.

        Raises:
            TypeError: If ``data`` is not bytes-like.
        """
        self.data = DataHasherV0()
        self.instance = InstanceHasherV0()
        if data is not None:
            self.push(data)

    @property
    def filesize(self) -> int:
        """Number of bytes pushed so far."""
        return self.instance.filesize

    def push(self, data: BytesLike) -> None:
        """Hash the next piece of the input with both hashers.

        Raises:
            TypeError: If ``data`` is not bytes-like.
        """
        self.data.push(data)
        self.instance.push(data)

    def result(self, bits: int = 64, wide: bool = False, add_units: bool = False) -> SumCode:
        """The ISCC-CODE of everything pushed so far.

        Args:
            bits: Body length of the two units, a multiple of 32 from 64 to 256 (the ISCC-CODE
                takes 64 bits of each, 128 when ``wide``).
            wide: Build a WIDE ISCC-CODE (not part of ISO 24138:2024) when ``bits >= 128``;
                otherwise a standard SUM code.
            add_units: Also return the two units, as ``units`` (Data-Code first).

        Returns:
            ``{"iscc", "datahash", "filesize"}`` and ``"units"`` when asked.

        Raises:
            IsccError: If ``bits`` is not a legal length or below 64.
            TypeError: If ``bits`` is not an int or ``wide`` not a bool.
        """
        bits = _require_sum_args(bits, wide)
        units = ["ISCC:" + self.data.code(bits), "ISCC:" + self.instance.code(bits)]
        result: SumCode = {
            "iscc": gen_iscc_code_v0(units, wide=wide)["iscc"],
            "datahash": self.instance.multihash(),
            "filesize": self.instance.filesize,
        }
        if add_units:
            result["units"] = units
        return result


def gen_sum_code_v0(
    stream: Readable | BytesLike, bits: int = 64, wide: bool = False, add_units: bool = False
) -> SumCode:
    """Create Data-Code, Instance-Code and their ISCC-CODE in a single pass over the input.

    Args:
        stream: A binary stream (read to its end, not closed) or a bytes-like object.
        bits: Body length of the two units, a multiple of 32 from 64 to 256.
        wide: Build a WIDE ISCC-CODE (128-bit bodies) when ``bits >= 128``.
        add_units: Also return the two units as ``units``.

    Returns:
        ``{"iscc": "ISCC:K...", "datahash": "1e20...", "filesize": n}``, plus ``"units"``.

    Raises:
        IsccError: If ``bits`` is not a legal length or below 64.
        TypeError: If an argument has the wrong type.
    """
    bits = _require_sum_args(bits, wide)  # before reading: the input may be large
    hasher = SumHasher()
    feed(stream, hasher.push)
    return hasher.result(bits, wide=wide, add_units=add_units)
