"""Reservations across two replicas on one real etcd: two stores (two etcd clients, one of
them behind the watch cache), two reservation services, one set of devices."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from apiserver.kinds.devicereservation import DeviceReservationStrategy
from apiserver.kinds.resourceclaim import ResourceClaimStrategy
from apiserver.machinery import Registry, errors
from apiserver.reservations import ClaimRef, ReservationService
from apiserver.sources import StoreSource
from apiserver.storage import Store
from apiserver.storage.cacher import WatchCache
from devtools.localetcd import LocalEtcd
from devtools.waiting import eventually

from .conftest import etcd_store, unique_prefix

GROUP = "resource.k8s.io"
DRIVER = "gpu.example.com"
ALL = {(DRIVER, "node-1", f"gpu-{i}") for i in range(10)}


class Replica:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.registry = Registry(DeviceReservationStrategy.for_group(GROUP), store)
        prefix = ResourceClaimStrategy.upstream().resource.key_prefix()
        self.claims = StoreSource(store, prefix, name="resourceclaims")
        self.service = ReservationService(self.registry, self.claims)

    async def start(self) -> None:
        await self.store.start()
        await self.claims.start()
        await self.service.start()
        await self.service.source.wait_synced()

    async def close(self) -> None:
        await self.service.close()
        await self.claims.close()
        await self.store.close()


@pytest.fixture
async def replicas(etcd: LocalEtcd) -> AsyncIterator[tuple[Replica, Replica]]:
    prefix = unique_prefix()
    a = Replica(etcd_store(etcd, prefix))
    b = Replica(WatchCache(etcd_store(etcd, prefix)))
    await a.start()
    await b.start()
    try:
        yield a, b
    finally:
        await b.close()
        await a.close()


async def test_two_replicas_never_reserve_one_device_twice(
    replicas: tuple[Replica, Replica],
) -> None:
    """50 reserves, alternating between the replicas, each for one of the last 10 devices
    (five per device, in random order): exactly 10 win, each device once, and both
    replicas come to see every device held, whichever replica reserved it."""
    wanted = [(DRIVER, "node-1", f"gpu-{i % 10}") for i in range(50)]
    random.shuffle(wanted)
    outcomes = await asyncio.gather(
        *(
            replicas[i % 2].service.reserve("node-1", [d], [ClaimRef("default", f"c{i}")], 60)
            for i, d in enumerate(wanted)
        ),
        return_exceptions=True,
    )
    winners = [o for o in outcomes if not isinstance(o, BaseException)]
    assert len(winners) == 10
    won = [(d.driver, d.pool, d.device) for w in winners for d in w.spec.devices]
    assert sorted(won) == sorted(ALL)
    assert all(
        isinstance(o, errors.StatusError) and o.code == 409
        for o in outcomes
        if isinstance(o, BaseException)
    )
    for replica in replicas:
        await eventually(lambda r=replica: r.service.held() == ALL)


async def test_two_replicas_reserving_all_devices_in_different_orders(
    replicas: tuple[Replica, Replica],
) -> None:
    orders = [random.sample(sorted(ALL), 10) for _ in range(50)]
    outcomes = await asyncio.gather(
        *(
            replicas[i % 2].service.reserve("node-1", order, [ClaimRef("default", f"c{i}")], 60)
            for i, order in enumerate(orders)
        ),
        return_exceptions=True,
    )
    assert len([o for o in outcomes if not isinstance(o, BaseException)]) == 1
    for replica in replicas:
        await eventually(lambda r=replica: r.service.held() == ALL)


async def test_a_release_on_one_replica_frees_the_devices_on_the_other(
    replicas: tuple[Replica, Replica],
) -> None:
    a, b = replicas
    first = await a.service.reserve("node-1", sorted(ALL)[:2], [ClaimRef("default", "x")], 60)
    await eventually(lambda: b.service.held() == set(sorted(ALL)[:2]))
    with pytest.raises(errors.StatusError) as info:
        await b.service.reserve("node-1", sorted(ALL)[1:3], [ClaimRef("default", "y")], 60)
    assert info.value.code == 409
    assert await b.service.release(str(first.metadata.name)) is True
    await eventually(lambda: a.service.held() == set())
    second = await b.service.reserve("node-1", sorted(ALL)[1:3], [ClaimRef("default", "y")], 60)
    assert second.metadata.name
