"""One review POSTed to the kube-apiserver (TokenReview, SubjectAccessReview), with retries.

As Kubernetes' webhook clients: a call that fails to connect, times out, or is answered
429 or 5xx is tried again after a backoff that grows (0.5 s, then 1.5 times the last, five tries in all
by default); any other answer is final. What comes back is the review's ``status``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx


class ReviewError(Exception):
    """The kube-apiserver could not be asked, or did not answer with a review."""


@dataclass(frozen=True)
class Backoff:
    first: float = 0.5
    factor: float = 1.5
    tries: int = 5
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    def delays(self) -> list[float]:
        """The waits between the tries."""
        return [self.first * self.factor**i for i in range(max(self.tries - 1, 0))]


DEFAULT_BACKOFF = Backoff()


def _retryable(response: httpx.Response) -> bool:
    return response.status_code == 429 or response.status_code >= 500


async def post_review(
    client: httpx.AsyncClient,
    path: str,
    review: dict[str, Any],
    backoff: Backoff = DEFAULT_BACKOFF,
) -> dict[str, Any]:
    """The status of the review the kube-apiserver returns for ``review``."""
    kind = review["kind"]
    delays = iter(backoff.delays())
    while True:
        try:
            response = await client.post(path, json=review)
        except httpx.TransportError as exc:
            failure = f"{kind}: {exc!r}"
        else:
            if not _retryable(response):
                break
            failure = f"{kind}: HTTP {response.status_code}: {response.text[:200]}"
        delay = next(delays, None)
        if delay is None:
            raise ReviewError(failure)
        await backoff.sleep(delay)
    if response.status_code not in (200, 201):
        raise ReviewError(f"{kind}: HTTP {response.status_code}: {response.text[:200]}")
    try:
        body = response.json()
    except ValueError as exc:
        raise ReviewError(f"{kind}: the answer is not JSON") from exc
    status = body.get("status") if isinstance(body, dict) else None
    return status if isinstance(status, dict) else {}
