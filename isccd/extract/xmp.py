"""Title and description embedded in images: XMP, IPTC and EXIF, read through Pillow.

The ISCC SDK reads image metadata with exiv2 and maps it with its ``IMAGE_META_MAP``; this module
reads the same tags from what Pillow exposes (the XMP packet, the IPTC block, EXIF IFD0) and
names them the way exiv2 does (``Xmp.dc.title``, ``Iptc.Application2.ObjectName``, ...), so the
SDK's table applies unchanged.

XMP is parsed with the standard library after refusing any document type declaration: an XMP
packet never has one, and refusing it rules out entity-expansion attacks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from isccd.extract.meta import Metadata, pick

if TYPE_CHECKING:  # Pillow and the XML parser are loaded by the first image read
    import xml.etree.ElementTree as ET

    from PIL import Image

#: The SDK's IMAGE_META_MAP, for the fields the Meta-Code uses, in its order of preference.
IMAGE_META_FIELDS: tuple[tuple[str, str], ...] = (
    ("Xmp.iscc.name", "name"),
    ("Xmp.iscc.description", "description"),
    ("Xmp.iscc.meta", "meta"),
    ("Xmp.dc.title", "name"),
    ("Xmp.xmp.Nickname", "name"),
    ("Xmp.xmpDM.shotName", "name"),
    ("Xmp.photoshop.Headline", "name"),
    ("Xmp.iptcExt.AOTitle", "name"),
    ("Iptc.Application2.Headline", "name"),
    ("Iptc.Application2.BylineTitle", "name"),
    ("Iptc.Application2.ObjectName", "name"),
    ("Exif.Image.XPTitle", "name"),
    ("Xmp.dc.description", "description"),
)

#: XMP namespaces by URI, with the prefixes exiv2 uses in its keys.
XMP_PREFIXES: dict[str, str] = {
    "http://purl.org/iscc/schema/": "iscc",
    "http://purl.org/dc/elements/1.1/": "dc",
    "http://ns.adobe.com/xap/1.0/": "xmp",
    "http://ns.adobe.com/xmp/1.0/DynamicMedia/": "xmpDM",
    "http://ns.adobe.com/photoshop/1.0/": "photoshop",
    "http://iptc.org/std/Iptc4xmpExt/2008-02-29/": "iptcExt",
}

_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"

#: IPTC (record, dataset) -> exiv2 key.
_IPTC_KEYS = {
    (2, 5): "Iptc.Application2.ObjectName",
    (2, 85): "Iptc.Application2.BylineTitle",
    (2, 105): "Iptc.Application2.Headline",
}
_EXIF_XPTITLE = 0x9C9B


def image_metadata(img: Image.Image) -> tuple[Metadata, str | None]:
    """The Meta-Code fields embedded in an opened image.

    A damaged metadata block costs only that block: the others are still read, and the file
    name stands in for a missing title.

    Returns:
        The fields found, and a description of the first block that could not be read (or
        ``None`` when all were fine).
    """
    values: dict[str, str] = {}
    problem: str | None = None
    readers: tuple[tuple[str, Callable[[Image.Image], dict[str, str]]], ...] = (
        ("XMP", _xmp_values),
        ("IPTC", _iptc_values),
        ("EXIF", _exif_values),
    )
    for label, reader in readers:
        try:
            found = reader(img)
        except Exception as exc:
            # Parsers of untrusted tag blocks raise arbitrary exception types; record and go on.
            problem = problem or f"unreadable {label} metadata ({type(exc).__name__}: {exc})"
            continue
        for key, value in found.items():
            values.setdefault(key, value)
    return pick(IMAGE_META_FIELDS, values), problem


def xmp_properties(packet: bytes | str) -> dict[str, str]:
    """Top-level XMP properties keyed like exiv2 (``Xmp.dc.title``), as strings.

    Language alternatives give the ``x-default`` entry (else the first); bags and sequences
    give their items joined with ``", "``. Properties in unknown namespaces are left out.

    Raises:
        ValueError: The packet declares a document type (refused), or is not well-formed XML.
    """
    data = packet.encode("utf-8") if isinstance(packet, str) else packet
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ValueError("XMP packet with a document type declaration refused")
    import xml.etree.ElementTree as ET  # noqa: PLC0415 -- see the imports

    try:
        # Safe: document type declarations (the entity-expansion vector) were refused above,
        # and expat never fetches external resources.
        root = ET.fromstring(data)  # noqa: S314
    except ET.ParseError as exc:
        raise ValueError(f"malformed XMP: {exc}") from exc
    out: dict[str, str] = {}
    for desc in root.iter(f"{{{_RDF}}}Description"):
        for attr, value in desc.attrib.items():
            key = _exiv2_key(attr)
            if key and value.strip():
                out.setdefault(key, value.strip())
        for prop in desc:
            key = _exiv2_key(prop.tag)
            if key:
                value = _xmp_value(prop)
                if value:
                    out.setdefault(key, value)
    return out


def _exiv2_key(tag: str) -> str | None:
    if not tag.startswith("{"):
        return None
    uri, _, local = tag[1:].partition("}")
    prefix = XMP_PREFIXES.get(uri)
    return f"Xmp.{prefix}.{local}" if prefix else None


def _xmp_value(prop: ET.Element) -> str:
    container = next(iter(prop), None)
    if container is None:
        return (prop.text or "").strip()
    if container.tag == f"{{{_RDF}}}Alt":
        items = list(container)
        default = [li for li in items if li.get(_XML_LANG) == "x-default"]
        chosen = (default or items)[:1]
        return (chosen[0].text or "").strip() if chosen else ""
    if container.tag in (f"{{{_RDF}}}Bag", f"{{{_RDF}}}Seq"):
        return ", ".join((li.text or "").strip() for li in container if (li.text or "").strip())
    return ""


def _xmp_values(img: Image.Image) -> dict[str, str]:
    packet = img.info.get("xmp")
    if not packet:
        return {}
    return xmp_properties(packet)


def _iptc_values(img: Image.Image) -> dict[str, str]:
    from PIL import ImageFile, IptcImagePlugin  # noqa: PLC0415 -- see the imports

    if not isinstance(img, ImageFile.ImageFile):
        return {}
    info = IptcImagePlugin.getiptcinfo(img)
    if not info:
        return {}
    out: dict[str, str] = {}
    for dataset, key in _IPTC_KEYS.items():
        raw = info.get(dataset)
        if isinstance(raw, list):
            raw = raw[0] if raw else None
        if isinstance(raw, bytes) and raw.strip():
            out[key] = _decode_legacy(raw).strip()
    return out


def _exif_values(img: Image.Image) -> dict[str, str]:
    raw = img.getexif().get(_EXIF_XPTITLE)
    if isinstance(raw, tuple):  # some files store XP* tags as a tuple of byte values
        raw = bytes(raw)
    if not isinstance(raw, bytes):
        return {}
    title = raw.decode("utf-16-le", "replace").split("\x00", 1)[0].strip()
    return {"Exif.Image.XPTitle": title} if title else {}


def _decode_legacy(raw: bytes) -> str:
    """UTF-8 when valid, else Latin-1 (IPTC's default without a coded character set)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")
