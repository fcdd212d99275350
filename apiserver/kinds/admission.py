"""Admission a strategy can apply to creates: a per-user rate limit.

Each user name gets a token bucket of ``burst`` tokens refilled at ``rate`` a second; a
create takes one, and when there is none it is refused with 429 TooManyRequests and a
``Retry-After`` of the whole seconds until the next token. Dry runs are checked but take
nothing. The buckets live in this process: with several replicas behind a load balancer a
user gets up to ``rate`` per replica.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from ..machinery import errors

MAX_TRACKED = 10_000
"""Past this many users, buckets that have refilled completely are forgotten (a full bucket
is what a new user gets anyway)."""


class UserRateLimiter:
    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        what: str = "requests",
        flags: tuple[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``flags``: the server flags that set ``rate`` and ``burst``, named in the 429 so
        the user knows which limit it was and what an administrator can change."""
        if rate <= 0 or burst < 1:
            raise ValueError("a rate limit needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self.what = what
        self.flags = flags
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        """user -> (tokens, when they were counted)."""

    def _tokens(self, user: str, now: float) -> float:
        tokens, at = self._buckets.get(user, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - at) * self.rate)

    def admit(self, user: str, *, dry_run: bool = False) -> None:
        """Take a token for ``user``, or raise 429 with Retry-After."""
        now = self.clock()
        tokens = self._tokens(user, now)
        if tokens < 1:
            wait = max(1, math.ceil((1 - tokens) / self.rate))
            self._buckets[user] = (tokens, now)
            limit = (
                f"each user may create {self.rate:g} per second, in bursts of up to {self.burst}"
            )
            if self.flags is not None:
                limit += f" (the server's {self.flags[0]} and {self.flags[1]})"
            raise errors.too_many_requests(
                f"too many {self.what} created by {user or 'anonymous'}: {limit};"
                f" retry after {wait} second{'s' if wait != 1 else ''}",
                wait,
            )
        if dry_run:
            return
        self._buckets[user] = (tokens - 1, now)
        if len(self._buckets) > MAX_TRACKED:
            self._forget_full(now)

    def _forget_full(self, now: float) -> None:
        for user in [u for u in self._buckets if self._tokens(u, now) >= self.burst]:
            del self._buckets[user]
