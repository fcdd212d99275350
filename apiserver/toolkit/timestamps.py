"""Timestamps as Kubernetes writes them in objects: RFC 3339, UTC, whole seconds.

The one place that writes and reads them: ``now_rfc3339`` for what the server stamps
(``creationTimestamp``, condition times), ``rfc3339`` for a computed moment (an expiry),
``parse_rfc3339`` for a time read back from an object.
"""

from __future__ import annotations

import functools
import time
from datetime import UTC, datetime
from typing import Any


def rfc3339(moment: datetime) -> str:
    """``moment`` as Kubernetes writes a time (a naive one is taken as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339() -> str:
    return _second_rfc3339(int(time.time()))


@functools.lru_cache(maxsize=1)
def _second_rfc3339(second: int) -> str:
    """A whole second as written, made once: every write stamps a time or two, and
    formatting one each time took a few percent of a write's CPU."""
    return rfc3339(datetime.fromtimestamp(second, UTC))


def parse_rfc3339(value: Any) -> datetime | None:
    """The moment a time field holds, aware (UTC when it names no zone); None when it is not
    a string holding a time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
