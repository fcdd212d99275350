"""The ResourcePoolStatusRequest controller over a real store, the device view and the claim
cache (the KEP-5677 test plan: driver only, driver and pool, no match, missing driver,
allocation states, cross-slice validation, generations, one-time processing, limit and
truncation), plus exactly-once writes between two controllers and the failure conditions."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from prometheus_client import CollectorRegistry

from apiserver.controllers import (
    PoolIndex,
    PoolStatusMetrics,
    PoolStatusRequestController,
    PoolSummary,
    request_status,
    validation_errors,
)
from apiserver.kinds.resourceclaim import ResourceClaimStrategy
from apiserver.kinds.resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from apiserver.kinds.resourceslice import ResourceSliceStrategy
from apiserver.machinery import DeleteOptions, Registry, StatusSubresource, WriteOptions, errors
from apiserver.server.cluster import StandaloneCluster
from apiserver.server.deviceview import DeviceViewOptions, DeviceViewService
from apiserver.sources import MemorySource, Source, object_key, object_revision
from apiserver.storage.sqlite import SQLiteStore
from apiserver.toolkit import MERGE_PATCH
from devtools.waiting import eventually
from tests.unit import builders

GROUP = "resource.k8s.io"
GPU = "gpu.example.com"
NIC = "nic.example.com"
PROCESSED = "resourcepoolstatus_requests_processed_total"


def slice_obj(name: str, devices: list[str], *, driver: str = GPU, **fields: Any) -> dict[str, Any]:
    """A slice of the named devices, without attributes."""
    return builders.slice_obj(name, [{"name": d} for d in devices], driver=driver, **fields)


def claim_obj(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
    }


def rpsr(name: str, driver: str = GPU, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": driver, **spec},
    }


@dataclass
class World:
    store: SQLiteStore
    slices: Registry
    claims: Registry
    requests: Registry
    devices: DeviceViewService
    claim_source: Source
    request_source: Source
    index: PoolIndex
    controller: PoolStatusRequestController
    metrics: CollectorRegistry

    async def create(self, registry: Registry, obj: dict[str, Any]) -> dict[str, Any]:
        namespace = obj["metadata"].get("namespace")
        return (await registry.create(namespace, obj, WriteOptions())).obj.obj

    async def allocate(
        self, claim: str, devices: list[tuple[str, str]], namespace: str = "default", **extra: Any
    ) -> None:
        results = [
            {"request": "gpu", "driver": GPU, "pool": pool, "device": device, **extra}
            for pool, device in devices
        ]
        body = {"status": {"allocation": {"devices": {"results": results}}}}
        await StatusSubresource(self.claims).patch(
            namespace, claim, orjson.dumps(body), MERGE_PATCH, WriteOptions()
        )

    async def answer(self, name: str) -> dict[str, Any]:
        """The request's status, once the controller has written it."""
        found: dict[str, Any] = {}

        async def check() -> bool:
            obj = (await self.requests.get(None, name)).obj
            if (obj.get("status") or {}).get("observationTime"):
                found.update(obj["status"])
                return True
            return False

        await eventually(check)
        return found

    async def ask(self, name: str, driver: str = GPU, **spec: Any) -> dict[str, Any]:
        """Create a request once the caches hold every slice and claim written so far (the
        controller answers from its caches, which follow the store a moment later)."""
        await caught_up(self.store, self.devices, self.claim_source)
        await self.create(self.requests, rpsr(name, driver, **spec))
        return await self.answer(name)

    def metric(self, name: str) -> float:
        value = self.metrics.get_sample_value(name)
        return value if value is not None else 0.0


async def caught_up(store: SQLiteStore, devices: DeviceViewService, claims: Source) -> None:
    """Until the slice and claim caches hold what the store holds, and the view has caught up."""
    pairs = [
        (devices.slices, ResourceSliceStrategy.upstream().resource.key_prefix()),
        (claims, ResourceClaimStrategy.upstream().resource.key_prefix()),
    ]

    async def check() -> bool:
        for source, prefix in pairs:
            stored = (await store.list(prefix)).items
            want = {object_key(i.obj): object_revision(i.obj) for i in stored}
            if want != {object_key(o): object_revision(o) for o in source.items()}:
                return False
        return True

    await eventually(check)
    await devices.view.wait_idle()


