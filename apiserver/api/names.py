"""Syntax of Kubernetes names: DNS labels and subdomains, qualified names, label values.

Each ``*_errors`` function returns the problems with a value as plain strings (empty
when it is valid), worded like Kubernetes' ``validation.IsDNS1123Subdomain`` and friends,
so callers can wrap them into field errors with their own path.
"""

from __future__ import annotations

import re

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def dns1123_label_errors(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(f"must be no more than {DNS1123_LABEL_MAX} characters")
    if not _DNS1123_LABEL.match(value):
        errs.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters"
            " or '-', and must start and end with an alphanumeric character"
            " (e.g. 'my-name',  or '123-abc')"
        )
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric"
            " characters, '-' or '.', and must start and end with an alphanumeric"
            " character (e.g. 'example.com')"
        )
    return errs


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
        if len(name) > QUALIFIED_NAME_MAX:
            errs.append(f"name part must be no more than {QUALIFIED_NAME_MAX} characters")
        if not _QUALIFIED_NAME_PART.match(name):
            errs.append(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and"
                " must start and end with an alphanumeric character"
            )
    return errs


def label_value_errors(value: str) -> list[str]:
    errs = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(f"must be no more than {LABEL_VALUE_MAX} characters")
    if not _LABEL_VALUE.match(value):
        errs.append(
            "a valid label must be an empty string or consist of alphanumeric characters,"
            " '-', '_' or '.', and must start and end with an alphanumeric character"
        )
    return errs


def c_identifier_errors(value: str, max_length: int) -> list[str]:
    errs = []
    if len(value) > max_length:
        errs.append(f"must be no more than {max_length} characters")
    if not _C_IDENTIFIER.match(value):
        errs.append(
            "a valid C identifier must start with alphabetic character or '_', followed"
            " by a string of alphanumeric characters or '_'"
        )
    return errs
