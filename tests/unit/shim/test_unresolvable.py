"""The shim's table of review reason codes: which tell kube-scheduler that preemption
cannot help (FailedAndUnresolvable) and which leave the node to preemption (Failed)."""

from __future__ import annotations

import pytest

from apiserver.allocator import reasons as codes
from apiserver.shim.scheduling import PREEMPTION_HELPS, unresolvable

NO_PREEMPTION = [
    "NoCandidates",
    "NoMatchingDevices",
    "PoolUnusable",
    "TooManyDevices",
    "InvalidClaim",
    "AllocatedElsewhere",
    "NodeNotFound",
]
PREEMPTION_MAY_HELP = [
    "Unsatisfiable",
    "ConstraintUnsatisfiable",
    "CountersExhausted",
    "CapacityExhausted",
    "BudgetExhausted",
    "NotSearched",
    "ReservationContention",
]


def entry(*reasons: str) -> dict[str, object]:
    return {
        "nodeName": "n1",
        "feasible": False,
        "reasons": [{"claim": "ns/c", "reason": r, "message": "m"} for r in reasons],
    }


@pytest.mark.parametrize("code", NO_PREEMPTION)
def test_code_is_unresolvable(code: str) -> None:
    assert unresolvable(entry(code))


@pytest.mark.parametrize("code", PREEMPTION_MAY_HELP)
def test_code_leaves_room_for_preemption(code: str) -> None:
    assert not unresolvable(entry(code))


@pytest.mark.parametrize("code", PREEMPTION_MAY_HELP)
def test_one_resolvable_reason_makes_the_node_resolvable(code: str) -> None:
    assert not unresolvable(entry("NoMatchingDevices", code))


def test_every_engine_code_is_in_the_table() -> None:
    engine = {v for k, v in vars(codes).items() if k.isupper() and isinstance(v, str)}
    assert engine <= set(PREEMPTION_HELPS)
    assert set(PREEMPTION_HELPS) == set(NO_PREEMPTION) | set(PREEMPTION_MAY_HELP)


def test_an_unknown_code_or_no_reason_is_not_unresolvable() -> None:
    assert not unresolvable(entry("SomethingNewer"))
    assert not unresolvable(entry())
