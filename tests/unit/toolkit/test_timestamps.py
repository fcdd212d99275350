"""Times as the server writes them (``toolkit.timestamps``)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from apiserver.toolkit.timestamps import now_rfc3339, parse_rfc3339, rfc3339


def test_now_is_the_current_second_as_kubernetes_writes_it() -> None:
    for _ in range(3):  # across a second's turn, too
        before = datetime.now(UTC).replace(microsecond=0)
        written = now_rfc3339()
        after = datetime.now(UTC)
        moment = parse_rfc3339(written)
        assert moment is not None
        assert before <= moment <= after
        assert written == rfc3339(moment)
        assert written.endswith("Z")
        time.sleep(0.6)


def test_a_computed_moment_is_written_in_utc_whole_seconds() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC) + timedelta(hours=1)
    assert rfc3339(moment) == "2026-01-02T04:04:05Z"
    assert rfc3339(moment.replace(tzinfo=None)) == "2026-01-02T04:04:05Z"