@dataclass
class Parts:
    cluster: StandaloneCluster
    devices: DeviceViewService
    claims: Source
    requests: Source
    index: PoolIndex
    controller: PoolStatusRequestController
    metrics: CollectorRegistry

    async def start(self) -> None:
        await self.cluster.start()
        await self.devices.start()
        await self.index.start()
        await self.controller.start()

    async def caught_up(self, store: SQLiteStore) -> None:
        await caught_up(store, self.devices, self.claims)

    async def close(self) -> None:
        await self.controller.close()
        await self.index.close()
        await self.devices.close()
        await self.cluster.close()


def parts(store: SQLiteStore, **controller: Any) -> Parts:
    """The server's assembly, with the controller's timings set for tests."""
    strategy = ResourcePoolStatusRequestStrategy.for_group(GROUP)
    cluster = StandaloneCluster(store, GROUP, authenticator=None, authorizer=None)
    devices = DeviceViewService(
        cluster, GROUP, DeviceViewOptions(patch_status=False, pause_gc=False)
    )
    claims, requests = cluster.sources.claims, cluster.sources.requests
    index = PoolIndex(devices.view, devices.slices, claims)
    metrics = CollectorRegistry()
    options: dict[str, Any] = {
        "incomplete_retries": 0,
        "error_retries": 2,
        "error_delay": 0.01,
        **controller,
    }
    ctl = PoolStatusRequestController(
        index,
        requests,
        controller.pop("registry", None) or Registry(strategy, store),
        PoolStatusMetrics(metrics),
        **{k: v for k, v in options.items() if k != "registry"},
    )
    return Parts(cluster, devices, claims, requests, index, ctl, metrics)


@pytest.fixture
async def world(store: SQLiteStore) -> AsyncIterator[World]:
    built = parts(store)
    await built.start()
    yield World(
        store,
        Registry(ResourceSliceStrategy.upstream(), store),
        Registry(ResourceClaimStrategy.upstream(), store),
        Registry(ResourcePoolStatusRequestStrategy.for_group(GROUP), store),
        built.devices,
        built.claims,
        built.requests,
        built.index,
        built.controller,
        built.metrics,
    )
    await built.close()


async def gpu_nodes(world: World, *nodes: str, per_node: int = 4) -> None:
    for node in nodes:
        await world.create(world.slices, slice_obj(node, [f"gpu-{i}" for i in range(per_node)]))


def pools(status: dict[str, Any]) -> list[tuple[str, int, int, int, int]]:
    return [
        (
            p["poolName"],
            p["totalDevices"],
            p["allocatedDevices"],
            p["availableDevices"],
            p["unavailableDevices"],
        )
        for p in status.get("pools", [])
    ]


# -- the KEP's unit test cases -----------------------------------------------------------


async def test_driver_only_reports_every_pool_of_that_driver_sorted(world: World) -> None:
    await gpu_nodes(world, "node-2", "node-10", "node-1")
    await world.create(world.slices, slice_obj("nic-1", ["eth-0"], driver=NIC, pool="node-1"))
    status = await world.ask("all-gpus")
    assert [p["poolName"] for p in status["pools"]] == ["node-1", "node-10", "node-2"]
    assert {p["driver"] for p in status["pools"]} == {GPU}
    assert status["pools"][0] == {
        "driver": GPU,
        "poolName": "node-1",
        "nodeName": "node-1",
        "totalDevices": 4,
        "allocatedDevices": 0,
        "availableDevices": 4,
        "unavailableDevices": 0,
        "sliceCount": 1,
        "generation": 1,
    }
    assert (status["totalMatchingPools"], status["truncated"]) == (3, False)
    [condition] = status["conditions"]
    assert (condition["type"], condition["status"]) == ("Complete", "True")
    assert (condition["reason"], condition["message"]) == (
        "CalculationComplete",
        "Processed 3 pools",
    )
    assert "validationErrors" not in status


async def test_driver_and_pool_name_report_that_pool_only(world: World) -> None:
    await gpu_nodes(world, "node-1", "node-2")
    await world.create(world.slices, slice_obj("nic-2", ["eth-0"], driver=NIC, pool="node-2"))
    status = await world.ask("one-pool", poolName="node-2")
    assert pools(status) == [("node-2", 4, 0, 4, 0)]
    assert status["totalMatchingPools"] == 1


