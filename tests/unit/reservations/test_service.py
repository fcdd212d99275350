"""The reservation service over a real SQLite store: atomic reserve, release, what is held,
expiry and release once a claim's allocation holds the devices; devices pending on this
replica and the per-user cap."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apiserver.kinds.devicereservation import DeviceReservationStrategy
from apiserver.kinds.resourceclaim import ResourceClaimStrategy
from apiserver.machinery import DeleteOptions, Registry, errors
from apiserver.machinery.handlers import Endpoint
from apiserver.reservations import ClaimRef, ReservationService
from apiserver.sources import StoreSource
from apiserver.storage import Store
from apiserver.storage.errors import StorageUnavailableError
from apiserver.storage.sqlite import SQLiteStore
from devtools.waiting import eventually

GROUP = "resource.k8s.io"
DRIVER = "gpu.example.com"
CLAIMS = ResourceClaimStrategy.upstream().resource


def gpu(n: int, pool: str = "node-1") -> tuple[str, str, str]:
    return (DRIVER, pool, f"gpu-{n}")


CLAIM = ClaimRef("default", "train")


class Clock:
    """A clock the test moves: expiry without waiting for it."""

    def __init__(self) -> None:
        self.at = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.at


class Replica:
    def __init__(
        self, store: Store, clock: Clock | None = None, max_per_user: int = 100, **options: Any
    ) -> None:
        """``options``: more of the service's keyword arguments."""
        self.store = store
        self.registry = Registry(DeviceReservationStrategy.for_group(GROUP), store)
        self.claims = StoreSource(store, CLAIMS.key_prefix(), name="resourceclaims")
        if clock is not None:
            options["now"] = clock
        self.service = ReservationService(
            self.registry, self.claims, max_per_user=max_per_user, **options
        )

    async def start(self) -> None:
        await self.claims.start()
        await self.service.start()
        await self.claims.wait_synced()
        await self.service.source.wait_synced()

    async def close(self) -> None:
        await self.service.close()
        await self.claims.close()


@pytest.fixture
async def replica(store: SQLiteStore) -> AsyncIterator[Replica]:
    r = Replica(store)
    await r.start()
    try:
        yield r
    finally:
        await r.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def clocked(store: SQLiteStore, clock: Clock) -> AsyncIterator[Replica]:
    r = Replica(store, clock)
    await r.start()
    try:
        yield r
    finally:
        await r.close()


async def lock_keys(store: Store) -> set[str]:
    page = await store.list(f"/{GROUP}/devicereservationlocks/")
    return {item.key for item in page.items}


async def test_reserve_holds_every_device_at_once(replica: Replica) -> None:
    reservation = await replica.service.reserve("node-1", [gpu(0), gpu(1)], [CLAIM], 30)
    assert reservation.metadata.name
    assert reservation.metadata.name.startswith("train-")
    assert reservation.spec.node_name == "node-1"
    assert [(d.driver, d.pool, d.device) for d in reservation.spec.devices] == [gpu(0), gpu(1)]
    assert [(c.namespace, c.name) for c in reservation.spec.claims] == [("default", "train")]
    # Held here at once, before the watch delivers it, and then from the watch.
    assert replica.service.held() == {gpu(0), gpu(1)}
    await eventually(lambda: replica.service.source.get(str(reservation.metadata.name)))
    assert replica.service.held() == {gpu(0), gpu(1)}
    assert await lock_keys(replica.store) == {
        f"/{GROUP}/devicereservationlocks/{DRIVER}/node-1/gpu-0",
        f"/{GROUP}/devicereservationlocks/{DRIVER}/node-1/gpu-1",
    }


async def test_a_taken_device_is_a_conflict_naming_it_and_nothing_is_held(
    replica: Replica,
) -> None:
    await replica.service.reserve("node-1", [gpu(1)], [CLAIM], 30)
    with pytest.raises(errors.StatusError) as info:
        await replica.service.reserve("node-1", [gpu(0), gpu(1)], [ClaimRef("default", "b")], 30)
    assert info.value.code == 409
    assert info.value.reason == "Conflict"
    assert f"device {DRIVER}/node-1/gpu-1 is already held" in info.value.message
    assert info.value.details is not None
    assert [c["field"] for c in info.value.details["causes"]] == ["spec.devices[1]"]
    # All or none: gpu-0 of the losing reservation is not held.
    assert replica.service.held() == {gpu(1)}
    assert (
        len((await replica.registry.store.list(replica.registry.resource.key_prefix())).items) == 1
    )
    assert len(await lock_keys(replica.store)) == 1


