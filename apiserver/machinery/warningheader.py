"""The HTTP ``Warning`` header a write answers with (RFC 7234 form, as Kubernetes sends).

The text can quote user input (an unknown field's name), and a header value must be
encodable: anything outside printable ASCII would make the answer to a committed write
fail. So the quoted text escapes ``"`` and ``\\`` as Kubernetes does, and also every
non-printable or non-ASCII character as ``\\uXXXX`` (``\\UXXXXXXXX`` beyond the BMP), the
way Go's ``%+q`` shows a string. Kubernetes drops a warning with control characters and
sends other UTF-8 as raw bytes; escaping keeps the warning and keeps every client able to
read the header.
"""

from __future__ import annotations

from ..api.field import shorten

MAX_TEXT = 4096
"""Most characters of warning text repeated in one header (it may quote a long name)."""


def warning_header(text: str, code: int = 299, agent: str = "-") -> str:
    """``299 - "text"``, printable ASCII whatever ``text`` holds."""
    return f'{code:03d} {agent} "{_escape(shorten(text, MAX_TEXT))}"'


def _escape(text: str) -> str:
    out: list[str] = []
    for ch in text:
        point = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif 0x20 <= point < 0x7F:
            out.append(ch)
        elif point <= 0xFFFF:
            out.append(f"\\u{point:04x}")
        else:
            out.append(f"\\U{point:08x}")
    return "".join(out)