async def test_no_matching_pools_completes_with_none(world: World) -> None:
    await gpu_nodes(world, "node-1")
    for name, spec in (
        ("other-driver", {"driver": "fpga.example.com"}),
        ("other-pool", {"driver": GPU, "poolName": "node-9"}),
        ("kep-example", {"driver": "example.com/gpu"}),
    ):
        status = await world.ask(name, **spec)
        assert "pools" not in status
        assert (status["totalMatchingPools"], status["truncated"]) == (0, False)
        assert status["conditions"][0]["reason"] == "CalculationComplete"
        assert status["conditions"][0]["message"] == "Processed 0 pools"


async def test_a_missing_driver_is_rejected_with_422(world: World) -> None:
    body = rpsr("no-driver")
    del body["spec"]["driver"]
    with pytest.raises(errors.StatusError) as raised:
        await world.requests.create(None, body, WriteOptions())
    assert (raised.value.code, raised.value.reason) == (422, "Invalid")
    assert "spec.driver" in raised.value.message


async def test_allocation_states(world: World) -> None:
    """Unallocated, partly and fully allocated pools; admin access does not allocate; a claim
    that goes away frees its devices for the next request."""
    await gpu_nodes(world, "node-1", "node-2", "node-3")
    for claim in ("three", "one", "watching", "full"):
        await world.create(world.claims, claim_obj(claim))
    await world.allocate("three", [("node-1", "gpu-0"), ("node-1", "gpu-1"), ("node-1", "gpu-2")])
    await world.allocate("one", [("node-2", "gpu-3")])
    await world.allocate("watching", [("node-2", "gpu-0")], adminAccess=True)
    await world.allocate("full", [("node-3", f"gpu-{i}") for i in range(4)])
    status = await world.ask("allocations")
    assert pools(status) == [
        ("node-1", 4, 3, 1, 0),
        ("node-2", 4, 1, 3, 0),
        ("node-3", 4, 4, 0, 0),
    ]
    await world.claims.delete("default", "full", DeleteOptions())
    after = await world.ask("after-delete")
    assert pools(after)[2] == ("node-3", 4, 0, 4, 0)
    assert pools(await world.ask("allocations-again", poolName="node-1")) == [
        ("node-1", 4, 3, 1, 0)
    ]
    # The earlier answer is not recomputed: it was processed once.
    assert pools((await world.requests.get(None, "allocations")).obj["status"])[2] == (
        "node-3",
        4,
        4,
        0,
        0,
    )


async def test_cross_slice_validation_errors(world: World) -> None:
    await world.create(world.slices, slice_obj("a-0", ["gpu-0", "gpu-1"], pool="a", count=2))
    await world.create(world.slices, slice_obj("a-1", ["gpu-1", "gpu-2"], pool="a", count=2))
    await world.create(world.slices, slice_obj("b-0", ["gpu-0"], pool="b", count=2, node="node-1"))
    await world.create(world.slices, slice_obj("b-1", ["gpu-1"], pool="b", count=2, node="node-2"))
    status = await world.ask("consistency")
    assert pools(status) == [("a", 3, 0, 3, 0), ("b", 2, 0, 2, 0)]
    assert status["validationErrors"] == [
        "pool a: device gpu-1 appears in multiple slices",
        "pool b: slices disagree on node placement: nodeName node-1 (1 slice),"
        " nodeName node-2 (1 slice)",
    ]
    assert "nodeName" not in status["pools"][1]


async def test_only_the_newest_generation_counts(world: World) -> None:
    await world.create(
        world.slices, slice_obj("old", ["gpu-0", "gpu-1", "gpu-2"], pool="p", generation=3)
    )
    await world.create(world.slices, slice_obj("new", ["gpu-0"], pool="p", generation=4))
    status = await world.ask("generations")
    [entry] = status["pools"]
    assert (entry["generation"], entry["sliceCount"], entry["totalDevices"]) == (4, 1, 1)
    assert "validationErrors" not in status


