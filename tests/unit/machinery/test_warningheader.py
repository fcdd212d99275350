"""The Warning header: quoted as Kubernetes quotes it, and always printable ASCII."""

from __future__ import annotations

import pytest

from apiserver.machinery.warningheader import (
    MAX_EACH,
    MAX_TEXT,
    MAX_TOTAL,
    warning_header,
    warning_headers,
)


@pytest.mark.parametrize(
    ("text", "header"),
    [
        ('unknown field "spec.x"', '299 - "unknown field \\"spec.x\\""'),
        ("back\\slash", '299 - "back\\\\slash"'),
        ("unknown field 日", '299 - "unknown field \\u65e5"'),
        ("é and 😀", '299 - "\\u00e9 and \\U0001f600"'),
        ("tab\tnul\x00bell\x07del\x7f", '299 - "tab\\u0009nul\\u0000bell\\u0007del\\u007f"'),
    ],
)
def test_warning_header_escapes(text: str, header: str) -> None:
    assert warning_header(text) == header


def test_warning_header_is_always_encodable_and_bounded() -> None:
    text = "".join(chr(c) for c in range(0, 0x3000, 7)) * 10
    header = warning_header(text)
    header.encode("ascii")  # would raise on anything a header cannot carry
    assert all(0x20 <= ord(c) < 0x7F for c in header)
    assert len(header) < 12 * MAX_TEXT


def test_many_warnings_are_cut_to_a_total_as_kubernetes_does() -> None:
    few = [f'unknown field "spec.f{i}"' for i in range(3)]
    assert warning_headers(few) == [warning_header(t) for t in few]
    many = [f'unknown field "spec.{"x" * 300}{i}"' for i in range(1000)]
    headers = warning_headers(many)
    assert 1 <= len(headers) < len(many)
    assert sum(len(h) for h in headers) < 2 * MAX_TOTAL
    assert all(len(h) < MAX_EACH + 100 for h in headers)
