"""DeviceTaintRules as the device view sees them: patches that only add a taint.

A rule's ``deviceSelector`` (driver, pool, device) selects devices exactly as a patch's
filter with the same names does, and its one taint joins the device's taints as a patch's
taint would (same key and effect: the one with the highest precedence wins; a rule has
priority 0). A rule without a selector taints no device (upstream: "without a selector, no
devices are matched"), which is what a patch that sets nothing does.

``PatchesAndRules`` shows both kinds to the view as one source of patches. A rule appears
under the key ``DeviceTaintRule/<name>``, which no ResourceSlicePatch can have (a ``/`` is
not allowed in a name), so the two never collide and the patch status controller, which
reads the real patches, leaves rules alone. It does not start or stop the two sources: they
belong to the cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..sources import Handler, Source, SourceEvent
from ..toolkit import JSON

RULE_PREFIX = "DeviceTaintRule/"


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def rule_as_patch(rule: JSON) -> JSON:
    """The patch-shaped form of a DeviceTaintRule (raw JSON in, raw JSON out)."""
    meta = _dict(rule.get("metadata"))
    spec = _dict(rule.get("spec"))
    selector = spec.get("deviceSelector")
    taint = spec.get("taint")
    devices: JSON = {}
    if isinstance(selector, dict):
        devices["filter"] = {
            k: selector[k] for k in ("driver", "pool", "device") if isinstance(selector.get(k), str)
        }
        if isinstance(taint, dict):
            devices["taints"] = [taint]
    patch_meta: JSON = {
        k: meta[k]
        for k in ("uid", "generation", "creationTimestamp", "resourceVersion")
        if k in meta
    }
    patch_meta["name"] = RULE_PREFIX + str(meta.get("name", ""))
    return {"metadata": patch_meta, "spec": {"devices": devices}}


class PatchesAndRules:
    """One source of patches over a source of ResourceSlicePatches and one of DeviceTaintRules."""

    def __init__(self, patches: Source, rules: Source) -> None:
        self.patches = patches
        self.rules = rules
        self.name = f"{patches.name}+{rules.name}"

    def add_handler(self, handler: Handler) -> None:
        self.patches.add_handler(handler)

        def on_rule(event: SourceEvent) -> None:
            handler(
                SourceEvent(
                    event.type,
                    RULE_PREFIX + event.key,
                    rule_as_patch(event.obj),
                    rule_as_patch(event.old) if event.old is not None else None,
                )
            )

        self.rules.add_handler(on_rule)

    async def start(self) -> None:
        """Nothing: the cluster starts both sources."""

    async def close(self) -> None:
        """Nothing: the cluster closes both sources."""

    @property
    def has_synced(self) -> bool:
        return self.patches.has_synced and self.rules.has_synced

    async def wait_synced(self) -> None:
        await asyncio.gather(self.patches.wait_synced(), self.rules.wait_synced())

    @property
    def revision(self) -> int:
        return max(self.patches.revision, self.rules.revision)

    async def reached(self, revision: int) -> None:
        """Until either source reaches ``revision`` (``revision`` is the greater of theirs)."""
        waits = [asyncio.ensure_future(s.reached(revision)) for s in (self.patches, self.rules)]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    def request_progress(self) -> None:
        self.patches.request_progress()
        self.rules.request_progress()

    def get(self, key: str) -> JSON | None:
        if key.startswith(RULE_PREFIX):
            rule = self.rules.get(key.removeprefix(RULE_PREFIX))
            return rule_as_patch(rule) if rule is not None else None
        return self.patches.get(key)

    def lookup(self) -> Callable[[str], JSON | None]:
        return self.get

    def items(self) -> list[JSON]:
        return [*self.patches.items(), *(rule_as_patch(r) for r in self.rules.items())]
