"""The command line: ``python -m apiserver serve ...`` (also installed as ``dra-apiserver``);
``shim`` runs the scheduler extender, ``schedule`` a stand-in for kube-scheduler (standalone
mode only)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .schedule.run import ScheduleOptions, run_schedule
from .server.certs import ClientCertOptions, write_client_cert
from .server.installcerts import InstallCertsOptions, install_certs
from .server.serve import ServeOptions, serve
from .shim.app import ShimOptions, run_shim
from .toolkit.options import add_flags, from_args, validated

SCHEDULE_HELP = """\
A stand-in for kube-scheduler, for standalone mode ONLY (a real cluster runs kube-scheduler
with the shim configured as its extender). It watches pods whose spec.schedulerName is
--scheduler-name and that have no node, and for each lists the nodes and asks the shim over
HTTPS exactly as kube-scheduler asks an extender: filter, prioritize over the nodes that
passed, then bind to the best-scored node (ties in name order, one further per attempt). A
pod that fits nowhere, or whose bind fails, or that meets an unreachable shim, is tried
again after a per-pod backoff. It holds no placement logic of its own."""


@dataclass(frozen=True)
class Command:
    """A subcommand: the options it takes (its flags are made from them) and what runs it;
    what it refuses (``refusals``) ends the process with one ``error:`` line."""

    name: str
    options: type[Any]
    run: Callable[[Any], None]
    help: str
    description: str | None = None
    refusals: tuple[type[Exception], ...] = (ValueError,)


def _client_cert(options: ClientCertOptions) -> None:
    cert, key = write_client_cert(options.cert_dir, options.user, options.group, options.out)
    print(f"wrote {cert} and {key}")


def _install_certs(options: InstallCertsOptions) -> None:
    print(install_certs(options))


COMMANDS = (
    Command("serve", ServeOptions, serve, "run the API server"),
    Command(
        "client-cert",
        ClientCertOptions,
        _client_cert,
        "sign a client certificate for a user with the CA of --cert-dir (for kubectl and"
        " --client-ca-file)",
    ),
    Command(
        "install-certs",
        InstallCertsOptions,
        _install_certs,
        "make the in-cluster serving certificate, its Secret and a kustomization that"
        " installs the manifests with the caBundle; prints the caBundle",
    ),
    Command(
        "shim",
        ShimOptions,
        run_shim,
        "run the scheduler shim, a kube-scheduler extender (filter, prioritize, bind)",
        refusals=(ValueError, OSError),
    ),
    Command(
        "schedule",
        ScheduleOptions,
        run_schedule,
        "standalone mode only: a stand-in for kube-scheduler that places pods through the shim",
        description=SCHEDULE_HELP,
        refusals=(ValueError, OSError),
    ),
)


def build_parser() -> argparse.ArgumentParser:
    """Every command, its flags generated from its options' declarations."""
    parser = argparse.ArgumentParser(prog="python -m apiserver", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        sub = commands.add_parser(
            command.name,
            help=command.help,
            description=command.description,
            # The stand-in scheduler's description is laid out by hand.
            formatter_class=(
                argparse.RawDescriptionHelpFormatter
                if command.description
                else argparse.HelpFormatter
            ),
        )
        add_flags(sub, command.options)
    return parser


@contextlib.contextmanager
def _exit_on(*refusals: type[Exception]) -> Iterator[None]:
    """What a command refuses (a bad flag or file) as one ``error:`` line and exit code 2."""
    try:
        yield
    except refusals as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc


def _configure_logging(level: str) -> None:
    """The server's own loggers (``apiserver.*``) to stderr at ``--log-level``; uvicorn's
    loggers and the access log keep their own handlers and do not reach these."""
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if getattr(args, "log_level", None):
        _configure_logging(args.log_level)
    command = next(c for c in COMMANDS if c.name == args.command)
    with _exit_on(*command.refusals):
        command.run(validated(from_args(command.options, args)))
