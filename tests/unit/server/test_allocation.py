"""The allocation service's reserve loop, in-process over a real SQLite store: a review that
loses its devices to another replica's reservations searches again without them; one that
keeps losing answers every node infeasible with ReservationContention, never feasible
without a reservation; concurrent reviews here never pick one device twice; the per-user
cap is a 429. The other replica is a stand-in that takes devices from under the review."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson
import pytest

from apiserver.api.resource import AllocationReview
from apiserver.kinds.devicereservation import DeviceReservationStrategy
from apiserver.machinery import WriteOptions, errors
from apiserver.machinery.user import UserInfo
from apiserver.pools import PoolIndex
from apiserver.reservations import ClaimRef, ReservationService
from apiserver.server.allocation import RESERVE_ROUNDS, AllocationService
from apiserver.server.cluster import StandaloneCluster
from apiserver.server.deviceview import DeviceViewOptions, DeviceViewService
from apiserver.storage.sqlite import SQLiteStore

GROUP = "resource.k8s.io"
DRIVER = "gpu.example.com"
NODE = "node-1"
ALICE = UserInfo("alice")


class Losing(ReservationService):
    """Another replica wins the first ``losses`` reserves: each a 409, naming the device
    it took (``named``) or not."""

    def __init__(self, *args: Any, losses: int, named: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.losses = losses
        self.named = named
        self.asked: list[tuple[str, str, str]] = []

    async def reserve(
        self,
        node: str,
        devices: Sequence[tuple[str, str, str]],
        claims: Sequence[ClaimRef],
        seconds: float,
        *,
        user: str | None = None,
    ) -> Any:
        self.asked += devices
        if self.losses > 0:
            self.losses -= 1
            causes = [{"field": "spec.devices[0]", "message": "taken"}] if self.named else []
            raise errors.StatusError(409, "Conflict", "taken", details={"causes": causes})
        return await super().reserve(node, devices, claims, seconds, user=user)


async def _service(
    store: SQLiteStore, *, losses: int = 0, named: bool = True, cap: int = 100
) -> AsyncIterator[tuple[AllocationService, Losing]]:
    cluster = StandaloneCluster(store, GROUP, authenticator=None, authorizer=None)
    devices = DeviceViewService(cluster, GROUP, DeviceViewOptions(patch_status=False))
    reservations = Losing(
        cluster.registry(DeviceReservationStrategy.for_group(GROUP).resource),
        cluster.sources.claims,
        losses=losses,
        named=named,
        max_per_user=cap,
    )
    pools = PoolIndex(
        devices.view,
        cluster.sources.slices,
        cluster.sources.claims,
        reservations=reservations.devices,
    )
    for kind, body in _objects(6):
        registry = next(r for r in cluster.registries() if r.resource.kind == kind)
        await registry.create(None, body, WriteOptions())
    services = [cluster, devices, reservations]
    for service in services:
        await service.start()
    await pools.start()
    try:
        await asyncio.wait_for(pools.wait_synced(), 10)
        yield AllocationService(cluster, pools, reservations, store), reservations
    finally:
        await pools.close()
        for service in reversed(services):
            await service.close()


def _objects(count: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "DeviceClass",
            {
                "apiVersion": f"{GROUP}/v1",
                "kind": "DeviceClass",
                "metadata": {"name": DRIVER},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            },
        ),
        ("Node", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}),
        (
            "ResourceSlice",
            {
                "apiVersion": f"{GROUP}/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": "gpus"},
                "spec": {
                    "driver": DRIVER,
                    "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                    "nodeName": NODE,
                    "devices": [{"name": f"gpu-{i}"} for i in range(count)],
                },
            },
        ),
    ]


def _review(reserve: bool = True) -> AllocationReview:
    request = {"name": "r", "exactly": {"deviceClassName": DRIVER}}
    return AllocationReview.model_validate(
        {
            "apiVersion": f"{GROUP}/v1alpha3",
            "kind": "AllocationReview",
            "spec": {
                "claims": [{"name": "c", "spec": {"devices": {"requests": [request]}}}],
                "nodeNames": [NODE],
                "reserve": reserve,
            },
        }
    )


async def _answered(
    service: AllocationService, review: AllocationReview, user: UserInfo
) -> dict[str, Any]:
    """The service's answer as a client reads it (entries may come encoded already)."""
    answer: dict[str, Any] = orjson.loads(orjson.dumps(await service.review(review, user)))
    return answer


def _held(status: dict[str, Any]) -> str:
    assert "reservation" in status, status
    [entry] = status["nodes"]
    assert entry["feasible"] is True
    device: str = entry["allocations"][0]["devices"]["results"][0]["device"]
    return device


@pytest.fixture
async def named_losses(store: SQLiteStore) -> AsyncIterator[tuple[AllocationService, Losing]]:
    async for pair in _service(store, losses=3, named=True):
        yield pair


@pytest.fixture
async def endless_losses(store: SQLiteStore) -> AsyncIterator[tuple[AllocationService, Losing]]:
    async for pair in _service(store, losses=10_000, named=False):
        yield pair


@pytest.fixture
async def capped(store: SQLiteStore) -> AsyncIterator[tuple[AllocationService, Losing]]:
    async for pair in _service(store, cap=2):
        yield pair


async def test_a_lost_race_searches_again_without_the_device_taken(
    named_losses: tuple[AllocationService, Losing],
) -> None:
    service, reservations = named_losses
    status = await _answered(service, _review(), ALICE)
    device = _held(status)
    lost = [d for _, _, d in reservations.asked[:3]]
    assert len(set(lost)) == 3  # each search left out what the races before it took
    assert device not in lost
    assert reservations.held() == {(DRIVER, NODE, device)}


async def test_a_review_that_keeps_losing_answers_contention_and_holds_nothing(
    endless_losses: tuple[AllocationService, Losing],
) -> None:
    service, reservations = endless_losses
    status = await _answered(service, _review(), ALICE)
    assert "reservation" not in status
    [entry] = status["nodes"]
    assert entry["feasible"] is False
    assert {r["reason"] for r in entry["reasons"]} == {"ReservationContention"}
    assert len(reservations.asked) == RESERVE_ROUNDS
    assert reservations.held() == set()
    assert reservations.in_flight() == set()


async def test_concurrent_reviews_here_never_pick_one_device_twice(
    named_losses: tuple[AllocationService, Losing],
) -> None:
    service, reservations = named_losses
    reservations.losses = 0
    answers = await asyncio.gather(*(_answered(service, _review(), ALICE) for _ in range(15)))
    held = [_held(a) for a in answers if "reservation" in a]
    assert sorted(held) == sorted(f"gpu-{i}" for i in range(6))
    for answer in answers:
        if "reservation" not in answer:
            assert answer["nodes"][0]["feasible"] is False
    assert len(reservations.asked) == 6  # no store write lost a race on this replica


async def test_over_the_cap_a_reserving_review_is_429_and_holds_nothing(
    capped: tuple[AllocationService, Losing],
) -> None:
    service, reservations = capped
    for _ in range(2):
        _held(await _answered(service, _review(), ALICE))
    with pytest.raises(errors.StatusError) as info:
        await _answered(service, _review(), ALICE)
    assert (info.value.code, info.value.reason) == (429, "TooManyRequests")
    assert len(reservations.held()) == 2
    plain = await _answered(service, _review(reserve=False), ALICE)
    assert plain["nodes"][0]["feasible"] is True
    _held(await _answered(service, _review(), UserInfo("bob")))
