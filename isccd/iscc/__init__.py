"""The ISCC algorithms of ISO 24138:2024, pure: no I/O, no logging, no settings.

The public names, arguments and results mirror iscc-core 1.5.0 (``gen_text_code_v0(text, bits)``
returns ``{"iscc": ..., "characters": ...}`` and so on); the conformance vectors of iscc-core
1.5.0 pass through :mod:`isccd.iscc.conformance`. Invalid input raises :class:`IsccError` (a
``ValueError``); wrong argument types raise ``TypeError``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from isccd.iscc.audio import gen_audio_code, gen_audio_code_v0, soft_hash_audio_v0
    from isccd.iscc.cdc import alg_cdc_chunks, alg_cdc_offset, alg_cdc_params
    from isccd.iscc.codec import (
        decode_header,
        decode_length,
        decode_units,
        encode_component,
        encode_header,
        encode_length,
        encode_units,
        iscc_clean,
    )
    from isccd.iscc.conformance import ConformanceReport, run_conformance
    from isccd.iscc.constants import (
        LN,
        MT,
        MULTIBASE,
        PREFIXES,
        ST,
        ST_CC,
        ST_ID,
        ST_ID_REALM,
        ST_ISCC,
        SUBTYPE_MAP,
        UNITS,
        VS,
    )
    from isccd.iscc.data import (
        DataHasher,
        DataHasherV0,
        gen_data_code,
        gen_data_code_v0,
        soft_hash_data_v0,
    )
    from isccd.iscc.dct import alg_dct
    from isccd.iscc.decompose import iscc_decompose
    from isccd.iscc.exceptions import IsccError
    from isccd.iscc.explain import iscc_explain, iscc_type_id
    from isccd.iscc.flake import (
        Flake,
        FlakeGenerator,
        gen_flake_code,
        gen_flake_code_v0,
        uid_flake_v0,
    )
    from isccd.iscc.image import gen_image_code, gen_image_code_v0, soft_hash_image_v0
    from isccd.iscc.instance import (
        InstanceHasher,
        InstanceHasherV0,
        gen_instance_code,
        gen_instance_code_v0,
        hash_instance_v0,
    )
    from isccd.iscc.iscc_code import compose_iscc_code, gen_iscc_code, gen_iscc_code_v0
    from isccd.iscc.iscc_id import (
        alg_simhash_from_iscc_id,
        gen_iscc_id,
        gen_iscc_id_v0,
        gen_iscc_id_v1,
        iscc_id_incr,
        iscc_id_incr_v0,
        soft_hash_iscc_id_v0,
    )
    from isccd.iscc.kernels import warmup
    from isccd.iscc.meta import MetaCode, gen_meta_code, gen_meta_code_v0, soft_hash_meta_v0
    from isccd.iscc.minhash import (
        alg_minhash,
        alg_minhash_64,
        alg_minhash_256,
        alg_minhash_compress,
    )
    from isccd.iscc.mixed import MixedCode, gen_mixed_code, gen_mixed_code_v0, soft_hash_codes_v0
    from isccd.iscc.multibase import (
        decode_base16,
        decode_base32,
        decode_base32hex,
        decode_base58,
        decode_base64,
        encode_base16,
        encode_base32,
        encode_base32hex,
        encode_base58,
        encode_base64,
    )
    from isccd.iscc.multiformat import encode_multiformat, normalize_multiformat
    from isccd.iscc.normalize import iscc_decode, iscc_normalize
    from isccd.iscc.seq import decode_seq, encode_seq, read_unit
    from isccd.iscc.simhash import alg_simhash
    from isccd.iscc.similarity import (
        hamming_distance,
        iscc_compare,
        iscc_distance,
        iscc_distance_bytes,
        iscc_nph_compare,
        iscc_nph_distance_bytes,
        iscc_nph_similarity_bytes,
        iscc_similarity,
    )
    from isccd.iscc.sum import SumHasher, gen_sum_code_v0
    from isccd.iscc.text import gen_text_code, gen_text_code_v0, soft_hash_text_v0
    from isccd.iscc.textnorm import (
        sliding_window,
        text_clean,
        text_collapse,
        text_remove_newlines,
        text_trim,
    )
    from isccd.iscc.validate import iscc_validate, iscc_validate_mf
    from isccd.iscc.varint import decode_uvarint, encode_uvarint
    from isccd.iscc.video import gen_video_code, gen_video_code_v0, soft_hash_video_v0
    from isccd.iscc.wtahash import alg_wtahash

#: Where each public name lives. Submodules are imported on first use of one of their names
#: (PEP 562): decoding or comparing codes (``isccd explain``, ``isccd compare``, the server)
#: then never imports numpy, which the algorithms over content need. A test keeps this map,
#: the imports above and ``__all__`` equal.
_SUBMODULES: dict[str, tuple[str, ...]] = {
    "audio": ("gen_audio_code", "gen_audio_code_v0", "soft_hash_audio_v0"),
    "cdc": ("alg_cdc_chunks", "alg_cdc_offset", "alg_cdc_params"),
    "codec": (
        "decode_header",
        "decode_length",
        "decode_units",
        "encode_component",
        "encode_header",
        "encode_length",
        "encode_units",
        "iscc_clean",
    ),
    "conformance": ("ConformanceReport", "run_conformance"),
    "constants": (
        "LN",
        "MT",
        "MULTIBASE",
        "PREFIXES",
        "ST",
        "ST_CC",
        "ST_ID",
        "ST_ID_REALM",
        "ST_ISCC",
        "SUBTYPE_MAP",
        "UNITS",
        "VS",
    ),
    "data": (
        "DataHasher",
        "DataHasherV0",
        "gen_data_code",
        "gen_data_code_v0",
        "soft_hash_data_v0",
    ),
    "dct": ("alg_dct",),
    "decompose": ("iscc_decompose",),
    "exceptions": ("IsccError",),
    "explain": ("iscc_explain", "iscc_type_id"),
    "flake": ("Flake", "FlakeGenerator", "gen_flake_code", "gen_flake_code_v0", "uid_flake_v0"),
    "image": ("gen_image_code", "gen_image_code_v0", "soft_hash_image_v0"),
    "instance": (
        "InstanceHasher",
        "InstanceHasherV0",
        "gen_instance_code",
        "gen_instance_code_v0",
        "hash_instance_v0",
    ),
    "iscc_code": ("compose_iscc_code", "gen_iscc_code", "gen_iscc_code_v0"),
    "iscc_id": (
        "alg_simhash_from_iscc_id",
        "gen_iscc_id",
        "gen_iscc_id_v0",
        "gen_iscc_id_v1",
        "iscc_id_incr",
        "iscc_id_incr_v0",
        "soft_hash_iscc_id_v0",
    ),
    "kernels": ("warmup",),
    "meta": ("MetaCode", "gen_meta_code", "gen_meta_code_v0", "soft_hash_meta_v0"),
    "minhash": ("alg_minhash", "alg_minhash_64", "alg_minhash_256", "alg_minhash_compress"),
    "mixed": ("MixedCode", "gen_mixed_code", "gen_mixed_code_v0", "soft_hash_codes_v0"),
    "multibase": (
        "decode_base16",
        "decode_base32",
        "decode_base32hex",
        "decode_base58",
        "decode_base64",
        "encode_base16",
        "encode_base32",
        "encode_base32hex",
        "encode_base58",
        "encode_base64",
    ),
    "multiformat": ("encode_multiformat", "normalize_multiformat"),
    "normalize": ("iscc_decode", "iscc_normalize"),
    "seq": ("decode_seq", "encode_seq", "read_unit"),
    "simhash": ("alg_simhash",),
    "similarity": (
        "hamming_distance",
        "iscc_compare",
        "iscc_distance",
        "iscc_distance_bytes",
        "iscc_nph_compare",
        "iscc_nph_distance_bytes",
        "iscc_nph_similarity_bytes",
        "iscc_similarity",
    ),
    "sum": ("SumHasher", "gen_sum_code_v0"),
    "text": ("gen_text_code", "gen_text_code_v0", "soft_hash_text_v0"),
    "textnorm": (
        "sliding_window",
        "text_clean",
        "text_collapse",
        "text_remove_newlines",
        "text_trim",
    ),
    "validate": ("iscc_validate", "iscc_validate_mf"),
    "varint": ("decode_uvarint", "encode_uvarint"),
    "video": ("gen_video_code", "gen_video_code_v0", "soft_hash_video_v0"),
    "wtahash": ("alg_wtahash",),
}
_HOME = {name: module for module, names in _SUBMODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    """Import the submodule holding ``name`` and keep ``name`` here for the next use."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


