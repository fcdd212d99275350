"""Options declared once: a concern's settings are one dataclass, and each field that is a
command-line flag carries its flag name, default, help and check (``option``, ``switch``,
``toggle``, ``string_slice``, ``log_level_option``). The command line is generated from the dataclass (``add_flags``), read back into
it (``from_args``) and checked (``problems``), so a default is written in one place and
``--help`` shows it from there — as kube-apiserver's option structs register each flag with
the struct field's own value and carry ``Validate()``.

A field made with ``nested`` holds another concern's dataclass (kopf's nested settings), its
flags in their own section of ``--help``. A field with neither is set by code, never by a
flag. A concern may add checks across its fields with a ``validate(self) -> list[str]``
method.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import MISSING, dataclass
from typing import Any, Literal, TypeVar

from .collector import YOUNG_THRESHOLD

T = TypeVar("T")
Check = Callable[[Any], "str | None"]
"""A problem with a flag's value, said without the flag's name (that is added), or None."""
Action = Literal["store", "append", "extend", "switch", "toggle"]

_FLAG = "apiserver.toolkit.options.flag"
_NESTED = "apiserver.toolkit.options.nested"

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


@dataclass(frozen=True)
class Flag:
    """How one field appears on the command line.

    ``action``: ``store`` (one value), ``append`` (repeatable, each a value), ``extend``
    (repeatable, each parsed into a list that extends the others; a given list replaces the
    default), ``switch`` (present or not), ``toggle`` (``--x`` and ``--no-x``)."""

    name: str
    help: str
    action: Action = "store"
    parse: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    check: Check | None = None

    @property
    def dest(self) -> str:
        """The attribute argparse keeps the value in: the flag's name, as argparse derives it."""
        return self.name.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class _Nested:
    cls: type[Any]
    title: str | None
    description: str | None


