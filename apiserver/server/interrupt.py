"""Ctrl-C ends the server the way it ends a Kubernetes binary: a graceful shutdown, then exit
status 130 (128 + SIGINT), without a traceback, whatever its parent left SIGINT set to.

A parent may start the server with SIGINT ignored: a non-interactive shell does so for each
job it runs in the background (``cmd &`` without job control, as scripts and CI runners do),
and an ignored signal stays ignored across exec. uvicorn still catches the Ctrl-C (it installs
its own handler) and shuts down, but then puts the inherited disposition back and raises the
signal again to end the process as the signal would have: ignored, so the server exited 0 as
if nothing had stopped it. Go's ``signal.Notify`` takes an ignored SIGINT back as well, so a
kube-apiserver answers Ctrl-C however it was started; this server does the same.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

INTERRUPTED = 128 + signal.SIGINT
"""The exit status of a process ended by Ctrl-C, as shells report it."""


def answer_ctrl_c() -> None:
    """SIGINT raises KeyboardInterrupt again if the parent left it ignored (only the main
    thread may set a handler; a server run elsewhere keeps what it has)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C anywhere in the block, while starting or once uvicorn has shut down (it raises
    the Ctrl-C it caught again), ends the process with ``INTERRUPTED`` and no traceback."""
    answer_ctrl_c()
    try:
        yield
    except KeyboardInterrupt:
        raise SystemExit(INTERRUPTED) from None
