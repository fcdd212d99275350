"""What a ResourceClaim went through in the KEP-5007 attach flow: its statuses in order,
replayed by a watch from a resourceVersion, and tests of one status or of the order of
several (allocated and waiting for an attach, attach failed, cleared)."""

from __future__ import annotations

from collections.abc import Callable

import orjson

from apiserver.api.resource import NEEDS_ATTACHING
from apiserver.toolkit import JSON

from .harness import ServerProcess

IS_ATTACHED = "kubernetes.io/is-attached"
ATTACH_FAILED = "kubernetes.io/attach-failed"


def history(
    server: ServerProcess,
    namespace: str,
    claim: str,
    since: str,
    until: Callable[[list[JSON]], bool],
) -> list[JSON]:
    """The claim's statuses, in order, from resourceVersion ``since`` on (a watch replays
    them), read until ``until`` holds for what was read."""
    seen: list[JSON] = []
    params = {
        "watch": "true",
        "resourceVersion": since,
        "fieldSelector": f"metadata.name={claim}",
        "timeoutSeconds": "60",
    }
    path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
    with server.client() as client, client.stream("GET", path, params=params) as answer:
        for line in answer.iter_lines():
            event = orjson.loads(line)
            if event["type"] in ("ADDED", "MODIFIED"):
                seen.append(event["object"].get("status") or {})
                if until(seen):
                    return seen
    raise AssertionError(f"the claim's history never got there: {seen}")


def conditions(entry: JSON) -> dict[str, str]:
    """A ``status.devices[]`` entry's conditions: type → status."""
    return {c["type"]: c["status"] for c in entry.get("conditions") or []}


def waiting_on(node: str) -> Callable[[JSON], bool]:
    """An allocated status with the device asked to be attached to ``node``, not yet done."""

    def test(status: JSON) -> bool:
        entries = status.get("devices") or []
        return bool(status.get("allocation")) and any(
            e.get("nodeName") == node and conditions(e) == {NEEDS_ATTACHING: "True"}
            for e in entries
        )

    return test


def failed_on(node: str) -> Callable[[JSON], bool]:
    """A status whose device entry for ``node`` says the attach failed."""

    def test(status: JSON) -> bool:
        return any(
            e.get("nodeName") == node and conditions(e).get(ATTACH_FAILED) == "True"
            for e in status.get("devices") or []
        )

    return test


def cleared(status: JSON) -> bool:
    return not any(status.get(k) for k in ("allocation", "reservedFor", "devices"))


def then(*steps: Callable[[JSON], bool]) -> Callable[[list[JSON]], bool]:
    """True once the history shows each step, in this order."""

    def test(seen: list[JSON]) -> bool:
        at = 0
        for status in seen:
            if at < len(steps) and steps[at](status):
                at += 1
        return at == len(steps)

    return test
