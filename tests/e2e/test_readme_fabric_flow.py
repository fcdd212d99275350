"""The README's fabric attach flow on a laptop runs by copy and paste.

Its first block starts four processes, each in a terminal of its own: ``make run`` is the
server the test starts as ``make run`` does, and the other three lines run verbatim in bash,
in the background. The second block runs verbatim in one more bash; its last line watches
the claim and never ends, so that bash is stopped once the claim it shows is attached.

Every command runs in a directory laid out as the checkout is after ``make run``: the
server's ``kubeconfig`` and ``certs/`` in it, and ``.venv`` and ``examples`` linked to the
real ones. Then what the README's prose says happened is checked: the attach to node-1
failed, the pod was bound to node-2, the device attached there moved into node-2's pool.
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import os
import re
import ssl
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from apiserver.api.resource import NEEDS_ATTACHING
from apiserver.toolkit import JSON
from devtools.process import http_probe
from devtools.waiting import wait_for

from .claim_history import IS_ATTACHED, cleared, conditions, failed_on, history, then, waiting_on
from .harness import REPO, ServerProcess, start_server
from .readme import MAKE_RUN_FLAGS, Terminal, commands, sh_blocks

SECTION = "## The fabric attach flow on a laptop"
DRIVER = "composable.example.com"
SHIM_URL = "https://127.0.0.1:8888"
"""Where the shim listens by default, and where the scheduler looks for it by default."""
LOCK = Path(tempfile.gettempdir()) / "dra-apiserver-readme-fabric-flow.lock"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"


def _locked(file: IO[str]) -> bool:
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def _the_shims_port() -> Iterator[None]:
    """The README's shim takes its default port: one run of this test at a time on a
    machine (several checkouts may run their tests at once)."""
    with open(LOCK, "w") as file:
        wait_for(lambda: _locked(file), "another run of this test to end", timeout=600)
        yield


@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[ServerProcess]:
    """The server ``make run`` starts, its kubeconfig and certificates where ``make run``
    writes them relative to the checkout: the server's work directory stands for it."""
    with _the_shims_port():
        server = start_server(tmp_path / "checkout", MAKE_RUN_FLAGS)
        try:
            (server.workdir / ".venv").symlink_to(sys.prefix)
            (server.workdir / "examples").symlink_to(REPO / "examples")
            yield server
        finally:
            server.stop()


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    """Every terminal a test opens, stopped at its end whatever happened. What each printed
    goes to the captured output, which pytest shows when the test failed."""
    opened: list[Terminal] = []
    yield opened
    for terminal in reversed(opened):
        terminal.stop()
        print(f"--- {terminal.log.name}\n{terminal.output()}")


def _environment(home: Path, bin_dir: Path) -> dict[str, str]:
    """A shell's environment with no KUBECONFIG, and a kubectl first on PATH that refuses to
    run: the README's commands name the kubeconfig and the kubectl they use themselves."""
    bin_dir.mkdir()
    refuse = bin_dir / "kubectl"
    refuse.write_text("#!/bin/sh\necho 'not the kubectl of .venv' >&2\nexit 127\n")
    refuse.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    env["HOME"] = str(home)
    return env


def _ready(line: str, checkout: Path, terminal: Terminal) -> Callable[[], bool]:
    """Whether the process a line of the first block started is ready for the next one
    (AssertionError if it ended)."""
    if "apiserver shim" in line:
        ca = checkout / "certs" / "shim" / "ca.crt"
        probe = http_probe(f"{SHIM_URL}/healthz", lambda: ssl.create_default_context(cafile=ca))
    elif "apiserver schedule" in line:
        probe = lambda: "watching pods" in terminal.output()  # noqa: E731
    elif "composable-controller/controller.py" in line:
        probe = lambda: "watching ResourceClaims" in terminal.output()  # noqa: E731
    else:
        raise AssertionError(f"a command this test does not know how to wait for: {line}")
    return lambda: terminal.running() and probe()


