"""Syntax of Kubernetes names: DNS labels and subdomains, qualified names, label values.

Each ``*_errors`` function returns the problems with a value as plain strings (empty
when it is valid), worded like Kubernetes' ``validation.IsDNS1123Subdomain`` and friends,
so callers can wrap them into field errors with their own path.
"""

from __future__ import annotations

import re

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
    if not pattern.match(value):
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


def is_dns1123_subdomain(value: str) -> bool:
    """``dns1123_subdomain_errors(value)`` is empty, answered without building messages
    (a review checks up to 5,000 node names)."""
    return len(value) <= DNS1123_SUBDOMAIN_MAX and _DNS1123_SUBDOMAIN.match(value) is not None


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
