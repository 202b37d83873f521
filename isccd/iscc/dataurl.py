"""Base64 data-URLs (RFC 2397), the form in which the Meta-Code carries extended metadata.

``data:[<media type>][;<attribute>=<value>]*;base64,<standard base64 with padding>``

Only base64 data-URLs are read: the Meta-Code hashes bytes. The header grammar is the one
iscc-core 1.5.0 accepts (lower-case media type, attribute values that may be percent-encoded).
The data must be standard base64 with correct padding; where the reference silently drops
characters that are not base64 (so two different URLs hash alike), we refuse the URL.

Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import re

from isccd.iscc.exceptions import IsccError

__all__ = ["decode_data_url", "encode_data_url"]

_DATA_URL = re.compile(
    r"data:"
    r"(?:[a-z][a-z0-9\-]+/[a-z][\w\-.+]+)?"  # media type
    r"(?:;[\w\-.+]+=[\w\-.+%]+)*"  # parameters
    r";base64,"
    r"(?P<data>[A-Za-z0-9+/]+={0,2})"
)


def decode_data_url(url: str) -> bytes:
    """The bytes a base64 data-URL carries.

    Args:
        url: e.g. ``"data:application/json;base64,eyJhIjoxfQ=="``.

    Returns:
        The decoded data (never empty).

    Raises:
        IsccError: not a base64 data-URL, or malformed base64.
        TypeError: ``url`` is not a ``str``.
    """
    if not isinstance(url, str):
        raise TypeError(f"data-URL must be a str, got {type(url).__name__}")
    match = _DATA_URL.fullmatch(url)
    if match is None:
        raise IsccError(
            "metadata string must be a base64 data-URL (RFC 2397): "
            "data:[<media type>][;<attribute>=<value>]*;base64,<data>"
        )
    data = match["data"]
    if len(data) % 4:
        raise IsccError("malformed base64 in data-URL: incorrect padding")
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error as e:
        raise IsccError(f"malformed base64 in data-URL: {e}") from None


def encode_data_url(media_type: str, data: bytes) -> str:
    """``data:<media_type>;base64,<data in standard base64 with padding>``."""
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"