async def test_release_frees_the_devices_and_their_keys(replica: Replica) -> None:
    first = await replica.service.reserve("node-1", [gpu(0), gpu(1)], [CLAIM], 30)
    assert await replica.service.release(str(first.metadata.name)) is True
    assert replica.service.held() == set()
    assert await lock_keys(replica.store) == set()
    assert await replica.service.release(str(first.metadata.name)) is False
    again = await replica.service.reserve("node-1", [gpu(1)], [CLAIM], 30)
    assert replica.service.held() == {gpu(1)}
    # A delete through the registry (what kubectl delete does) frees the keys too.
    await replica.registry.delete(None, str(again.metadata.name), DeleteOptions())
    assert await lock_keys(replica.store) == set()
    await eventually(lambda: replica.service.held() == set())


async def test_bad_request_is_invalid_and_stores_nothing(replica: Replica) -> None:
    with pytest.raises(errors.StatusError) as info:
        await replica.service.reserve("node-1", [gpu(0), (DRIVER, "node-1", "GPU_0")], [CLAIM], 30)
    assert info.value.code == 422
    assert info.value.details is not None
    assert [c["field"] for c in info.value.details["causes"]] == ["spec.devices[1].device"]
    with pytest.raises(errors.StatusError) as dup:
        await replica.service.reserve("node-1", [gpu(0), gpu(0)], [CLAIM], 30)
    assert dup.value.code == 422
    assert await lock_keys(replica.store) == set()
    assert replica.service.held() == set()


async def test_a_lapsed_reservation_holds_nothing_and_gives_way(
    clocked: Replica, clock: Clock
) -> None:
    old = await clocked.service.reserve("node-1", [gpu(0), gpu(1)], [CLAIM], 10)
    assert clocked.service.held() == {gpu(0), gpu(1)}
    clock.at += timedelta(seconds=11)
    assert clocked.service.held() == set()  # lapsed, whether or not deleted yet
    new = await clocked.service.reserve("node-1", [gpu(1)], [ClaimRef("default", "b")], 10)
    assert clocked.service.held() == {gpu(1)}
    page = await clocked.store.list(clocked.registry.resource.key_prefix())
    assert [i.obj["metadata"]["name"] for i in page.items] == [new.metadata.name]
    assert old.metadata.name != new.metadata.name
    assert len(await lock_keys(clocked.store)) == 1


async def test_the_releaser_deletes_a_reservation_once_it_lapses(replica: Replica) -> None:
    reservation = await replica.service.reserve("node-1", [gpu(0)], [CLAIM], 1)
    name = str(reservation.metadata.name)
    await eventually(lambda: replica.service.releaser.released.get(name) == "expired", timeout=30)
    assert await replica.store.get(replica.registry.resource.key(None, name)) is None
    assert await lock_keys(replica.store) == set()
    assert replica.service.held() == set()


def claim(name: str, devices: list[tuple[str, str, str]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {},
    }
    if devices is not None:
        obj["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": d, "pool": p, "device": n}
                        for d, p, n in devices
                    ]
                }
            }
        }
    return obj


async def test_the_releaser_deletes_a_reservation_once_its_claim_holds_the_devices(
    replica: Replica,
) -> None:
    key = CLAIMS.key("default", "train")
    stored = await replica.store.create(key, claim("train"))
    reservation = await replica.service.reserve(
        "node-1", [gpu(0), gpu(1)], [ClaimRef("default", "train", "uid-train")], 300
    )
    name = str(reservation.metadata.name)
    # One of the two devices allocated: once the claim is seen, the reservation still
    # has a purpose.
    partial = await replica.store.update(
        key, claim("train", [gpu(0)]), expected_revision=stored.revision
    )
    await eventually(lambda: replica.claims.revision >= partial.revision)
    await eventually(lambda: replica.service.source.get(name))
    releaser = replica.service.releaser
    assert releaser.why_due(replica.service.source.get(name) or {}) is None
    await replica.store.update(
        key, claim("train", [gpu(0), gpu(1)]), expected_revision=partial.revision
    )
    await eventually(lambda: releaser.released.get(name) == "allocated")
    assert await lock_keys(replica.store) == set()
    assert replica.service.held() == set()


async def test_an_allocation_of_another_claim_of_the_same_name_releases_nothing(
    replica: Replica,
) -> None:
    reservation = await replica.service.reserve(
        "node-1", [gpu(0)], [ClaimRef("default", "train", "uid-old")], 300
    )
    name = str(reservation.metadata.name)
    stored = await replica.store.create(CLAIMS.key("default", "train"), claim("train", [gpu(0)]))
    await eventually(lambda: replica.claims.revision >= stored.revision)
    await eventually(lambda: replica.service.source.get(name))
    assert replica.service.releaser.why_due(replica.service.source.get(name) or {}) is None


