"""The command line generated from the options' declarations says what it said before:
the same flags, declared the same way, giving their options objects the same values when
not given (``data/cli_flags.json``, captured from the hand-written parser this replaced);
``--help`` shows every default; a bad value is one ``error:`` line naming the flag."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from apiserver import cli
from apiserver.toolkit.options import flag_values, from_args

BEFORE: dict[str, dict[str, dict[str, Any]]] = json.loads(
    (Path(__file__).parent / "data" / "cli_flags.json").read_text()
)
# The flags a command cannot run without, as the table was captured with them.
REQUIRED = {
    "schedule": ["--kubeconfig", "K"],
    "client-cert": ["--user", "U", "--out", "O"],
}


def _kind(parse: Any) -> Any:
    """How a flag's value is parsed: its type's name, or what it makes of a list."""
    if parse is None:
        return None
    if parse in (int, float, str):
        return parse.__name__
    return repr(parse(" a, b ,"))


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def _declared(parser: argparse.ArgumentParser) -> dict[str, dict[str, Any]]:
    """Each flag as argparse holds it (the fields the table was captured with)."""
    return {
        a.option_strings[0]: {
            "option_strings": a.option_strings,
            "dest": a.dest,
            "default": a.default,
            "type": _kind(a.type),
            "choices": list(a.choices) if a.choices else None,
            "action": type(a).__name__,
            "required": a.required,
            "nargs": a.nargs,
        }
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction)
    }


def test_the_same_commands_as_before() -> None:
    assert sorted(_subparsers()) == sorted(BEFORE)


@pytest.mark.parametrize("command", sorted(BEFORE))
def test_every_flag_is_declared_as_before(command: str) -> None:
    before = {
        flag: {k: v for k, v in spec.items() if k != "effective"}
        for flag, spec in BEFORE[command].items()
    }
    assert _declared(_subparsers()[command]) == before


@pytest.mark.parametrize("command", sorted(BEFORE))
def test_a_flag_not_given_gives_its_object_the_value_it_gave_before(command: str) -> None:
    spec = next(c for c in cli.COMMANDS if c.name == command)
    args = cli.build_parser().parse_args([command, *REQUIRED.get(command, [])])
    values = flag_values(from_args(spec.options, args))
    expected = {flag: d["effective"] for flag, d in BEFORE[command].items()}
    # (schedule's --log-level set only the logging before: its value is the flag's default)
    assert values == expected


def _shown(default: Any) -> str:
    if isinstance(default, bool):
        return "on" if default else "off"
    if isinstance(default, list):
        return ",".join(default) if default else "none"
    if isinstance(default, float):
        return f"{default:g}"
    return str(default)


@pytest.mark.parametrize("command", sorted(BEFORE))
def test_help_shows_every_flag_and_default(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # one line per flag
    with pytest.raises(SystemExit) as exit:
        cli.main([command, "--help"])
    assert exit.value.code == 0
    entries = _help_entries(capsys.readouterr().out)
    for flag, spec in BEFORE[command].items():
        names = ", ".join(spec["option_strings"])
        [entry] = [e for e in entries if e == names or e.startswith(names + " ")]
        default = spec["effective"]
        if spec["required"] or default is None or spec["action"] == "_StoreTrueAction":
            continue
        assert f"default {_shown(default)}" in entry, (flag, entry)


def _help_entries(text: str) -> list[str]:
    """Each flag's entry of ``--help`` on one line: its names, metavar and help."""
    entries: list[str] = []
    for line in text.splitlines():
        if line.startswith("  -"):
            entries.append(line.strip())
        elif line.startswith("    ") and entries:
            entries[-1] += " " + line.strip()
    return entries


def test_a_bad_value_is_one_error_line_naming_the_flag_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    certs = tmp_path / "certs"
    with pytest.raises(SystemExit) as exit:
        cli.main(
            [
                "serve",
                "--cert-dir",
                str(certs),
                "--storage",
                f"sqlite:///{tmp_path / 'store.db'}",
                "--secure-port",
                "70000",
                "--pool-status-ttl",
                "-1",
            ]
        )
    assert exit.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ")
    assert "--secure-port" in line
    assert "--pool-status-ttl" in line
    assert not certs.exists()
    assert not (tmp_path / "store.db").exists()


def test_a_certificate_without_its_key_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit:
        cli.main(
            [
                "serve",
                "--cert-dir",
                str(tmp_path / "certs"),
                "--tls-cert-file",
                str(tmp_path / "tls.crt"),
            ]
        )
    assert exit.value.code == 2
    assert "--tls-private-key-file" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def _readme_flags() -> dict[str, set[str]]:
    """The flags the README's "Command line" section names, by the command they follow."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    named: dict[str, set[str]] = {}
    command = None
    for block in section.split("```")[1::2]:  # the code blocks
        for line in block.splitlines():
            if line.startswith("python -m apiserver "):
                command = line.split()[3]
            if command is not None:
                names = re.findall(r"--(\[no-\])?([a-z][a-z0-9-]+)", line)
                named.setdefault(command, set()).update(f"--{name}" for _, name in names)
    return named


def test_the_readme_names_only_flags_the_commands_have() -> None:
    named = _readme_flags()
    assert set(named) == {"serve", "client-cert", "shim", "schedule"}
    parsers = _subparsers()
    for command, flags in named.items():
        declared = set(parsers[command]._option_string_actions)
        assert flags <= declared, (command, flags - declared)
        assert len(flags) > 3
