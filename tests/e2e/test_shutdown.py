"""Ctrl-C with watchers open: the server ends each watch as a complete response when it
begins to shut down (clients see the watch end), and exits 130 without a traceback, also
when its parent started it with SIGINT ignored (a background job of a shell without job
control, as scripts and CI runners start commands)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from devtools.waiting import wait_for

from .harness import start_server

WATCHES = (
    "/apis/resource.k8s.io/v1/resourceslices?watch=true",
    "/api/v1/nodes?watch=true&allowWatchBookmarks=true",
)

SIGINT_IGNORED = ["sh", "-c", 'trap "" INT; exec "$@"', "sh"]
"""A parent that ignores SIGINT and execs the server, which inherits the ignored SIGINT as
it would from ``cmd &`` in a script."""


def sigint_ignored_under(launcher: list[str]) -> bool:
    """Whether a Python process started through ``launcher`` begins with SIGINT ignored."""
    probe = "import signal; print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"
    result = subprocess.run(
        [*launcher, sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return result.stdout.strip() == "True"


@pytest.mark.parametrize(
    "launcher", [[], SIGINT_IGNORED], ids=["started-directly", "started-with-sigint-ignored"]
)
def test_ctrl_c_with_open_watches_ends_them_and_logs_no_traceback(
    tmp_path: Path, launcher: list[str]
) -> None:
    if launcher:  # the case is what it says: the server starts with SIGINT ignored
        assert sigint_ignored_under(launcher)
    server = start_server(tmp_path / "server", launcher=launcher)
    ended: dict[str, str] = {}
    opened = threading.Barrier(len(WATCHES) + 1, timeout=30)

    def watch(path: str) -> None:
        with (
            server.client(timeout=httpx.Timeout(60.0)) as client,
            client.stream("GET", path) as response,
        ):
            opened.wait()
            try:
                for _ in response.iter_bytes():
                    pass
                ended[path] = "complete"
            except httpx.HTTPError as err:
                ended[path] = f"broken: {err!r}"

    threads = [threading.Thread(target=watch, args=(p,)) for p in WATCHES]
    for thread in threads:
        thread.start()
    opened.wait()
    assert server.process.proc is not None
    server.process.proc.send_signal(signal.SIGINT)
    for thread in threads:
        thread.join(timeout=60)
    proc = server.process.proc
    wait_for(lambda: proc.poll() is not None, "the server to exit")
    assert proc.returncode == 130  # ended by Ctrl-C, cleanly
    assert ended == dict.fromkeys(WATCHES, "complete")
    log = server.process.output()
    assert "Traceback" not in log
    assert "Exception in ASGI application" not in log
    server.stop()
