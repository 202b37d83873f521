"""A reader for the binary MPEG-7 video signature that ffmpeg's ``signature`` filter writes.

Layout (ISO/IEC 15938-3 as ffmpeg writes it; bit-packed, most significant bit first):

=====================================  ======  =============================================
field                                  bits    use here
=====================================  ======  =============================================
spatial regions, flag, region corners  129     skipped (corner x2, y2 = width-1, height-1)
NumOfFrames                            32      frame count
MediaTimeUnit                          16      time base of the frame times
time flag, start and end media time    65      skipped
NumOfSegments                          32      segment count
segments                               n*1344  skipped (4*32 + 1 + 5*243 bits each)
CompressionFlag                        1       skipped
per frame: time flag                   1       skipped
           MediaTimeOfFrame            32      frame time, in MediaTimeUnit
           FrameConfidence             8       confidence 0..255
           words                       40      skipped
           frame signature             608     76 bytes, each 5 ternary digits (3^5 = 243)
=====================================  ======  =============================================

Each signature byte ``b`` holds the digits ``b//81, b//27 %3, b//9 %3, b//3 %3, b %3``, most
significant first, giving the 380 values (0, 1 or 2) the Video-Code is made from. A byte of 243
or more cannot occur and marks the data as corrupt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

_HEADER_BITS = 129
_SEGMENT_BITS = 4 * 32 + 1 + 5 * 243
_FRAME_BITS = 1 + 32 + 8 + 40 + 76 * 8
FRAME_SIZE = 380


@dataclass(frozen=True, slots=True)
class Signature:
    """A decoded video signature.

    Attributes:
        width: Frame width the signature was computed at.
        height: Frame height.
        times: Media time of each frame, in the signature's time-unit ticks.
        frames: One row of 380 ternary values (0..2) per frame, as uint8: the input of
            ``gen_video_code_v0``.
    """

    width: int
    height: int
    times: tuple[int, ...]
    frames: npt.NDArray[np.uint8]


def _ternary_table() -> npt.NDArray[np.uint8]:
    table = np.zeros((243, 5), dtype=np.uint8)
    for value in range(243):
        for digit, power in enumerate((81, 27, 9, 3, 1)):
            table[value, digit] = (value // power) % 3
    return table


_TERNARY = _ternary_table()


def read_signature(data: bytes) -> Signature:
    """Decode a binary MPEG-7 video signature.

    Args:
        data: The file ffmpeg's ``signature=format=binary`` wrote.

    Returns:
        The frames and their times.

    Raises:
        ValueError: The data is truncated or corrupt.
    """
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8))
    total = bits.size

    def field(pos: int, width: int) -> int:
        if pos + width > total:
            raise ValueError(f"MPEG-7 signature truncated at bit {pos} of {total}")
        return int.from_bytes(np.packbits(bits[pos : pos + width]).tobytes(), "big") >> (-width % 8)

    # The header stores the last pixel's coordinates (width - 1, height - 1).
    width = field(65, 16) + 1
    height = field(81, 16) + 1
    pos = _HEADER_BITS
    n_frames = field(pos, 32)
    pos += 32 + 16 + 1 + 32 + 32
    n_segments = field(pos, 32)
    pos += 32 + n_segments * _SEGMENT_BITS + 1
    end = pos + n_frames * _FRAME_BITS
    if end > total:
        raise ValueError(
            f"MPEG-7 signature truncated: {n_frames} frames need {end} bits, file has {total}"
        )

    if n_frames == 0:
        empty = np.zeros((0, FRAME_SIZE), dtype=np.uint8)
        return Signature(width, height, (), empty)
    frames = bits[pos:end].reshape(n_frames, _FRAME_BITS)
    times = _pack_rows(frames[:, 1:33])
    sig_bytes = np.packbits(frames[:, 81:], axis=1)
    if int(sig_bytes.max()) >= 243:
        raise ValueError("MPEG-7 signature corrupt: a frame byte is out of the ternary range")
    values = _TERNARY[sig_bytes].reshape(n_frames, FRAME_SIZE)
    return Signature(width, height, times, values)


def _pack_rows(rows: npt.NDArray[np.uint8]) -> tuple[int, ...]:
    """Each row of bits (MSB first) as an unsigned integer."""
    weights = 1 << np.arange(rows.shape[1] - 1, -1, -1, dtype=np.uint64)
    return tuple(int(v) for v in (rows.astype(np.uint64) * weights).sum(axis=1))
