"""Reading the access lines (``--access-log``) a server process wrote to its log."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from devtools.waiting import wait_for

from .harness import ServerProcess

Entry = dict[str, Any]


def access_entries(server: ServerProcess) -> list[Entry]:
    """Every access line of the server's log so far, parsed."""
    return [
        json.loads(line)
        for line in server.log.read_text(errors="replace").splitlines()
        if line.startswith("{") and '"msg":"HTTP"' in line
    ]


def wait_for_entry(server: ServerProcess, matches: Callable[[Entry], bool]) -> Entry:
    """The newest access line ``matches`` accepts, once the server has written one (a line
    is written when its request is over, which may be just after the client has its answer)."""
    found: Entry = wait_for(
        lambda: next((e for e in reversed(access_entries(server)) if matches(e)), None),
        f"an access line in {server.log.name}",
    )
    return found
