"""Conversion of ResourcePoolStatusRequest between the stored v1alpha1 and upstream's
v1alpha3: field by field, and round trips over generated requests (hypothesis) shaped as
the controller and upstream's clients write them."""

from __future__ import annotations

import copy
import string
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from apiserver.api.resource import pool_status_request_to_v1alpha1 as to_v1alpha1
from apiserver.api.resource import pool_status_request_to_v1alpha3 as to_v1alpha3
from apiserver.api.resource.resourcepoolstatusrequest_conversion import KEPT
from apiserver.controllers.poolstatus import failed_status, request_status
from apiserver.pools.summary import PoolSummary

NOW = "2026-11-25T10:00:00Z"
META = {"name": "r", "uid": "u", "resourceVersion": "7", "generation": 1}


def stored(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1alpha1",
        "kind": "ResourcePoolStatusRequest",
        "metadata": copy.deepcopy(META),
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def summary(pool: str, *, errors: tuple[str, ...] = (), node: str | None = None) -> PoolSummary:
    return PoolSummary("gpu.example.com", pool, node, 3, 2, 8, 3, 1, errors)


def test_fields_are_renamed_and_what_v1alpha3_lacks_is_kept_in_the_annotation() -> None:
    status = request_status(
        [
            summary("a", node="n1", errors=("pool a: slice x is missing",)),
            summary("b", errors=("pool b: mixed generations",)),
        ],
        1,
        NOW,
    )
    obj = stored({"driver": "gpu.example.com", "limit": 1, "ttlSecondsAfterComplete": 60}, status)
    served = to_v1alpha3(obj)
    assert served["spec"] == {"driver": "gpu.example.com", "limit": 1}
    assert served["status"]["poolCount"] == 2  # two matched, one listed
    [pool] = served["status"]["pools"]
    assert pool == {
        "driver": "gpu.example.com",
        "poolName": "a",
        "generation": 3,
        "resourceSliceCount": 2,
        "totalDevices": 8,
        "allocatedDevices": 3,
        "availableDevices": 4,
        "unavailableDevices": 1,
        "nodeName": "n1",
        "validationError": "slice x is missing",
    }
    assert served["status"]["conditions"] == status["conditions"]
    for seed_only in ("observationTime", "truncated", "totalMatchingPools", "validationErrors"):
        assert seed_only not in served["status"]
    kept = orjson.loads(served["metadata"]["annotations"][KEPT])
    assert kept == {
        "spec": {"ttlSecondsAfterComplete": 60},
        # Pool b is not listed: its message has no pool to go to, so all are kept. The
        # observation time is the Complete condition's: not kept.
        "status": {
            "validationErrors": ["pool a: slice x is missing", "pool b: mixed generations"],
        },
    }
    assert obj == stored(
        {"driver": "gpu.example.com", "limit": 1, "ttlSecondsAfterComplete": 60}, status
    ), "the input is not changed"


def test_a_status_written_in_v1alpha3_is_stored_in_the_seed_shape() -> None:
    served = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": "r"},
        "spec": {"driver": "gpu.example.com"},
        "status": {
            "poolCount": 3,
            "pools": [
                {"driver": "gpu.example.com", "poolName": "p", "generation": 2,
                 "validationError": "generation 2 incomplete"},
                {"driver": "gpu.example.com", "poolName": "q", "generation": 1,
                 "resourceSliceCount": 1, "totalDevices": 2, "allocatedDevices": 1,
                 "availableDevices": 1},
            ],
            "conditions": [{"type": "Complete", "status": "True", "reason": "Done",
                            "message": "", "lastTransitionTime": NOW}],
        },
    }  # fmt: skip
    out = to_v1alpha1(served)
    assert out["metadata"] == {"name": "r"}
    assert out["status"]["pools"][0] == {
        "driver": "gpu.example.com",
        "poolName": "p",
        "totalDevices": 0,
        "allocatedDevices": 0,
        "availableDevices": 0,
        "unavailableDevices": 0,
        "sliceCount": 0,
        "generation": 2,
    }
    assert out["status"]["pools"][1]["sliceCount"] == 1
    assert out["status"]["validationErrors"] == ["pool p: generation 2 incomplete"]
    assert out["status"]["truncated"] is True
    assert out["status"]["totalMatchingPools"] == 3
    # Answered when the condition says: the controller will not answer it again.
    assert out["status"]["observationTime"] == NOW


def test_kept_messages_give_way_to_a_pool_message_written_in_v1alpha3() -> None:
    status = request_status([summary("a", errors=("pool a: old",))], 10, NOW)
    served = to_v1alpha3(stored({"driver": "gpu.example.com"}, status))
    served["status"]["pools"][0]["validationError"] = "new"
    assert to_v1alpha1(served)["status"]["validationErrors"] == ["pool a: new"]


def test_a_failed_answer_has_no_pool_count_in_the_seed_shape_and_zero_in_v1alpha3() -> None:
    obj = stored({"driver": "gpu.example.com"}, failed_status("CalculationFailed", "boom", NOW))
    served = to_v1alpha3(obj)
    assert served["status"]["poolCount"] == 0
    assert to_v1alpha1(served) == obj