def option(
    name: str,
    default: Any = MISSING,
    help: str = "",
    *,
    action: Action = "store",
    parse: Callable[[str], Any] | None = None,
    choices: Sequence[str] | None = None,
    check: Check | None = None,
) -> Any:
    """A field that is the flag ``name``. Without ``default`` the flag is required. ``parse``
    defaults to the default's type for numbers. ``help`` may place the default with
    ``{default}``; otherwise it is appended."""
    if parse is None and type(default) in (int, float):
        parse = type(default)
    flag = Flag(name, help, action, parse, tuple(choices) if choices else None, check)
    metadata = {_FLAG: flag}
    if default is MISSING:
        return dataclasses.field(metadata=metadata)
    if isinstance(default, list):
        items = list(default)
        return dataclasses.field(default_factory=lambda: list(items), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def switch(name: str, help: str) -> Any:
    """A flag that is off unless given."""
    return option(name, False, help, action="switch")


def toggle(name: str, default: bool, help: str) -> Any:
    """A flag given as ``--name`` or ``--no-name``."""
    return option(name, default, help, action="toggle")


def string_slice(name: str, default: list[str], help: str) -> Any:
    """A list flag as Kubernetes' string slices: comma-separated and repeatable; given, it
    replaces the default."""
    return option(name, default, help, action="extend", parse=comma_list)


def log_level_option() -> Any:
    """``--log-level``, as every command has it."""
    return option("--log-level", "info", "how much the process logs", choices=LOG_LEVELS)


def gc_young_threshold_option() -> Any:
    """``--gc-young-threshold``, as every serving command has it (see ``collector``)."""
    return option(
        "--gc-young-threshold",
        YOUNG_THRESHOLD,
        "allocations (more than frees) between collections of Python's young generation;"
        " fewer collections walk less of what the process keeps (Python's own default: 700)",
        check=positive,
    )


def nested(cls: type[Any], title: str | None = None, description: str | None = None) -> Any:
    """A field holding another concern's options; ``title`` names its section of ``--help``."""
    return dataclasses.field(
        default_factory=cls, metadata={_NESTED: _Nested(cls, title, description)}
    )


def comma_list(value: str) -> list[str]:
    """A comma-separated list, as Kubernetes' string-slice flags (blanks dropped)."""
    return [v.strip() for v in value.split(",") if v.strip()]


def non_negative(value: float) -> str | None:
    return None if value >= 0 else f"must not be negative, not {value:g}"


def positive(value: float) -> str | None:
    return None if value > 0 else f"must be more than 0, not {value:g}"


def port_number(value: int) -> str | None:
    return None if 0 <= value <= 65535 else f"must be a port number (0-65535), not {value}"


def flags(cls: type[Any]) -> list[tuple[dataclasses.Field[Any], Flag]]:
    """The fields of ``cls`` that are flags, in declaration order (not nested ones)."""
    return [(f, f.metadata[_FLAG]) for f in dataclasses.fields(cls) if _FLAG in f.metadata]


def add_flags(parser: argparse.ArgumentParser, cls: type[Any], _section: Any | None = None) -> None:
    """Every flag of ``cls`` and of the concerns nested in it; a nested concern with a title
    gets a section of ``--help`` of its own, and what it nests joins that section."""
    _add_own_flags(_section or parser, cls)
    for f in dataclasses.fields(cls):
        inner: _Nested | None = f.metadata.get(_NESTED)
        if inner is None:
            continue
        section = _section
        if section is None and inner.title is not None:
            section = parser.add_argument_group(inner.title, inner.description)
        add_flags(parser, inner.cls, section)


def _add_own_flags(target: Any, cls: type[Any]) -> None:
    for f, flag in flags(cls):
        action = target.add_argument(flag.name, **_argparse_arguments(f, flag))
        # argparse's own "(default: True)" suffix of --x/--no-x would repeat ours.
        action.help = _help(f, flag)


def _argparse_arguments(f: dataclasses.Field[Any], flag: Flag) -> dict[str, Any]:
    default = _default(f)
    arguments: dict[str, Any] = {"dest": flag.dest}
    if flag.action == "switch":
        return {**arguments, "action": "store_true"}
    if flag.action == "toggle":
        return {**arguments, "action": argparse.BooleanOptionalAction, "default": default}
    if default is MISSING:
        arguments["required"] = True
    elif flag.action == "extend":
        # argparse would extend the default list; None says "not given", the field's
        # default then applies.
        arguments["default"] = None
    else:
        arguments["default"] = default
    if flag.action != "store":
        arguments["action"] = flag.action
    if flag.parse is not None:
        arguments["type"] = flag.parse
    if flag.choices is not None:
        arguments["choices"] = list(flag.choices)
    return arguments


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not MISSING:
        return f.default_factory()
    return f.default


def _help(f: dataclasses.Field[Any], flag: Flag) -> str:
    shown = _shown(_default(f), flag)
    text = flag.help
    if "{default}" in text:
        text = text.replace("{default}", shown or "none")
    elif shown:
        text = f"{text} (default {shown})" if text else f"default {shown}"
    return text.replace("%", "%%")  # argparse formats help with %


def _shown(default: Any, flag: Flag) -> str:
    """The default as ``--help`` says it; empty where there is nothing to say (a switch, a
    flag with no default value)."""
    if default is MISSING or default is None or flag.action == "switch":
        return ""
    if isinstance(default, bool):
        return "on" if default else "off"
    if isinstance(default, list):
        return ",".join(str(v) for v in default) if default else "none"
    if isinstance(default, float):
        return f"{default:g}"
    return str(default)


def from_args(cls: type[T], args: argparse.Namespace) -> T:
    """``cls`` with every flag's value from ``args`` (as ``add_flags`` declared them), and
    the concerns nested in it built the same way."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        inner = f.metadata.get(_NESTED)
        flag = f.metadata.get(_FLAG)
        if inner is not None:
            values[f.name] = from_args(inner.cls, args)
        elif flag is not None:
            value = getattr(args, flag.dest)
            if value is None and flag.action == "extend":
                continue
            values[f.name] = value
    return cls(**values)


def flag_values(options: Any) -> dict[str, Any]:
    """Each flag's value in ``options`` and the concerns nested in it, by flag name."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(options):
        if _NESTED in f.metadata:
            values.update(flag_values(getattr(options, f.name)))
        elif _FLAG in f.metadata:
            values[f.metadata[_FLAG].name] = getattr(options, f.name)
    return values


def problems(options: Any) -> list[str]:
    """What is wrong with ``options`` and the concerns nested in it, each problem naming
    its flag: values outside a flag's choices, what a flag's check refuses, and what the
    concern's own ``validate()`` finds across its fields."""
    found: list[str] = []
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if _NESTED in f.metadata:
            found += problems(value)
            continue
        flag: Flag | None = f.metadata.get(_FLAG)
        if flag is None or value is None:
            continue
        if flag.choices is not None and value not in flag.choices:
            found.append(f"{flag.name} must be one of {', '.join(flag.choices)}, not {value!r}")
        elif flag.check is not None and (problem := flag.check(value)) is not None:
            found.append(f"{flag.name} {problem}")
    validate = getattr(options, "validate", None)
    if callable(validate):
        found += validate()
    return found


def validated(options: T) -> T:
    """``options`` when nothing is wrong with them; else ``ValueError`` naming every problem."""
    found = problems(options)
    if found:
        raise ValueError("; ".join(found))
    return options
