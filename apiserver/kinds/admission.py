"""Admission plugins of our kinds: a per-user rate limit on creates.

Each user name gets a token bucket of ``burst`` tokens refilled at ``rate`` a second; a
create takes one, and when there is none it is refused with 429 TooManyRequests naming
the whole seconds until the next token (in the message and ``details.retryAfterSeconds``). Dry runs are checked but take
nothing. The buckets live in this process: with several replicas behind a load balancer a
user gets up to ``rate`` per replica.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from ..machinery import CREATE, AdmissionRequest, ResourceType, errors
from ..toolkit import TokenBucket

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
        self._buckets: dict[str, TokenBucket] = {}

    def admit(self, user: str, *, dry_run: bool = False) -> None:
        """Take a token for ``user``, or raise 429 saying when to retry."""
        bucket = self._buckets.get(user)
        if bucket is None:
            bucket = self._buckets[user] = TokenBucket(self.rate, self.burst, self.clock)
        wait = bucket.take(dry_run=dry_run)
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            limit = (
                f"each user may create {self.rate:g} per second, in bursts of up to {self.burst}"
            )
            if self.flags is not None:
                limit += f" (the server's {self.flags[0]} and {self.flags[1]})"
            raise errors.too_many_requests(
                f"too many {self.what} created by {user or 'anonymous'}: {limit};"
                f" retry after {seconds} second{'s' if seconds != 1 else ''}",
                seconds,
            )
        if len(self._buckets) > MAX_TRACKED:
            self._forget_full()

    def _forget_full(self) -> None:
        for user in [u for u, b in self._buckets.items() if b.full]:
            del self._buckets[user]


class CreateRateLimit:
    """Creates of one resource, in whichever version it is served, limited per user (dry
    runs are checked but take nothing)."""

    def __init__(self, resource: ResourceType, limiter: UserRateLimiter) -> None:
        self.resource = resource
        self.limiter = limiter

    async def admit(self, request: AdmissionRequest) -> None:
        resource = request.resource
        if (
            request.operation == CREATE
            and resource.group == self.resource.group
            and resource.plural == self.resource.plural
        ):
            self.limiter.admit(request.user.name, dry_run=request.dry_run)
