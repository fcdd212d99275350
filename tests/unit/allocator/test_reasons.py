"""The engine's reasons are values: a code, the claim, the request and counts, beside the
message; each code is produced where the engine knows what went wrong."""

from __future__ import annotations

from apiserver.allocator import MAX_DEVICES_PER_CLAIM, Allocator, Claim, Reason
from apiserver.allocator import reasons as codes
from apiserver.pools import Node, Pools
from tests.unit.builders import pools_of, slice_obj, wanting

DRIVER = "dra.example.com"
NODE = Node("n1")
CLASSES = {"dev": {"spec": {}}, "none": {"spec": {"selectors": [{"cel": {"expression": "false"}}]}}}


def pools(count: int) -> Pools:
    devices = [{"name": f"d{i}", "attributes": {"id": {"int": i}}} for i in range(count)]
    return pools_of(slice_obj("n1", devices, driver=DRIVER))


def only(allocator: Allocator, *claims: Claim) -> Reason:
    result = allocator.allocate(list(claims), NODE)
    assert not result.feasible
    [reason] = result.explanations
    assert result.reasons == (reason.message,)
    return reason


def test_a_selector_excluding_every_device_is_no_matching_devices() -> None:
    reason = only(
        Allocator(pools(3), CLASSES), wanting(selector=f"device.attributes['{DRIVER}'].id > 5")
    )
    assert reason.code == codes.NO_MATCHING_DEVICES
    assert (reason.claim, reason.request) == ("default/c", "r")
    assert reason.counts["selectorExcluded"] == 3
    assert reason.counts["free"] == 0
    assert "selector #0 excluded 3" in reason.message


def test_too_few_devices_because_others_hold_them_is_not_no_matching_devices() -> None:
    allocator = Allocator(pools(3), CLASSES)
    first = allocator.allocate([wanting(2)], NODE)
    assert first.feasible
    allocator.hold(first.devices)
    reason = only(allocator, wanting(2, selector=f"device.attributes['{DRIVER}'].id < 2"))
    assert reason.code == codes.UNSATISFIABLE
    assert reason.counts["reserved"] + reason.counts["allocated"] == 2


def test_a_class_that_matches_nothing_on_the_node_is_no_candidates() -> None:
    reason = only(Allocator(pools(2), CLASSES), wanting(device_class="none"))
    assert reason.code == codes.NO_CANDIDATES
    assert reason.counts["classExcluded"] == 2


def test_a_missing_class_is_an_invalid_claim() -> None:
    reason = only(Allocator(pools(1), CLASSES), wanting(device_class="absent"))
    assert reason.code == codes.INVALID_CLAIM
    assert reason.request == "r"
    assert "device class absent does not exist" in reason.message


def test_more_devices_than_a_claim_may_have_is_too_many_devices() -> None:
    reason = only(Allocator(pools(1), CLASSES), wanting(MAX_DEVICES_PER_CLAIM + 1))
    assert reason.code == codes.TOO_MANY_DEVICES
    assert reason.counts["requested"] == MAX_DEVICES_PER_CLAIM + 1


def test_an_unsatisfiable_constraint_is_constraint_unsatisfiable() -> None:
    constraint = [{"cel": {"expression": "size(devices) == 7"}}]
    reason = only(Allocator(pools(3), CLASSES, caches=False), wanting(2, constraints=constraint))
    assert reason.code == codes.CONSTRAINT_UNSATISFIABLE
    assert reason.counts["candidates"] == 3
