"""PostgreSQL store URLs: telling them apart, checking them, and showing them without secrets.

A store URL is a libpq connection URI (``postgresql://user@db.example/isccd?sslmode=verify-full``)
handed to libpq as it is, so every libpq parameter passes through. The password comes from the
URL, a ``passfile`` (``~/.pgpass`` by default) or ``PGPASSWORD``, as libpq reads them; isccd
never shows it: every message, log line and ``repr`` uses :func:`redact_url`.

What is secret is decided by parsing the text exactly as libpq does (``conninfo_uri_parse`` and
``conninfo_parse`` of ``fe-connect.c``, the parser behind ``PQconninfoParse`` and psycopg's
``conninfo_to_dict``): a pattern that guesses where the password ends is fooled by the forms
libpq accepts and the pattern does not expect (an unencoded ``#`` in the password, a
percent-encoded parameter name). The text of every secret parameter (:data:`SECRET_KEYWORDS`)
is replaced by ``***`` where it stands, so the rest reads as written. Beyond libpq, what a
person meant is hidden too: the secrets of the URL read as RFC 3986 reads it, and the user
information up to its last ``@`` (a password holding an unencoded ``@`` or ``/`` is cut short
by libpq, and what follows the cut is still the user's secret). Text libpq
does not accept (an unknown parameter, a bad percent-escape) is hidden whole, since nothing
says where a secret in it would end; :func:`url_fault` says why, without quoting the text.

This module imports no database driver.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

#: The URL schemes of the PostgreSQL backend (libpq accepts both, written in lower case).
SCHEMES = ("postgresql", "postgres")

#: Parameters whose values are secrets.
SECRET_KEYWORDS = frozenset(
    {"password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key"}
)

#: The parameters libpq 18 knows (``PQconndefaults``); any other makes it refuse the text.
KEYWORDS = SECRET_KEYWORDS | frozenset(
    {
        "service", "user", "passfile", "channel_binding", "connect_timeout", "dbname", "host",
        "hostaddr", "port", "client_encoding", "options", "application_name",
        "fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
        "keepalives_count", "tcp_user_timeout", "sslmode", "sslnegotiation", "sslcompression",
        "sslcert", "sslkey", "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir", "sslsni",
        "requirepeer", "require_auth", "min_protocol_version", "max_protocol_version",
        "ssl_min_protocol_version", "ssl_max_protocol_version", "gssencmode", "krbsrvname",
        "gsslib", "gssdelegation", "replication", "target_session_attrs",
        "load_balance_hosts", "oauth_issuer", "oauth_client_id", "oauth_scope",
    }
)  # fmt: skip

_HIDDEN = "***"
_PREFIXES = ("postgresql://", "postgres://")
_SPACE = " \t\n\v\f\r"  # isspace() in the C locale


class _Invalid(Exception):
    """Text libpq refuses; the message says why, never quoting it."""


@dataclass(frozen=True, slots=True)
class _Param:
    """One parameter as libpq reads it: its name, its value, and where the value's text is."""

    keyword: str
    value: str
    start: int
    end: int


def is_postgres_url(url: str) -> bool:
    """Whether ``url`` names a PostgreSQL store."""
    scheme, sep, _ = url.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


