"""Ctrl-C with watchers open: the server ends each watch as a complete response when it
begins to shut down (clients see the watch end), and exits without a traceback."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import httpx

from devtools.waiting import wait_for

from .harness import start_server

WATCHES = (
    "/apis/resource.k8s.io/v1/resourceslices?watch=true",
    "/api/v1/nodes?watch=true&allowWatchBookmarks=true",
)


def test_ctrl_c_with_open_watches_ends_them_and_logs_no_traceback(tmp_path: Path) -> None:
    server = start_server(tmp_path / "server")
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