async def test_each_request_is_processed_once(world: World) -> None:
    await gpu_nodes(world, "node-1")
    first = await world.ask("once")
    stored = await world.requests.get(None, "once")
    # The controller counts a request once its status write has returned.
    await eventually(lambda: world.metric(PROCESSED) >= 1, "the request to be counted")
    assert world.metric(PROCESSED) == 1
    # Later changes to the request, the pools or the claims never recompute it.
    await world.requests.patch(
        None, "once", b'{"metadata":{"labels":{"seen":"yes"}}}', MERGE_PATCH, WriteOptions()
    )
    await gpu_nodes(world, "node-2")
    await world.ask("later")
    now = (await world.requests.get(None, "once")).obj
    assert now["status"] == first
    assert now["metadata"]["labels"] == {"seen": "yes"}
    assert now["metadata"]["resourceVersion"] != stored.obj["metadata"]["resourceVersion"]
    assert await world.controller.sync("once") is False
    await eventually(lambda: world.metric(PROCESSED) >= 2, "the later request to be counted")
    assert world.metric(PROCESSED) == 2
    assert world.metric("resourcepoolstatus_request_processing_duration_seconds_count") == 2


async def test_limit_truncates_and_keeps_the_total(world: World) -> None:
    await gpu_nodes(world, *[f"node-{i}" for i in range(5)], per_node=1)
    status = await world.ask("limited", limit=2)
    assert [p["poolName"] for p in status["pools"]] == ["node-0", "node-1"]
    assert (status["truncated"], status["totalMatchingPools"]) == (True, 5)
    assert status["conditions"][0]["message"] == "Processed 5 pools; the first 2 are listed"
    exact = await world.ask("exact", limit=5)
    assert (len(exact["pools"]), exact["truncated"]) == (5, False)


async def test_no_claim_or_pod_data_in_the_status(world: World) -> None:
    await gpu_nodes(world, "node-1")
    secret = claim_obj("payroll-training-claim", namespace="team-secret")
    await world.create(world.claims, secret)
    body = {
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": GPU, "pool": "node-1", "device": "gpu-0"}
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": "payroll-pod", "uid": "pod-uid-1234"}],
        }
    }
    await StatusSubresource(world.claims).patch(
        "team-secret",
        "payroll-training-claim",
        orjson.dumps(body),
        MERGE_PATCH,
        WriteOptions(),
    )
    status = await world.ask("private")
    assert pools(status) == [("node-1", 4, 1, 3, 0)]
    text = orjson.dumps(status).decode()
    for leaked in ("payroll", "team-secret", "pod-uid-1234", "pods"):
        assert leaked not in text


async def test_an_incomplete_pool_is_retried_until_its_slices_are_there(
    store: SQLiteStore,
) -> None:
    built = parts(store, incomplete_retries=1000, incomplete_delay=0.02)
    await built.start()
    try:
        slices = Registry(ResourceSliceStrategy.upstream(), store)
        requests = Registry(ResourcePoolStatusRequestStrategy.for_group(GROUP), store)
        await slices.create(None, slice_obj("p-0", ["gpu-0"], pool="p", count=2), WriteOptions())
        await built.caught_up(store)
        await requests.create(None, rpsr("waits"), WriteOptions())

        async def retried() -> bool:
            return built.controller._incomplete.get("waits", 0) >= 2

        await eventually(retried)
        assert not (await requests.get(None, "waits")).obj.get("status")
        await slices.create(None, slice_obj("p-1", ["gpu-1"], pool="p", count=2), WriteOptions())

        async def answered() -> bool:
            return bool((await requests.get(None, "waits")).obj.get("status"))

        await eventually(answered)
        status = (await requests.get(None, "waits")).obj["status"]
        assert pools(status) == [("p", 2, 0, 2, 0)]
        assert status["pools"][0]["sliceCount"] == 2
        assert "validationErrors" not in status
    finally:
        await built.close()


async def test_an_incomplete_pool_is_reported_after_the_retries(store: SQLiteStore) -> None:
    built = parts(store, incomplete_retries=2, incomplete_delay=0.01)
    await built.start()
    try:
        slices = Registry(ResourceSliceStrategy.upstream(), store)
        requests = Registry(ResourcePoolStatusRequestStrategy.for_group(GROUP), store)
        await slices.create(None, slice_obj("p-0", ["gpu-0"], pool="p", count=3), WriteOptions())
        await built.caught_up(store)
        await requests.create(None, rpsr("gives-up"), WriteOptions())

        async def answered() -> bool:
            return bool((await requests.get(None, "gives-up")).obj.get("status"))

        await eventually(answered)
        status = (await requests.get(None, "gives-up")).obj["status"]
        assert built.controller._incomplete.get("gives-up") is None  # forgotten once written
        assert pools(status) == [("p", 1, 0, 1, 0)]
        assert status["validationErrors"] == [
            "pool p: incomplete: 1 of 3 slices of generation 1 are published"
        ]
        assert status["conditions"][0]["reason"] == "CalculationComplete"
    finally:
        await built.close()