def test_an_observation_time_other_than_the_answers_is_kept() -> None:
    status = request_status([summary("a")], 10, NOW)
    status["observationTime"] = "2026-11-25T09:59:59Z"
    obj = stored({"driver": "gpu.example.com"}, status)
    served = to_v1alpha3(obj)
    assert orjson.loads(served["metadata"]["annotations"][KEPT]) == {
        "status": {"observationTime": "2026-11-25T09:59:59Z"}
    }
    assert to_v1alpha1(served) == obj
    answered = to_v1alpha3(stored({"driver": "gpu.example.com"}, request_status([], 10, NOW)))
    assert "annotations" not in answered["metadata"]


def test_other_annotations_are_left_alone_and_an_emptied_map_goes() -> None:
    obj = stored({"driver": "d.example.com", "ttlSecondsAfterComplete": 5})
    obj["metadata"]["annotations"] = {"team": "a"}
    served = to_v1alpha3(obj)
    assert set(served["metadata"]["annotations"]) == {"team", KEPT}
    assert to_v1alpha1(served) == obj
    plain = stored({"driver": "d.example.com", "ttlSecondsAfterComplete": 5})
    assert "annotations" not in to_v1alpha1(to_v1alpha3(plain))["metadata"]


# -- round trips over generated requests -------------------------------------------

names = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6)
problems = st.text(alphabet=string.ascii_lowercase + " ", min_size=1, max_size=20)


@st.composite
def summaries(draw: st.DrawFn) -> list[PoolSummary]:
    pools = sorted(draw(st.sets(names, max_size=5)))
    out = []
    for pool in pools:
        total = draw(st.integers(0, 20))
        allocated = draw(st.integers(0, total))
        unavailable = draw(st.integers(0, total - allocated))
        found = draw(st.lists(problems, max_size=2))
        out.append(
            PoolSummary(
                "gpu.example.com",
                pool,
                draw(st.none() | names),
                draw(st.integers(0, 5)),
                draw(st.integers(0, 4)),
                total,
                allocated,
                unavailable,
                tuple(f"pool {pool}: {p}" for p in found),
            )
        )
    return out


@st.composite
def stored_requests(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": "gpu.example.com", "limit": draw(st.integers(1, 6))}
    if draw(st.booleans()):
        spec["poolName"] = draw(names)
    if draw(st.booleans()):
        spec["ttlSecondsAfterComplete"] = draw(st.integers(0, 2**31 - 1))
    status = draw(
        st.none()
        | summaries().map(lambda s: request_status(s, spec["limit"], NOW))
        | st.just(failed_status("CalculationFailed", "gave up", NOW))
    )
    return stored(spec, status)


@given(stored_requests())
@settings(max_examples=200, deadline=None)
def test_stored_requests_read_in_v1alpha3_and_written_back_are_unchanged(
    obj: dict[str, Any],
) -> None:
    """What the controller stores survives a v1alpha3 client that reads and writes it back
    (a label, kubectl edit): the stored object is the same."""
    assert to_v1alpha1(to_v1alpha3(obj)) == obj


@st.composite
def served_requests(draw: st.DrawFn) -> dict[str, Any]:
    """v1alpha3 requests as an upstream controller answers them: every pool counted, or
    one it could not validate (counts unset, one message)."""
    pools = []
    for pool in sorted(draw(st.sets(names, max_size=4))):
        entry: dict[str, Any] = {
            "driver": "gpu.example.com",
            "poolName": pool,
            "generation": draw(st.integers(0, 5)),
        }
        if draw(st.booleans()):
            entry["validationError"] = draw(problems)
            entry.update(
                {k: 0 for k in ("totalDevices", "allocatedDevices", "availableDevices")},
                unavailableDevices=0,
            )
        else:
            entry["resourceSliceCount"] = draw(st.integers(1, 4))
            entry.update(
                totalDevices=4, allocatedDevices=1, availableDevices=2, unavailableDevices=1
            )
        pools.append(entry)
    status: dict[str, Any] = {"poolCount": len(pools) + draw(st.integers(0, 3))}
    if pools:
        status["pools"] = pools
    status["conditions"] = [
        {"type": "Complete", "status": "True", "reason": "Done", "message": "",
         "lastTransitionTime": NOW}
    ]  # fmt: skip
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourcePoolStatusRequest",
        "metadata": copy.deepcopy(META),
        "spec": {"driver": "gpu.example.com", "limit": draw(st.integers(1, 1000))},
    }
    if draw(st.booleans()):
        obj["status"] = status
    return obj


@given(served_requests())
@settings(max_examples=200, deadline=None)
def test_v1alpha3_requests_stored_and_read_back_are_unchanged(obj: dict[str, Any]) -> None:
    back = to_v1alpha3(to_v1alpha1(obj))
    assert {k: v for k, v in back.items() if k != "apiVersion"} == {
        k: v for k, v in obj.items() if k != "apiVersion"
    }
