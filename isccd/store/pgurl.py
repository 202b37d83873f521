"""PostgreSQL store URLs: telling them apart, and showing them without their password.

A store URL is a libpq connection URI (``postgresql://user@db.example/isccd?sslmode=verify-full``)
handed to libpq as it is, so every libpq parameter passes through. The password comes from the
URL, a ``passfile`` (``~/.pgpass`` by default) or ``PGPASSWORD``, as libpq reads them; isccd
never shows it: every message, log line and ``repr`` uses :func:`redact_url`.

This module imports no database driver.
"""

from __future__ import annotations

import re

#: The URL schemes of the PostgreSQL backend (libpq accepts both).
SCHEMES = ("postgresql", "postgres")

_HIDDEN = "***"
_PASSWORD_PARAM = re.compile(r"(^|&)(password=)[^&]*", re.IGNORECASE)


def is_postgres_url(url: str) -> bool:
    """Whether ``url`` names a PostgreSQL store."""
    scheme, sep, _ = url.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


def redact_url(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***``: the one in the user information
    (``user:secret@``) and a ``password`` query parameter. Everything else is kept, so the
    result still says which server, database and options are meant.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority_end = len(rest)
    for mark in "/?#":
        found = rest.find(mark)
        if found != -1:
            authority_end = min(authority_end, found)
    # A password may hold an unencoded "@": the user information ends at the last one.
    authority, tail = rest[:authority_end], rest[authority_end:]
    userinfo, at, hosts = authority.rpartition("@")
    if at:
        user, colon, _ = userinfo.partition(":")
        authority = f"{user}:{_HIDDEN}@{hosts}" if colon else authority
    path, question, query = tail.partition("?")
    if question:
        query, hash_, fragment = query.partition("#")
        query = _PASSWORD_PARAM.sub(rf"\g<1>\g<2>{_HIDDEN}", query) + hash_ + fragment
    return f"{scheme}{sep}{authority}{path}{question}{query}"