__all__ = [
    "LN",
    "MT",
    "MULTIBASE",
    "PREFIXES",
    "ST",
    "ST_CC",
    "ST_ID",
    "ST_ID_REALM",
    "ST_ISCC",
    "SUBTYPE_MAP",
    "UNITS",
    "VS",
    "ConformanceReport",
    "DataHasher",
    "DataHasherV0",
    "Flake",
    "FlakeGenerator",
    "InstanceHasher",
    "InstanceHasherV0",
    "IsccError",
    "MetaCode",
    "MixedCode",
    "SumHasher",
    "alg_cdc_chunks",
    "alg_cdc_offset",
    "alg_cdc_params",
    "alg_dct",
    "alg_minhash",
    "alg_minhash_64",
    "alg_minhash_256",
    "alg_minhash_compress",
    "alg_simhash",
    "alg_simhash_from_iscc_id",
    "alg_wtahash",
    "compose_iscc_code",
    "decode_base16",
    "decode_base32",
    "decode_base32hex",
    "decode_base58",
    "decode_base64",
    "decode_header",
    "decode_length",
    "decode_seq",
    "decode_units",
    "decode_uvarint",
    "encode_base16",
    "encode_base32",
    "encode_base32hex",
    "encode_base58",
    "encode_base64",
    "encode_component",
    "encode_header",
    "encode_length",
    "encode_multiformat",
    "encode_seq",
    "encode_units",
    "encode_uvarint",
    "gen_audio_code",
    "gen_audio_code_v0",
    "gen_data_code",
    "gen_data_code_v0",
    "gen_flake_code",
    "gen_flake_code_v0",
    "gen_image_code",
    "gen_image_code_v0",
    "gen_instance_code",
    "gen_instance_code_v0",
    "gen_iscc_code",
    "gen_iscc_code_v0",
    "gen_iscc_id",
    "gen_iscc_id_v0",
    "gen_iscc_id_v1",
    "gen_meta_code",
    "gen_meta_code_v0",
    "gen_mixed_code",
    "gen_mixed_code_v0",
    "gen_sum_code_v0",
    "gen_text_code",
    "gen_text_code_v0",
    "gen_video_code",
    "gen_video_code_v0",
    "hamming_distance",
    "hash_instance_v0",
    "iscc_clean",
    "iscc_compare",
    "iscc_decode",
    "iscc_decompose",
    "iscc_distance",
    "iscc_distance_bytes",
    "iscc_explain",
    "iscc_id_incr",
    "iscc_id_incr_v0",
    "iscc_normalize",
    "iscc_nph_compare",
    "iscc_nph_distance_bytes",
    "iscc_nph_similarity_bytes",
    "iscc_similarity",
    "iscc_type_id",
    "iscc_validate",
    "iscc_validate_mf",
    "normalize_multiformat",
    "read_unit",
    "run_conformance",
    "sliding_window",
    "soft_hash_audio_v0",
    "soft_hash_codes_v0",
    "soft_hash_data_v0",
    "soft_hash_image_v0",
    "soft_hash_iscc_id_v0",
    "soft_hash_meta_v0",
    "soft_hash_text_v0",
    "soft_hash_video_v0",
    "text_clean",
    "text_collapse",
    "text_remove_newlines",
    "text_trim",
    "uid_flake_v0",
    "warmup",
]
