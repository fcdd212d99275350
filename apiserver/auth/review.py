"""One review POSTed to the kube-apiserver (TokenReview, SubjectAccessReview), with retries.

As Kubernetes' webhook clients: a call that fails to connect, times out, or is answered
429 or 5xx is tried again after a backoff that grows (0.5 s, then 1.5 times the last, five
tries in all by default); any other answer is final. What comes back is the review's
``status``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ..kubeclient import APIError, KubeClient
from ..toolkit import Backoff

TRIES = 5


class ReviewError(Exception):
    """The kube-apiserver could not be asked, or did not answer with a review."""


def review_backoff(sleep: Callable[[float], Awaitable[None]] | None = None) -> Backoff:
    """The waits between the tries of a review: 0.5 s, growing by half each time."""
    return Backoff(0.5, 60.0, 1.5, jitter=0.0, sleep=sleep or asyncio.sleep)


DEFAULT_BACKOFF = review_backoff()


async def post_review(
    client: KubeClient,
    path: str,
    review: dict[str, Any],
    backoff: Backoff = DEFAULT_BACKOFF,
    tries: int = TRIES,
) -> dict[str, Any]:
    """The status of the review the kube-apiserver returns for ``review``."""
    kind = review["kind"]
    delays = iter(backoff.delays(tries - 1))
    while True:
        try:
            answer = await client.create(path, review)
            break
        except APIError as err:
            if not err.retryable:
                raise ReviewError(f"{kind}: HTTP {err.code}: {err.message}") from err
            failure = f"{kind}: {err}"
        delay = next(delays, None)
        if delay is None:
            raise ReviewError(failure)
        await backoff.sleep(delay)
    status = answer.get("status")
    return status if isinstance(status, dict) else {}
