"""Subject escaping equals its byte-by-byte definition for any text, and reverses exactly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from events.subjects import escape, unescape

PLAIN = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-"


def by_definition(value: str) -> str:
    if not value:
        return "_"
    return "".join(chr(b) if b in PLAIN else f"%{b:02X}" for b in value.encode("utf-8"))


@given(st.one_of(st.text(), st.text(alphabet="abc.-_%/:é Z9"), st.from_regex(r"[a-z0-9-]+")))
def test_escape_is_its_byte_by_byte_definition_and_unescape_reverses_it(value: str) -> None:
    token = escape(value)
    assert token == by_definition(value)
    assert unescape(token) == value


def test_dots_percent_and_underscores_are_escaped_and_plain_names_kept() -> None:
    assert escape("web-7d4b9c-x2x") == "web-7d4b9c-x2x"
    assert escape("apps.kruise.io") == "apps%2Ekruise%2Eio"
    assert escape("patch_status") == "patch%5Fstatus"
    assert escape("100%") == "100%25"
    assert escape("zoné") == "zon%C3%A9"
