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

MAX_TOTAL = 4096
"""Most characters of warning text in one answer; past it each warning is cut to
``MAX_EACH`` and those that still do not fit are left out (as kube-apiserver does)."""
MAX_EACH = 256


def warning_header(text: str, code: int = 299, agent: str = "-") -> str:
    """``299 - "text"``, printable ASCII whatever ``text`` holds."""
    return f'{code:03d} {agent} "{_escape(shorten(text, MAX_TEXT))}"'


def warning_headers(texts: list[str]) -> list[str]:
    """The Warning headers of one answer, within ``MAX_TOTAL`` characters of text."""
    if sum(len(t) for t in texts) > MAX_TOTAL:
        texts = [shorten(t, MAX_EACH) for t in texts]
    kept: list[str] = []
    total = 0
    for text in texts:
        total += len(text)
        if total > MAX_TOTAL:
            break
        kept.append(text)
    return [warning_header(t) for t in kept]


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