def _get(server: ServerProcess, path: str) -> JSON | None:
    with server.client() as client:
        answer = client.get(path)
    if answer.status_code == 404:
        return None
    assert answer.status_code == 200, answer.text
    found: JSON = answer.json()
    return found


def test_the_fabric_flow_section_runs(checkout: ServerProcess, terminals: list[Terminal]) -> None:
    first, second = sh_blocks(SECTION)
    make_run, *processes = commands(first)
    assert make_run == "make run"
    assert len(processes) == 3, processes
    *_, watch = commands(second)
    assert watch.startswith("kubectl get resourceclaim fpga "), watch
    assert watch.endswith(" -w"), watch
    workdir = checkout.workdir
    env = _environment(workdir, workdir.parent / "bin")

    # The first block: each process in its own terminal, ready before the next one starts.
    started: dict[str, Terminal] = {}
    for at, line in enumerate(processes):
        terminal = Terminal(line, workdir, env, workdir / f"terminal-{at}.log")
        terminals.append(terminal)
        started[line] = terminal
        wait_for(_ready(line, workdir, terminal), line, timeout=60)
    claims = _get(checkout, CLAIMS)
    assert claims is not None
    since = claims["metadata"]["resourceVersion"]

    # The second block, as pasted into an interactive shell (which expands aliases).
    script = "set -euo pipefail\nshopt -s expand_aliases\n" + second
    shell = Terminal(script, workdir, env, workdir / "terminal-claim.log")
    terminals.append(shell)

    def shown_attached() -> bool:
        return shell.running() and IS_ATTACHED in shell.output()

    wait_for(shown_attached, "the claim's watch to show the device attached", timeout=180)
    shell.stop()
    assert "resourceclaim.resource.k8s.io/fpga created" in shell.output()

    # What the prose says happened: node-1's attach failed, the pod went to node-2.
    def bound() -> str | None:
        pod = _get(checkout, "/api/v1/namespaces/default/pods/fpga-job")
        return pod["spec"].get("nodeName") if pod else None

    assert wait_for(bound, "the pod to be bound", timeout=60) == "node-2"
    assert "node-2" in checkout.kubectl("get", "pod", "fpga-job", "-o", "wide").stdout
    [scheduler] = [t for line, t in started.items() if "apiserver schedule" in line]
    first_try = re.search(r"binding to node-1 \(scores (\{.*\})\)", scheduler.output())
    assert first_try is not None, scheduler.output()
    scores = ast.literal_eval(first_try.group(1))  # the five nodes, all equal
    assert sorted(scores) == [f"node-{n}" for n in range(1, 6)]
    assert len(set(scores.values())) == 1, scores
    history(
        checkout,
        "default",
        "fpga",
        since,
        then(waiting_on("node-1"), failed_on("node-1"), cleared, waiting_on("node-2")),
    )
    claim = _get(checkout, f"{CLAIMS}/fpga")
    assert claim is not None
    status = claim["status"]
    [result] = status["allocation"]["devices"]["results"]
    assert (result["driver"], result["pool"]) == (DRIVER, "fabric-fpga-x")
    [entry] = status["devices"]
    assert entry["nodeName"] == "node-2"
    assert conditions(entry) == {NEEDS_ATTACHING: "True", IS_ATTACHED: "True"}
    assert [r["name"] for r in status["reservedFor"]] == ["fpga-job"]

    # The device moved from the fabric pool into node-2's.
    slices = "/apis/resource.k8s.io/v1/resourceslices"

    def in_node_pool() -> JSON | None:
        pool = _get(checkout, f"{slices}/{DRIVER}-node-2")
        devices = pool["spec"]["devices"] if pool else []
        return next((d for d in devices if d["name"] == result["device"]), None)

    device = wait_for(in_node_pool, "the device in node-2's pool", timeout=60)
    assert device["attributes"][NEEDS_ATTACHING] == {"bool": False}
    fabric = _get(checkout, f"{slices}/{DRIVER}-fabric-fpga-x")
    assert fabric is not None
    assert result["device"] not in [d["name"] for d in fabric["spec"]["devices"]]