def libpq_url(url: str) -> str:
    """``url`` as libpq reads it as a URI: its scheme in lower case (libpq recognizes only
    that; another case would be read as ``key=value`` text, and refused quoting it whole)."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme.lower()}{sep}{rest}" if sep and scheme.lower() in SCHEMES else url


def conninfo_params(conninfo: str) -> dict[str, str]:
    """The parameters libpq reads from a connection URI or ``key=value`` string, as
    ``conninfo_to_dict`` gives them (the last of a repeated name wins).

    Raises:
        ValueError: libpq refuses the text; the message does not quote it.
    """
    try:
        params = _parse(libpq_url(conninfo))
    except _Invalid as exc:
        raise ValueError(str(exc)) from None
    return {p.keyword: p.value for p in params}


def url_fault(url: str) -> str | None:
    """Why libpq refuses the connection string ``url`` (without quoting it), or ``None``."""
    try:
        _parse(libpq_url(url))
    except _Invalid as exc:
        return str(exc)
    return None


def redact_url(url: str) -> str:
    """``url`` with every secret replaced by ``***`` (see the module docstring): a PostgreSQL
    URI or ``key=value`` string as libpq reads it, the user information of any other URL but
    ``sqlite://``. Everything else is kept, so the result still says which server, database
    and options are meant.
    """
    scheme, sep, _ = url.partition("://")
    text, nul, _ = url.partition("\0")  # libpq reads a C string: nothing after a NUL
    postgres = bool(sep) and scheme.lower() in SCHEMES
    if sep and not postgres:
        if scheme.lower() == "sqlite":
            return url
        spans = _as_written(text, len(scheme) + 3)
    elif not sep and "=" not in url:
        return url  # a file path (a SQLite store)
    else:
        try:
            params = _parse(libpq_url(text))
        except _Invalid:
            return f"{scheme}{sep}{_HIDDEN}" if postgres else _HIDDEN
        spans = _secrets(params)
        if postgres:
            spans += _as_written(text, len(scheme) + 3)
    return _replace(text, spans) + (_HIDDEN if nul else "")


def _secrets(params: list[_Param]) -> list[tuple[int, int]]:
    """The spans of the secret values; a ``dbname`` that is itself a connection string (which
    ``PQconnectdbParams`` would expand) is hidden whole."""
    return [
        (p.start, p.end)
        for p in params
        if p.keyword in SECRET_KEYWORDS
        or (p.keyword == "dbname" and (p.value.startswith(_PREFIXES) or "=" in p.value))
    ]


def _as_written(url: str, start: int) -> list[tuple[int, int]]:
    """The spans of the secrets of a URL read as RFC 3986 reads it (the authority ends at the
    first ``/``, ``?`` or ``#``; names compared in any case), but for a ``#`` in the query,
    which is taken as part of a value (``password=#x`` means a password, not a fragment): what
    a person meant may be what libpq reads otherwise (``?application_name=a@b&password=x`` is
    a user and a host to libpq)."""
    spans = _userinfo(url, start)
    ends = [i for i in (url.find(c, start) for c in "/?#") if i != -1]
    authority_end = min(ends, default=len(url))
    at = url.rfind("@", start, authority_end)
    colon = url.find(":", start, at)
    if at != -1 and colon != -1:
        spans.append((colon + 1, at))
    query = url.find("?", start)
    if query == -1:
        return spans
    p = query + 1
    for part in url[query + 1 :].split("&"):
        name, equals, _ = part.partition("=")
        if equals and urllib.parse.unquote(name).lower() in SECRET_KEYWORDS:
            spans.append((p + len(name) + 1, p + len(part)))
        p += len(part) + 1
    return spans


def _userinfo(url: str, start: int) -> list[tuple[int, int]]:
    """The span of a URI's password as people write it: from the first ``:`` to the last
    ``@`` before the ``/`` or ``?`` that follows the first ``@``."""
    first_at = url.find("@", start)
    if first_at == -1:
        return []
    stop = len(url)
    for mark in "/?":
        found = url.find(mark, first_at)
        if found != -1:
            stop = min(stop, found)
    end = url.rfind("@", start, stop)
    colon = url.find(":", start, end)
    return [(colon + 1, end)] if colon != -1 else []


def _replace(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (merged where they overlap) replaced by ``***``."""
    merged: list[list[int]] = []
    for start, end in sorted(s for s in spans if s[0] < s[1]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, at = [], 0
    for start, end in merged:
        out += [text[at:start], _HIDDEN]
        at = end
    out.append(text[at:])
    return "".join(out)


def _parse(conninfo: str) -> list[_Param]:
    conninfo = conninfo.partition("\0")[0]
    for prefix in _PREFIXES:
        if conninfo.startswith(prefix):
            return _parse_uri(conninfo, len(prefix))
    return _parse_pairs(conninfo)


def _decode(text: str) -> str:
    """libpq's ``conninfo_uri_decode``: spaces around the value dropped, spaces inside it
    refused (libpq 17 on), ``%XX`` escapes decoded, ``%00`` refused."""
    stripped = text.strip(" ")
    if " " in stripped:
        raise _Invalid("a space inside a value (write it %20)")
    raw = stripped.encode("utf-8", "surrogateescape")
    if b"%" not in raw:
        return stripped
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i] != 0x25:
            out.append(raw[i])
            i += 1
            continue
        digits = raw[i + 1 : i + 3]
        try:
            value = int(digits, 16) if len(digits) == 2 and digits.isalnum() else -1
        except ValueError:
            value = -1
        if value < 0:
            raise _Invalid("an invalid percent-encoded token")
        if value == 0:
            raise _Invalid("%00 in a percent-encoded value")
        out.append(value)
        i += 3
    return out.decode("utf-8", "surrogateescape")


def _stored(keyword: str, value: str, start: int, end: int) -> _Param:
    """A parameter as ``conninfo_storeval`` keeps it."""
    if keyword == "requiressl":
        keyword, value = "sslmode", "require" if value.startswith("1") else "prefer"
    if keyword not in KEYWORDS:
        raise _Invalid("an unknown parameter")
    return _Param(keyword, value, start, end)


def _parse_uri(uri: str, p: int) -> list[_Param]:
    """libpq's ``conninfo_uri_parse_options`` from just after the prefix."""
    out, p = _credentials(uri, p)
    hosts, p, prev = _netlocs(uri, p)
    out += hosts
    n = len(uri)
    if prev and prev != "?":
        p += 1
        first = p
        while p < n and uri[p] != "?":
            p += 1
        if p > first:
            out.append(_stored("dbname", _decode(uri[first:p]), first, p))
        prev = uri[p] if p < n else ""
    if prev:
        out += _query(uri, p + 1)
    return out


def _credentials(uri: str, p: int) -> tuple[list[_Param], int]:
    """The user and password before the first ``@`` (when no ``/`` comes first), and where
    the hosts start."""
    out: list[_Param] = []
    n = len(uri)
    start = p
    while p < n and uri[p] not in "@/":
        p += 1
    if p >= n or uri[p] != "@":
        return out, start
    q = start
    while uri[q] not in ":@":
        q += 1
    if q > start:
        out.append(_stored("user", _decode(uri[start:q]), start, q))
    if uri[q] == ":":
        at = uri.index("@", q)
        if at > q + 1:
            out.append(_stored("password", _decode(uri[q + 1 : at]), q + 1, at))
        q = at
    return out, q + 1


def _netlocs(uri: str, p: int) -> tuple[list[_Param], int, str]:
    """The ``host[:port]`` list, where it ends, and the character that ends it."""
    n = len(uri)
    hosts: list[str] = []
    ports: list[str] = []
    while True:
        if p < n and uri[p] == "[":
            first = p + 1
            end = uri.find("]", first)
            if end == -1:
                raise _Invalid("no ']' closing an IPv6 host address")
            if end == first:
                raise _Invalid("an empty IPv6 host address")
            hosts.append(uri[first:end])
            p = end + 1
            if p < n and uri[p] not in ":/?,":
                raise _Invalid("an unexpected character after an IPv6 host address")
        else:
            first = p
            while p < n and uri[p] not in ":/?,":
                p += 1
            hosts.append(uri[first:p])
        prev = uri[p] if p < n else ""
        port = ""
        if prev == ":":
            p += 1
            first = p
            while p < n and uri[p] not in "/?,":
                p += 1
            port = uri[first:p]
            prev = uri[p] if p < n else ""
        ports.append(port)
        if prev != ",":
            break
        p += 1
    out = []
    host, port = ",".join(hosts), ",".join(ports)
    if host:
        out.append(_stored("host", _decode(host), -1, -1))
    if port:
        out.append(_stored("port", _decode(port), -1, -1))
    return out, p, prev


def _query(uri: str, p: int) -> list[_Param]:
    """libpq's ``conninfo_uri_parse_params``."""
    out = []
    n = len(uri)
    while p < n:
        first, equals = p, -1
        while True:
            if p < n and uri[p] == "=":
                if equals != -1:
                    raise _Invalid("an extra '=' in a query parameter")
                equals = p
                p += 1
            elif p >= n or uri[p] == "&":
                if equals == -1:
                    raise _Invalid("a query parameter without '='")
                end = p
                p = min(p + 1, n)
                break
            else:
                p += 1
        keyword, value = _decode(uri[first:equals]), _decode(uri[equals + 1 : end])
        if keyword == "ssl" and value == "true":
            keyword, value = "sslmode", "require"
        out.append(_stored(keyword, value, equals + 1, end))
    return out


def _parse_pairs(text: str) -> list[_Param]:
    """libpq's ``conninfo_parse``: ``key = value`` pairs, values quoted with ``'`` or
    escaped with ``\\``."""
    out = []
    n = len(text)
    p = 0
    while p < n:
        if text[p] in _SPACE:
            p += 1
            continue
        first = p
        while p < n and text[p] != "=" and text[p] not in _SPACE:
            p += 1
        keyword = text[first:p]
        while p < n and text[p] in _SPACE:
            p += 1
        if p >= n or text[p] != "=":
            raise _Invalid("a parameter without '='")
        p += 1
        while p < n and text[p] in _SPACE:
            p += 1
        value, first, end, p = _pair_value(text, p)
        out.append(_stored(keyword, value, first, end))
    return out


def _pair_value(text: str, p: int) -> tuple[str, int, int, int]:
    """The value starting at ``p``: its text, where it is written, and where the next
    parameter starts."""
    n = len(text)
    value: list[str] = []
    quoted = p < n and text[p] == "'"
    p += quoted
    first = p
    while True:
        if p >= n:
            if quoted:
                raise _Invalid("an unterminated quoted string")
            return "".join(value), first, p, p
        c = text[p]
        if c == "\\":
            p += 1
            if p < n:
                value.append(text[p])
                p += 1
        elif (quoted and c == "'") or (not quoted and c in _SPACE):
            return "".join(value), first, p, p + 1
        else:
            value.append(c)
            p += 1
