"""Keeping Python's cyclic garbage collector out of bulk work.

Work that makes tens of thousands of objects at once (the device view's build, the pool
index's first absorb, an allocation review over thousands of nodes) would otherwise set off
a collection every 700 allocations, each walking everything young, and promote what the
work still holds into older generations that full collections walk again. Pausing the
collector for the work costs nothing for objects freed by reference counting (nearly all of
them); cyclic garbage made meanwhile is collected once the collector is back.
``gc.freeze()`` then moves what a build made to stay out of the collector's sight for good.

Overlapping pauses (two reviews interleaved on the event loop) are safe: only the pause
that turned the collector off turns it back on, so it is never left off once the work that
paused it is over (an interleaved pause that found it off already leaves it alone).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


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