async def test_a_claim_allocated_before_its_reservation_is_seen_releases_it(
    replica: Replica,
) -> None:
    """The claim's event came first (no reservation for it then): the reservation's own
    event finds it due."""
    stored = await replica.store.create(CLAIMS.key("default", "train"), claim("train", [gpu(0)]))
    await eventually(lambda: replica.claims.revision >= stored.revision)
    reservation = await replica.service.reserve(
        "node-1", [gpu(0)], [ClaimRef("default", "train", "uid-train")], 300
    )
    name = str(reservation.metadata.name)
    await eventually(lambda: replica.service.releaser.released.get(name) == "allocated")


async def test_a_claims_change_releases_its_reservation_among_many(replica: Replica) -> None:
    """Thirty reservations held for thirty claims: allocating one claim releases exactly
    its reservation, in every round."""
    names = {}
    for i in range(30):
        made = await replica.service.reserve(
            "node-1", [gpu(i)], [ClaimRef("default", f"c{i}", f"uid-c{i}")], 300
        )
        names[i] = str(made.metadata.name)
    releaser = replica.service.releaser
    released: set[str] = set()
    for i in (7, 0, 29):
        await replica.store.create(CLAIMS.key("default", f"c{i}"), claim(f"c{i}", [gpu(i)]))
        await eventually(lambda i=i: releaser.released.get(names[i]) == "allocated")
        released.add(names[i])
        assert set(releaser.released) == released
    # The source sees each delete a moment after the releaser made it.
    await eventually(lambda: len(replica.service.held()) == 27)


async def test_a_failed_release_is_tried_again(replica: Replica) -> None:
    registry = replica.service.releaser.registry
    delete = registry.delete
    failures = [StorageUnavailableError("the store is away")]

    async def failing_once(*args: Any, **kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        return await delete(*args, **kwargs)

    registry.delete = failing_once  # type: ignore[method-assign]
    reservation = await replica.service.reserve(
        "node-1", [gpu(0)], [ClaimRef("default", "train", "uid-train")], 300
    )
    name = str(reservation.metadata.name)
    await replica.store.create(CLAIMS.key("default", "train"), claim("train", [gpu(0)]))
    await eventually(lambda: replica.service.releaser.released.get(name) == "allocated")
    assert failures == []


async def test_fifty_reservations_for_the_last_ten_devices(replica: Replica) -> None:
    """Each of 50 reserves asks for one of 10 devices (five per device, in random order):
    exactly one per device wins, and every loser is told which device was taken."""
    wanted = [gpu(i % 10) for i in range(50)]
    random.shuffle(wanted)
    outcomes = await asyncio.gather(
        *(
            replica.service.reserve("node-1", [d], [ClaimRef("default", f"c{i}")], 60)
            for i, d in enumerate(wanted)
        ),
        return_exceptions=True,
    )
    winners = [o for o in outcomes if not isinstance(o, BaseException)]
    losers = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(winners) == 10
    won = [(d.driver, d.pool, d.device) for w in winners for d in w.spec.devices]
    assert sorted(won) == sorted(gpu(i) for i in range(10))
    assert all(isinstance(e, errors.StatusError) and e.code == 409 for e in losers)
    assert replica.service.held() == {gpu(i) for i in range(10)}
    assert len(await lock_keys(replica.store)) == 10


async def test_fifty_reservations_of_all_ten_devices_in_different_orders(
    replica: Replica,
) -> None:
    orders = [random.sample([gpu(i) for i in range(10)], 10) for _ in range(50)]
    outcomes = await asyncio.gather(
        *(
            replica.service.reserve("node-1", order, [ClaimRef("default", f"c{i}")], 60)
            for i, order in enumerate(orders)
        ),
        return_exceptions=True,
    )
    winners = [o for o in outcomes if not isinstance(o, BaseException)]
    assert len(winners) == 1
    assert all(
        isinstance(o, errors.StatusError) and o.code == 409
        for o in outcomes
        if isinstance(o, BaseException)
    )
    assert replica.service.held() == {gpu(i) for i in range(10)}


def test_the_handler_offers_only_the_served_verbs(store: SQLiteStore) -> None:
    endpoint = Endpoint.of(Registry(DeviceReservationStrategy.for_group(GROUP), store))
    assert endpoint.getter is not None
    assert endpoint.lister is not None
    assert endpoint.watcher is not None
    assert endpoint.deleter is not None
    assert endpoint.creater is None
    assert endpoint.updater is None
    assert endpoint.patcher is None
    assert endpoint.applier is None
    assert endpoint.collection_deleter is None


async def test_the_expiration_time_is_never_earlier_than_asked(
    clocked: Replica, clock: Clock
) -> None:
    clock.at = datetime(2026, 1, 1, 0, 0, 0, 500_000, tzinfo=UTC)
    late = await clocked.service.reserve("node-1", [gpu(0)], [CLAIM], 10)
    assert late.spec.expiration_time == "2026-01-01T00:00:11Z"
    clock.at = datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC)
    exact = await clocked.service.reserve("node-1", [gpu(1)], [CLAIM], 10)
    assert exact.spec.expiration_time == "2026-01-01T00:01:10Z"


