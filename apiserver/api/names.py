"""Syntax of Kubernetes names: DNS labels and subdomains, qualified names, label values.

Each ``*_errors`` function returns the problems with a value as plain strings (empty
when it is valid), worded like Kubernetes' ``validation.IsDNS1123Subdomain`` and friends,
so callers can wrap them into field errors with their own path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..toolkit.names import MAX_NAME

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = MAX_NAME
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _length_and_pattern_errors(
    value: str, max_length: int, pattern: re.Pattern[str], problem: str
) -> list[str]:
    """The two checks of most rules, in Kubernetes' order: the length, then the pattern."""
    errs = []
    if len(value) > max_length:
        errs.append(f"must be no more than {max_length} characters")
    if not pattern.fullmatch(value):
        errs.append(problem)
    return errs


def dns1123_label_errors(value: str) -> list[str]:
    return _length_and_pattern_errors(
        value,
        DNS1123_LABEL_MAX,
        _DNS1123_LABEL,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters"
        " or '-', and must start and end with an alphanumeric character"
        " (e.g. 'my-name',  or '123-abc')",
    )


def dns1123_subdomain_errors(value: str) -> list[str]:
    return _length_and_pattern_errors(
        value,
        DNS1123_SUBDOMAIN_MAX,
        _DNS1123_SUBDOMAIN,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric"
        " characters, '-' or '.', and must start and end with an alphanumeric"
        " character (e.g. 'example.com')",
    )


_SUBDOMAIN_CHARACTERS = re.compile(r"[-a-z0-9.\n]*")
_NOT_IN_A_SUBDOMAIN = ("..", ".-", "-.", "\n\n", "\n-", "-\n", "\n.", ".\n")


def all_dns1123_subdomains(values: Sequence[str]) -> bool:
    """Whether ``dns1123_subdomain_errors`` finds nothing wrong with any of ``values``,
    answered in a few passes over them joined rather than a pattern match per value (a
    review checks up to 5,000 node names). A subdomain is lower-case letters, digits, '-'
    and '.', of at most 253 characters, and each of its dot-separated labels is not empty
    and starts and ends with a letter or digit: so no value is empty or starts or ends
    with '-' or '.', and no '.' stands next to another '.' or a '-'."""
    if not values:
        return True
    if max(map(len, values)) > DNS1123_SUBDOMAIN_MAX:
        return False
    joined = "\n".join(values)
    return (
        joined.count("\n") == len(values) - 1  # no value holds the separator
        and _SUBDOMAIN_CHARACTERS.fullmatch(joined) is not None
        and joined[:1] not in "-.\n"  # an empty slice is "in" any string: no value is ""
        and joined[-1:] not in "-.\n"
        and not any(part in joined for part in _NOT_IN_A_SUBDOMAIN)
    )


def qualified_name_errors(value: str) -> list[str]:
    """A label or annotation key: ``[prefix/]name`` with a DNS subdomain prefix."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        prefix_errs: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            prefix_errs = ["prefix part must be non-empty"]
        else:
            prefix_errs = ["prefix part " + e for e in dns1123_subdomain_errors(prefix)]
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.',"
            " and must start and end with an alphanumeric character, with an optional"
            " DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errs = list(prefix_errs)
    if not name:
        errs.append("name part must be non-empty")
    else:
        problems = _length_and_pattern_errors(
            name,
            QUALIFIED_NAME_MAX,
            _QUALIFIED_NAME_PART,
            "must consist of alphanumeric characters, '-', '_' or '.', and"
            " must start and end with an alphanumeric character",
        )
        errs += ["name part " + e for e in problems]
    return errs


def label_value_errors(value: str) -> list[str]:
    return _length_and_pattern_errors(
        value,
        LABEL_VALUE_MAX,
        _LABEL_VALUE,
        "a valid label must be an empty string or consist of alphanumeric characters,"
        " '-', '_' or '.', and must start and end with an alphanumeric character",
    )


def c_identifier_errors(value: str, max_length: int) -> list[str]:
    return _length_and_pattern_errors(
        value,
        max_length,
        _C_IDENTIFIER,
        "a valid C identifier must start with alphabetic character or '_', followed"
        " by a string of alphanumeric characters or '_'",
    )
