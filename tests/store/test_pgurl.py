"""Store URLs are read as libpq reads them, and shown without their secrets.

libpq itself is the oracle: psycopg's ``conninfo_to_dict`` (``PQconninfoParse``) says which
parameters a text holds. For every form libpq accepts (URIs and ``key=value`` strings; the
password in the user information, unencoded ``#``, ``?``, ``&``, ``@`` or ``/`` in it, in a
query parameter whose name is percent-encoded, quoted or escaped in ``key=value`` text;
``sslpassword``; ``passfile``), isccd's parse gives the same parameters and its redaction shows
no secret; text libpq refuses is refused too, and shown hidden.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

psycopg = pytest.importorskip("psycopg")
from psycopg.conninfo import conninfo_to_dict  # noqa: E402

from isccd.errors import StoreError  # noqa: E402
from isccd.store import open_store  # noqa: E402
from isccd.store.pgurl import (  # noqa: E402
    SECRET_KEYWORDS,
    conninfo_params,
    libpq_url,
    redact_url,
    url_fault,
)

#: Every secret in these texts holds it (the redaction must not show it, in any encoding).
MARK = "Sekr1t"

FORMS = [
    f"postgresql://u:{MARK}@h/db",
    f"postgres://u:{MARK}@h:5433/db?sslmode=require",
    f"postgresql://u:pa#{MARK}@h/db",  # the issue's form: '#' is no fragment to libpq
    f"postgresql://u:{MARK}#x@h/db?sslmode=disable#y",
    f"postgresql://u:{MARK}?x@h/db",
    f"postgresql://u:{MARK}&x=y@h/db",
    f"postgresql://u:{MARK}%40x@h/db",
    f"postgresql://u:p@{MARK}@h/db",  # libpq cuts at the first '@': the rest is hidden too
    f"postgresql://u:p/{MARK}@h/db",
    f"postgresql://u:{MARK}@[::1]:5432/db",
    f"postgresql://u:{MARK}@h1:5432,h2:5433/db",
    f"postgresql://h/db?password={MARK}",
    f"postgresql://h/db?%70assword={MARK}",  # the issue's form: a percent-encoded name
    f"postgresql://h/db?pass%77ord={MARK}&sslmode=disable",
    f"postgresql://h/db?%70%61%73%73%77%6F%72%64={MARK}",
    f"postgresql://h/db?password={MARK}&password={MARK}2",
    f"postgresql://h/db?password={MARK}#x",
    # A user and a host to libpq, a password beginning with '#' to a person reading it.
    f"postgresql://h?application_name=a@b&password=#{MARK}",
    f"postgresql://h/db?sslpassword={MARK}&sslkey=/k.pem",
    f"postgresql://u:{MARK}@h/db?passfile=/etc/isccd/pgpass",
    f"postgresql:///db?host=/run/pg&password={MARK}",
    f"postgresql://%2Frun%2Fpg/db?user=u&password={MARK}",
    f"postgresql://u:{MARK}@/db?host=%2Ftmp&port=5433&application_name=a%40b",
    f"postgresql://u:{MARK}@h/db?ssl=true",
    f"postgresql://u:{MARK}@h/db?requiressl=1",
    f"postgresql://u:{MARK}@h/dbname?options=-c%20x%3Dy",
    f"POSTGRESQL://u:{MARK}@h/db",
    f"host=h password={MARK} dbname=d",
    f"host=h password='{MARK} with spaces' dbname=d",
    f"host=h password='{MARK}\\'quote' dbname=d",
    f"host=h password = {MARK}\\ escaped",
    f"password={MARK}",
    f"\thost=h\npassword={MARK}\n",
    f"host=h sslpassword={MARK}",
    f"host=h passfile=/home/u/.pgpass password={MARK}",
    f"dbname=postgresql://u:{MARK}@h/db",
]

#: Texts libpq refuses (each holding a secret); isccd refuses them and shows them hidden.
REFUSED = [
    f"postgresql://h/db?PASSWORD={MARK}",
    f"postgresql://h/db?password={MARK}=",
    "postgresql://h/db?password",
    f"postgresql://u:{MARK}@h/db?bogus=1",
    f"postgresql://u:{MARK}@[::1/db",
    f"postgresql://u:{MARK}@[]/db",
    f"postgresql://u:{MARK}@[::1]x/db",
    f"postgresql://u:{MARK}%zz@h/db",
    f"postgresql://u:{MARK}%00@h/db",
    f"postgresql://u:{MARK}%4@h/db",
    f" postgresql://u:{MARK}@h/db?x=y",
    f"host=h password='{MARK}",
    f"host=h password {MARK}",
    f"host=h {MARK}",
]


def _shows_a_secret(shown: str) -> bool:
    decoded = urllib.parse.unquote(shown)
    return MARK in shown or MARK in decoded or MARK.lower() in decoded.lower()


def _libpq(text: str) -> dict[str, str] | None:
    try:
        return {k: str(v) for k, v in conninfo_to_dict(text).items() if v is not None}
    except psycopg.ProgrammingError:
        return None


@pytest.mark.parametrize("text", FORMS)
def test_every_form_libpq_accepts_is_read_as_libpq_reads_it(text: str) -> None:
    expected = _libpq(libpq_url(text))
    assert expected is not None, "libpq accepts it"
    assert conninfo_params(text) == expected
    assert url_fault(text) is None


@pytest.mark.parametrize("text", FORMS)
def test_no_form_libpq_accepts_shows_its_secret(text: str) -> None:
    shown = redact_url(text)
    assert not _shows_a_secret(shown), shown
    assert "***" in shown
    # What is shown is still the same connection, its secrets hidden.
    again = _libpq(libpq_url(shown))
    params = conninfo_params(text)
    # libpq reads another host than the person meant (cut at an '@' or '/' of the password,
    # or a query read as user information, its secret inside the host).
    cut = (
        "p@" in text
        or "p/" in text
        or any(
            f"{secret}=" in value
            for key, value in params.items()
            if key not in SECRET_KEYWORDS
            for secret in SECRET_KEYWORDS
        )
    )
    if again is not None and not cut:
        assert {k: v for k, v in again.items() if k not in SECRET_KEYWORDS | {"dbname"}} == {
            k: v for k, v in params.items() if k not in SECRET_KEYWORDS | {"dbname"}
        }


@pytest.mark.parametrize("text", REFUSED)
def test_what_libpq_refuses_is_refused_and_hidden(text: str) -> None:
    assert _libpq(libpq_url(text)) is None
    with pytest.raises(ValueError) as caught:
        conninfo_params(text)
    assert MARK not in str(caught.value)
    assert url_fault(text) is not None and MARK not in str(url_fault(text))
    assert not _shows_a_secret(redact_url(text))


def test_the_forms_the_issue_names() -> None:
    assert redact_url("postgresql://u:pa#ss@db/isccd") == "postgresql://u:***@db/isccd"
    assert redact_url("postgresql://db/isccd?%70assword=pw&x") == "postgresql://***"
    assert (
        redact_url("postgresql://db/isccd?%70assword=pw") == "postgresql://db/isccd?%70assword=***"
    )
    assert (
        redact_url("postgresql://u@db/isccd?passfile=/p") == "postgresql://u@db/isccd?passfile=/p"
    )
    assert redact_url("host=db password='p w'") == "host=db password='***'"
    assert redact_url("sqlite:///var/lib/isccd/isccd.db") == "sqlite:///var/lib/isccd/isccd.db"
    assert redact_url("/var/lib/isccd/isccd.db") == "/var/lib/isccd/isccd.db"
    assert redact_url("mysql://u:pw@h/db") == "mysql://u:***@h/db"
    assert redact_url(f"postgresql://h/db?sslmode=disable\0password={MARK}").endswith("***")


_chars = st.sampled_from("#?&=@/:%+ ,;'\\[]\t$!~*") | st.characters(
    codec="utf-8", exclude_characters="\0"
)
_secret = st.tuples(st.text(_chars, max_size=6), st.text(_chars, max_size=6)).map(
    lambda t: t[0] + MARK + t[1]
)


def _encode_some(text: str, data: st.DataObject) -> str:
    """``text`` with each character percent-encoded or not, as Hypothesis chooses."""
    out = []
    for c in text:
        if c in "%\0" or data.draw(st.booleans()):
            out.append(urllib.parse.quote(c, safe=""))
        else:
            out.append(c)
    return "".join(out)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_any_uri_is_read_as_libpq_reads_it_and_hides_its_secrets(data: st.DataObject) -> None:
    user = data.draw(st.sampled_from(["", "u", "isccd%40x"]))
    secret = _encode_some(data.draw(_secret), data)
    where = data.draw(st.sampled_from(["userinfo", "query", "encoded-name", "sslpassword"]))
    host = data.draw(st.sampled_from(["h", "h:5432", "[::1]:5433", "h1,h2:6", "", "%2Ftmp"]))
    dbname = data.draw(st.sampled_from(["", "/", "/db", "/d%20b"]))
    extra = data.draw(st.sampled_from(["", "sslmode=disable", "application_name=a@b"]))
    query = [extra] if extra else []
    if where == "userinfo":
        authority = f"{user}:{secret}@{host}"
    else:
        authority = f"{user}@{host}" if user else host
        name = {"query": "password", "encoded-name": "%70ass%77ord"}.get(where, "sslpassword")
        query.append(f"{name}={secret}")
    text = f"postgresql://{authority}{dbname}" + ("?" + "&".join(query) if query else "")
    expected = _libpq(text)
    if expected is None:
        with pytest.raises(ValueError):
            conninfo_params(text)
    else:
        assert conninfo_params(text) == expected
    shown = redact_url(text)
    secrets = {v for k, v in (expected or {}).items() if k in SECRET_KEYWORDS}
    assert not any(s in shown or urllib.parse.quote(s) in shown for s in secrets if len(s) > 3)
    assert not _shows_a_secret(shown), (text, shown)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(value=_secret, quoted=st.booleans(), space=st.sampled_from(["", " ", "\t"]))
def test_any_key_value_text_is_read_as_libpq_reads_it(value: str, quoted: bool, space: str) -> None:
    if quoted:
        written = "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    else:
        written = "".join("\\" + c if c in " \t\n\v\f\r\\'" else c for c in value) or "''"
    text = f"host=h{space} password{space}={space}{written} dbname=d"
    expected = _libpq(text)
    assert expected is not None and expected["password"] == value
    assert conninfo_params(text) == expected
    assert not _shows_a_secret(redact_url(text))


def test_a_url_libpq_refuses_is_refused_before_libpq_quotes_it(tmp_path: Path) -> None:
    # libpq's message for this one quotes the whole URL, password included.
    with pytest.raises(StoreError) as caught:
        open_store(f"postgresql://u:{MARK}@[::1]x/db", host="a")
    assert MARK not in str(caught.value) and "not one libpq accepts" in str(caught.value)


@pytest.mark.slow
def test_the_configured_store_is_shown_without_its_password(tmp_path: Path) -> None:
    from isccd.config import load_index_config

    config = tmp_path / "isccd.toml"
    config.write_text(f"[store]\nurl = 'postgresql://u:pa#{MARK}@db.example/isccd'\n")
    shown = load_index_config(config, state=None, socket=None).store_name
    assert shown == "postgresql://u:***@db.example/isccd"