# -- pending reserves and the per-user cap --------------------------------------------------


async def test_a_reservation_names_its_user_and_counts_for_it(replica: Replica) -> None:
    made = await replica.service.reserve("node-1", [gpu(0)], [CLAIM], 30, user="alice")
    assert made.spec.username == "alice"
    await replica.service.reserve("node-1", [gpu(1)], [CLAIM], 30)
    assert replica.service.devices.count_by("alice") == 1
    assert replica.service.devices.count_by("bob") == 0


async def test_pending_devices_are_in_flight_until_the_block_ends(replica: Replica) -> None:
    assert replica.service.in_flight() == set()
    with replica.service.pending([gpu(0), gpu(1)], "alice"):
        assert replica.service.in_flight() == {gpu(0), gpu(1)}
        settled = asyncio.create_task(replica.service.settled([gpu(1), gpu(5)]))
        await asyncio.sleep(0)  # the waiter runs: it must still be waiting
        assert not settled.done()
    await asyncio.wait_for(settled, 5)
    assert replica.service.in_flight() == set()
    await asyncio.wait_for(replica.service.settled([gpu(0)]), 5)  # nothing pending: at once


async def test_the_cap_counts_held_and_pending_reservations_of_the_user(store: SQLiteStore) -> None:
    capped = Replica(store, max_per_user=2)
    await capped.start()
    try:
        await capped.service.reserve("node-1", [gpu(0)], [CLAIM], 30, user="alice")
        with capped.service.pending([gpu(1)], "alice"):
            with (
                pytest.raises(errors.StatusError) as info,
                capped.service.pending([gpu(2)], "alice"),
            ):
                pass
            assert (info.value.code, info.value.reason) == (429, "TooManyRequests")
            assert capped.service.in_flight() == {gpu(1)}  # the refused one marked nothing
            with capped.service.pending([gpu(3)], "bob"):  # another user: not capped
                pass
        with capped.service.pending([gpu(2)], "alice"):  # the pending one ended: room
            pass
    finally:
        await capped.close()


async def test_a_reservation_whose_claim_holds_its_devices_counts_no_more(
    store: SQLiteStore,
) -> None:
    # The releaser allowed one delete, then none for hours: reservations whose claims are
    # written wait for it, as they do while a scheduler binds faster than it deletes.
    capped = Replica(store, max_per_user=2, release_rate=0.0001, release_burst=1)
    await capped.start()
    try:
        for i in range(4):
            name = f"c{i}"
            stored = await store.create(CLAIMS.key("default", name), claim(name))
            ref = ClaimRef("default", name, f"uid-{name}")
            await capped.service.reserve("node-1", [gpu(i)], [ref], 300, user="alice")
            written = await store.update(
                CLAIMS.key("default", name),
                claim(name, [gpu(i)]),
                expected_revision=stored.revision,
            )
            await eventually(lambda rev=written.revision: capped.claims.revision >= rev)
        # Three of the four are still stored, every one due: alice holds nothing.
        await eventually(lambda: len(capped.service.devices.current()) == 3)
        with capped.service.pending([gpu(8)], "alice"), capped.service.pending([gpu(9)], "alice"):
            pass
        # A reservation whose claim is not written yet still counts.
        await capped.service.reserve("node-1", [gpu(5)], [CLAIM], 300, user="alice")
        with (
            capped.service.pending([gpu(8)], "alice"),
            pytest.raises(errors.StatusError) as info,
            capped.service.pending([gpu(9)], "alice"),
        ):
            pass
        assert info.value.code == 429
    finally:
        await capped.close()


async def test_no_cap_when_it_is_zero(store: SQLiteStore) -> None:
    uncapped = Replica(store, max_per_user=0)
    await uncapped.start()
    try:
        for i in range(5):
            await uncapped.service.reserve("node-1", [gpu(i)], [CLAIM], 30, user="alice")
        with uncapped.service.pending([gpu(9)], "alice"):
            assert uncapped.service.in_flight() == {gpu(9)}
    finally:
        await uncapped.close()
