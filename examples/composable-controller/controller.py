"""An example composable (fabric) controller, as KEP-5007 describes one, for trying the
attach flow on a laptop. The attach is simulated: nothing is plugged anywhere.

It publishes the free fabric devices of each model as one ResourceSlice pool,
``fabric-<model>`` (usable from all nodes), each device marked
``kubernetes.io/needs-attaching: true``. It watches ResourceClaims for a device of its
driver whose ``status.devices[]`` entry has the condition ``kubernetes.io/needs-attaching``
(set by the scheduler shim's bind), waits ``--attach-latency`` seconds, and sets
``kubernetes.io/is-attached`` or, with ``--failure-rate`` or for a ``--fail-node``,
``kubernetes.io/attach-failed``. An attached device then moves from the fabric pool into
the node's pool (named after the node, ``nodeName`` set, ``needs-attaching: false``),
each pool's generation bumped. While the claim that attached it holds it, the device in
the node's pool carries a NoSchedule taint naming the claim, so nothing else is given it;
once the claim lets go it is a free attached device, which the allocator prefers to one
that still needs attaching.

Its state is the slices it published (labelled with its driver): restarted, it reads them
back, and finishes a move that a crash interrupted.

    .venv/bin/python examples/composable-controller/controller.py \\
        --kubeconfig kubeconfig --driver composable.example.com --model fpga-x=4
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
from dataclasses import dataclass, field
from typing import Any

from apiserver.kubeclient import (
    Collection,
    Conflict,
    KubeClient,
    ListWatch,
    NotFound,
    load_kubeconfig,
)
from apiserver.toolkit.timestamps import now_rfc3339

JSON = dict[str, Any]
NEEDS_ATTACHING = "kubernetes.io/needs-attaching"
IS_ATTACHED = "kubernetes.io/is-attached"
ATTACH_FAILED = "kubernetes.io/attach-failed"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"
OWNER = "composable.example.com/driver"
"""The label on every slice this controller publishes: its driver."""
IN_USE = "composable.example.com/in-use-by-claim"
"""The taint on an attached device while the claim that attached it holds it."""

log = logging.getLogger("composable-controller")


def client(kubeconfig: str) -> KubeClient:
    """A client of the server the kubeconfig names (what the server's ``--kubeconfig-out``
    writes: its URL, CA and a bearer token)."""
    return KubeClient(load_kubeconfig(kubeconfig), user_agent="composable-controller")


def true_conditions(entry: JSON) -> set[str]:
    return {c["type"] for c in entry.get("conditions") or [] if c.get("status") == "True"}


@dataclass
class Pool:
    """One pool this controller publishes, as one ResourceSlice."""

    name: str
    node: str | None
    """None for a fabric pool (usable from all nodes)."""
    devices: dict[str, JSON] = field(default_factory=dict)
    generation: int = 0
    stored: JSON | None = None
    """The slice as last written (its resourceVersion)."""


class Controller:
    def __init__(
        self,
        api: KubeClient,
        driver: str,
        models: dict[str, int],
        latency: float,
        failure_rate: float,
        fail_nodes: set[str],
    ) -> None:
        self.api = api
        self.driver = driver
        self.models = models
        self.latency = latency
        self.failure_rate = failure_rate
        self.fail_nodes = fail_nodes
        self.pools: dict[str, Pool] = {}
        self.attaching: set[tuple[str, str, str]] = set()
        self.lock = asyncio.Lock()
        self.tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self.tasks.add(task)  # the loop keeps only a weak reference
        task.add_done_callback(self.tasks.discard)

    # -- the pools ---------------------------------------------------------------------

    def device(self, name: str, model: str, *, attached: bool) -> JSON:
        return {
            "name": name,
            "attributes": {"model": {"string": model}, NEEDS_ATTACHING: {"bool": not attached}},
        }

    async def load(self) -> None:
        """Read back the slices published before; every device of a model that is in no
        node's pool is free on the fabric."""
        listing = await self.api.list(SLICES, {"labelSelector": f"{OWNER}={self.driver}"})
        for stored in listing.items:
            spec = stored["spec"]
            pool = Pool(spec["pool"]["name"], spec.get("nodeName"), stored=stored)
            pool.generation = spec["pool"]["generation"]
            pool.devices = {d["name"]: d for d in spec.get("devices") or []}
            self.pools[pool.name] = pool
        attached = {n for p in self.pools.values() if p.node for n in p.devices}
        for model, count in self.models.items():
            pool = self.pools.setdefault(f"fabric-{model}", Pool(f"fabric-{model}", None))
            names = [f"{model}-{i}" for i in range(count)]
            pool.devices = {
                n: self.device(n, model, attached=False) for n in names if n not in attached
            }
            await self.publish(pool)
            log.info("pool %s: %d free devices on the fabric", pool.name, len(pool.devices))

    async def publish(self, pool: Pool) -> None:
        """Write the pool's slice, its generation one up."""
        pool.generation += 1
        body: JSON = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {
                "name": f"{self.driver}-{pool.name}",
                "labels": {OWNER: self.driver},
            },
            "spec": {
                "driver": self.driver,
                "pool": {"name": pool.name, "generation": pool.generation, "resourceSliceCount": 1},
                "devices": sorted(pool.devices.values(), key=lambda d: d["name"]),
            },
        }
        if pool.node:
            body["spec"]["nodeName"] = pool.node
        else:
            body["spec"]["allNodes"] = True
        if pool.stored is None:
            pool.stored = await self.api.create(SLICES, body)
        else:
            body["metadata"]["resourceVersion"] = pool.stored["metadata"]["resourceVersion"]
            pool.stored = await self.api.update(f"{SLICES}/{body['metadata']['name']}", body)

    async def move(self, fabric: str, name: str, node: str, claim_uid: str) -> None:
        """An attached device leaves the fabric pool for the node's pool, in use."""
        async with self.lock:
            source = self.pools[fabric]
            device = source.devices.pop(name, None)
            if device is None:
                return
            target = self.pools.setdefault(node, Pool(node, node))
            device = self.device(name, device["attributes"]["model"]["string"], attached=True)
            device["taints"] = [{"key": IN_USE, "value": claim_uid, "effect": "NoSchedule"}]
            target.devices[name] = device
            await self.publish(source)
            await self.publish(target)
            log.info("device %s moved from pool %s to pool %s", name, fabric, node)

    async def release(self, claims: dict[str, JSON]) -> None:
        """Untaint attached devices whose claim (by uid, in ``claims``) no longer holds them."""
        async with self.lock:
            for pool in [p for p in self.pools.values() if p.node]:
                changed = False
                for name, device in pool.devices.items():
                    uid = next((t["value"] for t in device.get("taints") or []), None)
                    if uid and not self.holds(claims.get(uid), name):
                        device.pop("taints")
                        changed = True
                        log.info("device %s on %s is free again", name, pool.node)
                if changed:
                    await self.publish(pool)

    def holds(self, claim: JSON | None, device: str) -> bool:
        allocation = ((claim or {}).get("status") or {}).get("allocation") or {}
        return any(
            r["driver"] == self.driver and r["device"] == device
            for r in (allocation.get("devices") or {}).get("results") or []
        )

    # -- the claims --------------------------------------------------------------------

    def seen(self, claim: JSON) -> None:
        """Start an attach for each of our devices the claim asks to be attached; finish a
        move a restart interrupted."""
        uid = claim["metadata"]["uid"]
        for entry in (claim.get("status") or {}).get("devices") or []:
            pool = self.pools.get(entry["pool"])
            if entry["driver"] != self.driver or pool is None or pool.node is not None:
                continue
            true, node = true_conditions(entry), entry.get("nodeName")
            if IS_ATTACHED in true and entry["device"] in pool.devices and node:
                self.spawn(self.move(pool.name, entry["device"], node, uid))
            elif NEEDS_ATTACHING in true and not true & {IS_ATTACHED, ATTACH_FAILED}:
                key = (uid, entry["pool"], entry["device"])
                if key not in self.attaching and self.holds(claim, entry["device"]):
                    self.attaching.add(key)
                    self.spawn(self.attach(claim, entry, key))

    async def attach(self, claim: JSON, entry: JSON, key: tuple[str, str, str]) -> None:
        meta, node, name = claim["metadata"], entry["nodeName"], entry["device"]
        try:
            log.info(
                "attaching %s to %s for claim %s/%s", name, node, meta["namespace"], meta["name"]
            )
            await asyncio.sleep(self.latency)  # the simulated attach
            if node in self.fail_nodes or random.random() < self.failure_rate:
                outcome, why = ATTACH_FAILED, f"simulated failure attaching {name} to {node}"
            elif name not in self.pools[entry["pool"]].devices:
                outcome, why = ATTACH_FAILED, f"{name} is not free on the fabric"
            else:
                outcome, why = IS_ATTACHED, f"{name} attached to {node}"
            if await self.set_condition(meta, entry, outcome, why):
                log.info("claim %s/%s: %s (%s)", meta["namespace"], meta["name"], outcome, why)
                if outcome == IS_ATTACHED:
                    await self.move(entry["pool"], name, node, meta["uid"])
        except Exception:
            log.exception("attaching %s to %s failed", name, node)
        finally:
            self.attaching.discard(key)

    async def set_condition(self, meta: JSON, entry: JSON, outcome: str, why: str) -> bool:
        """Add the outcome to the claim's entry for the device; False when the claim no
        longer waits for it (deleted, deallocated, answered)."""
        path = (
            f"/apis/resource.k8s.io/v1/namespaces/{meta['namespace']}/resourceclaims/{meta['name']}"
        )
        for _ in range(10):
            try:
                claim = await self.api.get(path)
            except NotFound:
                return False
            mine = [
                e
                for e in (claim.get("status") or {}).get("devices") or []
                if (e["driver"], e["pool"], e["device"])
                == (self.driver, entry["pool"], entry["device"])
            ]
            if claim["metadata"]["uid"] != meta["uid"] or not mine:
                return False
            if true_conditions(mine[0]) & {IS_ATTACHED, ATTACH_FAILED}:
                return False
            reason = "Attached" if outcome == IS_ATTACHED else "AttachFailed"
            mine[0].setdefault("conditions", []).append(
                {
                    "type": outcome,
                    "status": "True",
                    "lastTransitionTime": now_rfc3339(),
                    "reason": reason,
                    "message": why,
                }
            )
            try:
                await self.api.update(f"{path}/status", claim)
            except Conflict:
                continue
            return True
        return False

    async def watch_claims(self) -> None:
        """List, then watch, the claims of every namespace (resumed after a dropped watch,
        listed again when the server's history is gone, with a backoff between failures)."""
        claims: dict[str, JSON] = {}

        async def listed(items: list[JSON]) -> None:
            claims.clear()
            claims.update((c["metadata"]["uid"], c) for c in items)
            for claim in items:
                self.seen(claim)
            await self.release(claims)
            log.info("watching ResourceClaims")

        async def changed(kind: str, claim: JSON) -> None:
            uid = claim["metadata"]["uid"]
            if kind == "DELETED":
                claims.pop(uid, None)
            else:
                claims[uid] = claim
                self.seen(claim)
            await self.release(claims)

        watch = ListWatch(
            Collection(self.api, CLAIMS),
            name="claims",
            on_list=listed,
            on_event=changed,
            log=log,
        )
        await watch.run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", default="kubeconfig", help="the server's kubeconfig")
    parser.add_argument("--driver", default="composable.example.com", help="the driver's name")
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        help="MODEL=COUNT: devices of a model on the fabric (repeatable; default fpga-x=4)",
    )
    parser.add_argument(
        "--attach-latency", type=float, default=2.0, help="seconds an attach takes (default 2)"
    )
    parser.add_argument(
        "--failure-rate",
        type=float,
        default=0.0,
        help="share of attaches that fail, 0..1, on every node (default 0)",
    )
    parser.add_argument(
        "--fail-node",
        action="append",
        default=[],
        help="a node every attach to fails (repeatable)",
    )
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args()
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    models = dict(m.split("=", 1) for m in args.model or ["fpga-x=4"])

    async def run() -> None:
        async with client(args.kubeconfig) as api:
            controller = Controller(
                api,
                args.driver,
                {m: int(n) for m, n in models.items()},
                args.attach_latency,
                args.failure_rate,
                set(args.fail_node),
            )
            await controller.load()
            await controller.watch_claims()

    asyncio.run(run())


if __name__ == "__main__":
    main()