# -- exactly once, failures ------------------------------------------------------------------


async def test_two_controllers_on_one_store_answer_each_request_once(store: SQLiteStore) -> None:
    a, b = parts(store), parts(store)
    for part in (a, b):
        await part.start()
    writes: dict[str, int] = {}

    def count(event: Any) -> None:
        status = event.obj.get("status") or {}
        old = (event.old or {}).get("status") or {}
        if status.get("observationTime") and status != old:
            writes[event.key] = writes.get(event.key, 0) + 1

    a.requests.add_handler(count)
    try:
        slices = Registry(ResourceSliceStrategy.upstream(), store)
        requests = Registry(ResourcePoolStatusRequestStrategy.for_group(GROUP), store)
        await slices.create(None, slice_obj("node-1", ["gpu-0"]), WriteOptions())
        for part in (a, b):
            await part.caught_up(store)
        names = [f"r-{i}" for i in range(20)]
        for name in names:
            await requests.create(None, rpsr(name), WriteOptions())

        async def all_answered() -> bool:
            stored = [(await requests.get(None, n)).obj for n in names]
            return all(o.get("status", {}).get("observationTime") for o in stored)

        await eventually(all_answered)
        await a.requests.wait_synced()

        async def all_seen() -> bool:
            return len(writes) == len(names)

        await eventually(all_seen)

        def idle(part: Parts) -> bool:
            # Once its cache holds every answer no later event queues a request again.
            cached = [part.requests.get(n) for n in names]
            answered = all(o and (o.get("status") or {}).get("observationTime") for o in cached)
            return answered and len(part.controller.queue) == 0

        for part in (a, b):  # nothing is left to do
            await eventually(functools.partial(idle, part), "an answered cache and an empty queue")

        def processed() -> float:
            # Each write is counted once it has returned, a moment after it is seen.
            return sum(p.metrics.get_sample_value(PROCESSED) or 0 for p in (a, b))

        await eventually(lambda: processed() >= len(names), "every write to be counted")
        assert processed() == len(names)
        assert writes == dict.fromkeys(names, 1)
    finally:
        for part in (a, b):
            await part.close()


async def _stale_controller(store: SQLiteStore, stale: dict[str, Any]) -> Parts:
    """A controller whose request cache still holds ``stale`` (it has not seen later writes)."""
    built = parts(store)
    built.controller.requests = MemorySource("requests", [stale])
    await built.controller.requests.start()
    await built.cluster.start()
    await built.devices.start()
    await built.index.start()
    await built.index.wait_synced()
    return built


async def test_a_stale_copy_loses_to_the_answer_written_first(
    world: World, store: SQLiteStore
) -> None:
    """The status write carries the resourceVersion it read: a replica whose cache is behind
    gets 409, reads again, sees the answer and leaves it alone."""
    await gpu_nodes(world, "node-1")
    stale = await world.create(world.requests, rpsr("raced"))
    first = await world.answer("raced")
    other = await _stale_controller(store, stale)
    try:
        assert await other.controller.sync("raced") is False
        assert (await world.requests.get(None, "raced")).obj["status"] == first
        assert other.metrics.get_sample_value("resourcepoolstatus_requests_processed_total") == 0
    finally:
        await other.close()


async def test_a_conflict_without_an_answer_writes_on_the_new_version(store: SQLiteStore) -> None:
    requests = Registry(ResourcePoolStatusRequestStrategy.for_group(GROUP), store)
    stale = (await requests.create(None, rpsr("relabelled"), WriteOptions())).obj.obj
    await requests.patch(
        None, "relabelled", b'{"metadata":{"labels":{"a":"b"}}}', MERGE_PATCH, WriteOptions()
    )
    other = await _stale_controller(store, stale)
    try:
        assert await other.controller.sync("relabelled") is True
        obj = (await requests.get(None, "relabelled")).obj
        assert obj["status"]["conditions"][0]["reason"] == "CalculationComplete"
        assert obj["metadata"]["labels"] == {"a": "b"}
    finally:
        await other.close()


class RefusingRegistry(Registry):
    """Refuses any status that lists pools, as a store would one that is too large."""

    code = 413

    async def update(self, *args: Any, **kwargs: Any) -> Any:
        body = args[2]
        if body.get("status", {}).get("pools"):
            raise errors.StatusError(self.code, "Refused", "etcdserver: request is too large")
        return await super().update(*args, **kwargs)


