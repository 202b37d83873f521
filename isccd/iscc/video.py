"""Video-Code (ISO 24138 Content-Code, SubType VIDEO): a similarity hash of MPEG-7 frame
signatures.

Identical frames count once (the frames are a set: their order and repetitions do not matter).
The 380 columns of the distinct frames are summed, and the sums are WTA-hashed
(:func:`~isccd.iscc.wtahash.alg_wtahash`).

The signatures come from ffmpeg's ``signature`` filter (the extractor's job): 380 ternary values
(0, 1, 2) per frame. Any 32-bit ints are accepted, as the reference accepts any ints.

Pure: no I/O.
"""

from __future__ import annotations

import array
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from isccd.iscc._bits import require_unit_bits
from isccd.iscc.codec import MT, ST_CC, VS, encode_component
from isccd.iscc.exceptions import IsccError
from isccd.iscc.wtahash import WTA_VECTOR_LENGTH, alg_wtahash

__all__ = ["gen_video_code", "gen_video_code_v0", "soft_hash_video_v0"]

FrameSigs = Iterable[Sequence[int]] | npt.NDArray[np.integer]

# MPEG-7 values are 0, 1 and 2, but the reference accepts any ints (a conformance vector uses
# 0..379); int32 keeps the column sums of any realistic frame count exact in int64.
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1

_BAD_SHAPE = f"frame_sigs must be frames of {WTA_VECTOR_LENGTH} ints each"


#: An ``array`` typecode of exactly 32 bits: ``array.fromlist`` then refuses non-ints and values
#: beyond int32 while it copies, which is about twice as fast as ``np.asarray`` on nested lists.
_INT32_TYPECODE = next(code for code in "il" if array.array(code).itemsize == 4)


def _frames_from_array(frames: npt.NDArray[Any]) -> npt.NDArray[np.int32]:
    if frames.ndim != 2 or frames.shape[1] != WTA_VECTOR_LENGTH:
        raise IsccError(f"{_BAD_SHAPE}, got shape {frames.shape}")
    if frames.dtype.kind not in "iu":
        raise TypeError(f"frame signature values must be ints, got dtype {frames.dtype}")
    if frames.min() < _INT32_MIN or frames.max() > _INT32_MAX:
        raise IsccError("frame signature values must be 32-bit ints")
    return frames.astype(np.int32)


def _frames_from_sequences(frames: Sequence[Sequence[int]]) -> npt.NDArray[np.int32]:
    flat = array.array(_INT32_TYPECODE)
    for frame in frames:
        try:
            values = frame if isinstance(frame, list) else list(frame)
        except TypeError:
            raise TypeError(
                f"a frame signature must be a sequence, got {type(frame).__name__}"
            ) from None
        if len(values) != WTA_VECTOR_LENGTH:
            raise IsccError(f"{_BAD_SHAPE}, got one of {len(values)}")
        try:
            flat.fromlist(values)
        except TypeError:
            raise TypeError("frame signature values must be ints") from None
        except OverflowError:
            raise IsccError("frame signature values must be 32-bit ints") from None
    return np.frombuffer(flat, dtype=np.int32).reshape(-1, WTA_VECTOR_LENGTH)


def _frame_matrix(frame_sigs: FrameSigs) -> npt.NDArray[np.int32]:
    if isinstance(frame_sigs, str | bytes | bytearray | memoryview):
        raise TypeError(f"frame_sigs must be a sequence of frames, got {type(frame_sigs).__name__}")
    items = frame_sigs if isinstance(frame_sigs, np.ndarray | list | tuple) else list(frame_sigs)
    if len(items) == 0:
        raise IsccError("frame_sigs must hold at least one frame")
    if isinstance(items, np.ndarray):
        return _frames_from_array(items)
    return _frames_from_sequences(items)


def soft_hash_video_v0(frame_sigs: FrameSigs, bits: int = 64) -> bytes:
    """Similarity hash digest of a set of MPEG-7 frame signatures.

    Args:
        frame_sigs: one or more frames of 380 ints (MPEG-7 values are 0..2; any int32 is
            accepted): a sequence or iterable of sequences, or a 2-D integer numpy array with
            one row per frame.
        bits: a multiple of 32 from 32 to 256.

    Returns:
        ``bits / 8`` bytes.

    Raises:
        IsccError: no frames, a frame that is not 380 long, a value outside the int32 range, or
            ``bits`` out of range.
        TypeError: ``bits`` is not an int, or a value is not an int.
    """
    bits = require_unit_bits(bits)
    frames = _frame_matrix(frame_sigs)
    # Each frame as one opaque record: np.unique over records is much faster than over rows
    # (axis=0), and equal bytes mean equal int32 frames.
    records = np.ascontiguousarray(frames).view(np.dtype((np.void, frames.shape[1] * 4)))
    distinct = np.unique(records).view(np.int32).reshape(-1, WTA_VECTOR_LENGTH)
    return alg_wtahash(distinct.sum(axis=0, dtype=np.int64), bits)


def gen_video_code_v0(frame_sigs: FrameSigs, bits: int = 64) -> dict[str, str]:
    """Video-Code of a set of MPEG-7 frame signatures.

    Args:
        frame_sigs: see :func:`soft_hash_video_v0`.
        bits: a multiple of 32 from 32 to 256.

    Returns:
        ``{"iscc": "ISCC:EM..."}``.

    Raises:
        IsccError: see :func:`soft_hash_video_v0`.
        TypeError: see :func:`soft_hash_video_v0`.
    """
    bits = require_unit_bits(bits)
    digest = soft_hash_video_v0(frame_sigs, bits)
    code = encode_component(MT.CONTENT, ST_CC.VIDEO, VS.V0, bits, digest)
    return {"iscc": "ISCC:" + code}


def gen_video_code(frame_sigs: FrameSigs, bits: int = 64) -> dict[str, str]:
    """Video-Code with the latest algorithm (v0); see :func:`gen_video_code_v0`."""
    return gen_video_code_v0(frame_sigs, bits)
