"""Keeping Python's cyclic garbage collector out of bulk work, and how often it runs in a
server process.

Work that makes tens of thousands of objects at once (the device view's build, the pool
index's first absorb, an allocation review over thousands of nodes) would otherwise set off
a collection every 700 allocations, each walking everything young, and promote what the
work still holds into older generations that full collections walk again. Pausing the
collector for the work costs nothing for objects freed by reference counting (nearly all of
them); cyclic garbage made meanwhile is collected once the collector is back.
``gc.freeze()`` then moves what a build made to stay out of the collector's sight for good.

Between bulk work, a server allocates steadily (each request, each watch event) and keeps
much of it (its caches of every object). With Python's default threshold (a collection of
the young generation every 700 allocations more than frees) what a cache keeps reaches the
oldest generation within a few requests, and full collections, each walking every object
not frozen, follow every few seconds. While 2,500 pods were bound at 500 nodes the server
made 13 of about 180 ms each, 2.3 s of the collector's 3.9 s. ``set_young_threshold``
raises the first threshold for the process (``--gc-young-threshold``), much as a Go
server's ``GOGC`` trades memory for fewer collections: young collections come less often,
more of what they would walk has died, and less reaches the generations that cost most to
walk. At 20,000 (``YOUNG_THRESHOLD``) the same run made no full collection and spent 0.8 s
collecting; at 50,000, 0.7 s, but each young collection took 45 ms rather than 17 (a pause
every request waiting then sits out).

Overlapping pauses (two reviews interleaved on the event loop) are safe: only the pause
that turned the collector off turns it back on, so it is never left off once the work that
paused it is over (an interleaved pause that found it off already leaves it alone).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

YOUNG_THRESHOLD = 20_000
"""Allocations (more than frees) between collections of the young generation, for a server
process. Python's default is 700."""


def set_young_threshold(allocations: int) -> None:
    """Collect the young generation every ``allocations`` net allocations (the older
    generations' thresholds, counted in collections of the one below, stay)."""
    if allocations <= 0:
        raise ValueError(f"the young generation's threshold must be more than 0, not {allocations}")
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(allocations, middle, oldest)


@contextlib.contextmanager
def collector_paused(*, pause: bool = True, freeze: bool = False) -> Iterator[None]:
    """The block with the cyclic collector off (``pause``, if it was on); ``freeze``: what
    exists when the block ends is frozen (``gc.freeze``) before the collector is back."""
    paused = pause and gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            if freeze:
                gc.freeze()
            gc.enable()