@pytest.mark.parametrize(("code", "failures"), [(413, 1), (500, 3)])
async def test_a_refused_status_is_answered_with_a_failed_condition(
    store: SQLiteStore, code: int, failures: int
) -> None:
    """A client error at once; an internal error once the retries are spent."""
    strategy = ResourcePoolStatusRequestStrategy.for_group(GROUP)
    refusing = RefusingRegistry(strategy, store)
    refusing.code = code
    built = parts(store, registry=refusing, error_retries=3)
    await built.start()
    try:
        slices = Registry(ResourceSliceStrategy.upstream(), store)
        requests = Registry(strategy, store)
        await slices.create(None, slice_obj("node-1", ["gpu-0"]), WriteOptions())
        await built.caught_up(store)
        await requests.create(None, rpsr("too-big"), WriteOptions())

        async def answered() -> bool:
            return bool((await requests.get(None, "too-big")).obj.get("status"))

        await eventually(answered)
        status = (await requests.get(None, "too-big")).obj["status"]
        [condition] = status["conditions"]
        assert (condition["type"], condition["status"]) == ("Failed", "True")
        assert condition["reason"] == "StatusRejected"
        assert "request is too large" in condition["message"]
        assert status["observationTime"]
        assert "pools" not in status
        sample = built.metrics.get_sample_value
        assert sample("resourcepoolstatus_request_processing_errors_total") == failures
        await eventually(lambda: sample(PROCESSED), "the request to be counted")
        assert sample(PROCESSED) == 1
    finally:
        await built.close()


async def test_a_computation_that_keeps_failing_is_answered_with_failed(
    store: SQLiteStore,
) -> None:
    built = parts(store, error_retries=3, error_delay=0.01)

    async def broken(driver: str, pool: str | None = None) -> list[PoolSummary]:
        raise RuntimeError("the index is broken")

    built.index.summaries = broken  # type: ignore[method-assign]
    await built.start()
    try:
        requests = Registry(ResourcePoolStatusRequestStrategy.for_group(GROUP), store)
        await requests.create(None, rpsr("doomed"), WriteOptions())

        async def answered() -> bool:
            return bool((await requests.get(None, "doomed")).obj.get("status"))

        await eventually(answered)
        [condition] = (await requests.get(None, "doomed")).obj["status"]["conditions"]
        assert (condition["type"], condition["reason"]) == ("Failed", "CalculationFailed")
        assert "the index is broken" in condition["message"]
        assert (
            built.metrics.get_sample_value("resourcepoolstatus_request_processing_errors_total")
            == 3
        )
    finally:
        await built.close()


# -- the status document ----------------------------------------------------------------


def summary(pool: str, *errs: str) -> PoolSummary:
    return PoolSummary(GPU, pool, pool, 1, 1, 8, 4, 0, errs)


def test_at_most_ten_validation_errors_and_a_count_of_the_rest() -> None:
    many = [summary(f"p{i}", f"pool p{i}: one", f"pool p{i}: two") for i in range(6)]
    listed = validation_errors(many)
    assert len(listed) == 10
    assert listed[:2] == ["pool p0: one", "pool p0: two"]
    assert listed[-1] == "3 more validation errors are not shown"
    assert validation_errors(many[:5]) == [e for s in many[:5] for e in s.errors]


def test_the_worst_case_status_fits_the_documented_size() -> None:
    """1,000 pools with names at their maximum lengths and 19-digit counts, ten validation
    errors of 256 characters: under 0.84 MB, as the API module's arithmetic says."""
    label = "a" * 63
    long_name = ".".join([label, label, label, "b" * 61])
    assert len(long_name) == 253
    big, share = 9_223_372_036_854_775_807, 10**18  # every count has 19 digits
    worst = [
        PoolSummary("d" * 63, long_name, long_name, big, big, big, share, share, ("x" * 256,))
        for _ in range(1000)
    ]
    status = request_status(worst, 1000, "2026-02-07T10:30:00Z")
    assert len(str(worst[0].available)) == 19
    encoded = orjson.dumps(status)
    assert len(orjson.dumps(status["pools"])) == 831 * 1000 + 1  # the brackets, less one comma
    assert len(encoded) < 840_000
    assert len(encoded) + 256 * 1024 < 1_572_864  # with annotations at their cap, under etcd's
