"""The helpers tests and benchmarks share: waiting on a condition, and a child process that
is started, found ready, stopped or killed, and explains itself when it fails."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from devtools.process import ChildProcess
from devtools.waiting import WaitTimeout, eventually, started, wait_for


def test_wait_for_returns_the_first_truthy_value() -> None:
    answers = iter([None, 0, "", "found", "later"])
    assert wait_for(lambda: next(answers), "an answer", interval=0) == "found"


def test_wait_for_names_what_did_not_happen() -> None:
    with pytest.raises(WaitTimeout, match=r"waiting for the impossible; last: False"):
        wait_for(lambda: False, "the impossible", timeout=0.05, interval=0.01)


async def test_eventually_takes_sync_and_async_conditions() -> None:
    calls: list[int] = []

    async def third_time() -> int | None:
        calls.append(1)
        return len(calls) if len(calls) == 3 else None

    assert await eventually(third_time, interval=0) == 3
    assert await eventually(lambda: "now") == "now"


async def test_eventually_names_the_condition_when_no_what_is_given() -> None:
    def never() -> bool:
        return False

    with pytest.raises(WaitTimeout, match="waiting for never"):
        await eventually(never, timeout=0.05)


async def test_eventually_lets_the_conditions_own_timeout_through() -> None:
    async def times_out() -> bool:
        raise TimeoutError("the condition's own")

    with pytest.raises(TimeoutError, match="the condition's own") as caught:
        await eventually(times_out, timeout=30)
    assert not isinstance(caught.value, WaitTimeout)


async def test_started_returns_once_the_coroutine_waits() -> None:
    gate = asyncio.Event()
    steps: list[str] = []

    async def work() -> str:
        steps.append("checked")
        await gate.wait()
        return "done"

    task = await started(work())
    assert steps == ["checked"]
    assert not task.done()
    gate.set()
    assert await task == "done"


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def idler(marker: Path, on_sigterm: str) -> list[str]:
    """A child that says hello, touches ``marker`` once its SIGTERM handler is set, and idles."""
    return python(
        "import pathlib, signal, sys, time\n"
        f"signal.signal(signal.SIGTERM, {on_sigterm})\n"
        f"print('hello', flush=True); pathlib.Path({str(marker)!r}).touch()\n"
        "while True: time.sleep(1)\n"
    )


def test_a_process_is_ready_stopped_and_its_output_kept(tmp_path: Path) -> None:
    marker = tmp_path / "ready"
    process = ChildProcess("child", tmp_path / "child.log")
    on_sigterm = "lambda *_: (print('terminated', flush=True), sys.exit(0))"
    process.start(idler(marker, on_sigterm), marker.exists)
    assert process.running
    proc = process.proc
    assert proc is not None
    process.stop()
    assert proc.returncode == 0
    assert not process.running
    assert process.output().splitlines() == ["hello", "terminated"]


def test_stop_kills_a_process_that_ignores_sigterm(tmp_path: Path) -> None:
    marker = tmp_path / "ready"
    process = ChildProcess("stubborn", tmp_path / "stubborn.log")
    process.start(idler(marker, "signal.SIG_IGN"), marker.exists)
    proc = process.proc
    assert proc is not None
    process.stop(grace=0.2)
    assert proc.returncode == -signal.SIGKILL


def test_kill_is_sigkill(tmp_path: Path) -> None:
    process = ChildProcess("victim", tmp_path / "victim.log")
    process.start(python("import time; time.sleep(60)"), lambda: True)
    proc = process.proc
    assert proc is not None
    process.kill()
    assert proc.returncode == -signal.SIGKILL


def test_pid_is_the_running_childs_and_an_error_once_stopped(tmp_path: Path) -> None:
    marker = tmp_path / "ready"
    process = ChildProcess("child", tmp_path / "child.log")
    with pytest.raises(RuntimeError, match="child is not running"):
        _ = process.pid
    written = tmp_path / "pid"
    code = (
        "import os, pathlib, time\n"  # the marker appears only once the pid is in it
        f"pathlib.Path({str(written)!r}).write_text(str(os.getpid()))\n"
        f"os.replace({str(written)!r}, {str(marker)!r})\n"
        "time.sleep(60)"
    )
    process.start(python(code), marker.exists)
    try:
        assert process.pid == int(marker.read_text())
    finally:
        process.kill()
    with pytest.raises(RuntimeError, match="child is not running"):
        _ = process.pid


def test_a_process_that_exits_before_it_is_ready_shows_its_output(tmp_path: Path) -> None:
    process = ChildProcess("doomed", tmp_path / "doomed.log")
    with pytest.raises(RuntimeError, match=r"doomed exited with 3:\nno config"):
        process.start(python("print('no config'); raise SystemExit(3)"), lambda: False)


def test_a_process_never_ready_is_killed_and_shows_its_output(tmp_path: Path) -> None:
    process = ChildProcess("slow", tmp_path / "slow.log")
    code = "print('starting', flush=True); import time; time.sleep(60)"

    def never_ready() -> bool:
        wait_for(lambda: "starting" in process.output(), "the child's first line")
        return False

    with pytest.raises(RuntimeError, match=r"slow not ready after 0.5s:\nstarting"):
        process.start(python(code), never_ready, timeout=0.5)
    assert not process.running
