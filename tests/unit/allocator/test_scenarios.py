"""The allocator over the scenarios of ``scenarios/*.yaml``.

A scenario gives nodes, DeviceClasses, slices (compact form: ``node``, ``allNodes`` or
``nodeSelector``; attributes as plain values), claims already allocated in the cluster,
reserved devices, the claims to allocate, and per node what to expect: feasible or not;
when feasible, every answer is checked for validity by an independent checker
(``check``), plus, where the scenario says so, the devices it must be drawn from,
the devices it must include, the score; when infeasible, substrings the reasons contain.
The same scenarios run with symmetry reduction and caches turned off: same feasibility.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.allocator import Allocator, NodeResult, parse_claim
from apiserver.api.resource import DeviceID
from apiserver.pools import Node, Pools
from tests.unit.allocator.check import held_devices, valid
from tests.unit.builders import pools_of

HERE = Path(__file__).parent / "scenarios"
SCENARIOS = sorted(HERE.glob("*.yaml"))
DRIVER = "dra.example.com"


def attribute(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": str(value)}


def device(raw: dict[str, Any]) -> dict[str, Any]:
    out = dict(raw)
    if "attributes" in raw:
        out["attributes"] = {k: attribute(v) for k, v in raw["attributes"].items()}
    if "capacity" in raw:
        out["capacity"] = {k: {"value": str(v)} for k, v in raw["capacity"].items()}
    return out


def slice_obj(raw: dict[str, Any]) -> dict[str, Any]:
    name = raw["name"]
    spec: dict[str, Any] = {
        "driver": raw.get("driver", DRIVER),
        "pool": {
            "name": raw.get("pool", name),
            "generation": raw.get("generation", 1),
            "resourceSliceCount": raw.get("count", 1),
        },
    }
    for key in ("allNodes", "nodeSelector", "perDeviceNodeSelection", "sharedCounters"):
        if key in raw:
            spec[key] = raw[key]
    if "node" in raw:
        spec["nodeName"] = raw["node"]
    if "devices" in raw:
        spec["devices"] = [device(d) for d in raw["devices"]]
    return {"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec}


def allocated_claim(raw: dict[str, Any]) -> dict[str, Any]:
    results = []
    for entry in raw["devices"]:
        driver, pool, name = (
            entry.split("/") if entry.count("/") == 2 else (DRIVER, *entry.split("/"))
        )
        results.append(
            {"request": "r", "driver": driver, "pool": pool, "device": name}
            | ({"adminAccess": True} if raw.get("adminAccess") else {})
        )
    return {"spec": {}, "status": {"allocation": {"devices": {"results": results}}}}


def class_obj(raw: dict[str, Any]) -> dict[str, Any]:
    selectors = [{"cel": {"expression": e}} for e in raw.get("selectors", ())]
    return {
        "metadata": {"name": raw["name"]},
        "spec": {"selectors": selectors, **({"config": raw["config"]} if "config" in raw else {})},
    }


def device_id(text: str) -> DeviceID:
    parts = text.split("/")
    return DeviceID(*parts) if len(parts) == 3 else DeviceID(DRIVER, *parts)


class Scenario:
    def __init__(self, path: Path) -> None:
        raw = yaml.safe_load(path.read_text())
        self.raw = raw
        slices = [slice_obj(s) for s in raw.get("slices", ())]
        self.reserved = [device_id(d) for d in raw.get("reserved", ())]
        allocated = [allocated_claim(c) for c in raw.get("allocated", ())]
        self.pools: Pools = pools_of(*slices, claims=allocated, reserved=self.reserved)
        self.classes = {c["name"]: class_obj(c) for c in raw.get("classes", ())}
        self.nodes = {n["name"]: Node(n["name"], n.get("labels", {})) for n in raw["nodes"]}
        self.claims = [parse_claim(c["name"], c) for c in raw["claims"]]

    def run(self, node: str, **options: Any) -> NodeResult:
        allocator = Allocator(self.pools, self.classes, **options)
        return allocator.allocate(self.claims, self.nodes[node])


def names(scenario: Scenario, result: NodeResult) -> list[str]:
    """The devices chosen for the claims that were not allocated already."""
    return [
        r["device"]
        for claim, outcome in zip(scenario.claims, result.claims, strict=True)
        if claim.allocation is None and outcome.allocation is not None
        for r in outcome.allocation["devices"]["results"]
    ]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    scenario = Scenario(path)
    held = held_devices(scenario.pools, [(d.driver, d.pool, d.device) for d in scenario.reserved])
    for node, expected in scenario.raw["expect"].items():
        result = scenario.run(node)
        plain = scenario.run(node, symmetry=False, caches=False)
        assert result.feasible == expected["feasible"], (node, result.reasons)
        assert plain.feasible == result.feasible, (node, plain.reasons)
        if result.feasible:
            allocations = [c.allocation for c in result.claims]
            problem = valid(
                scenario.pools,
                scenario.classes,
                scenario.nodes[node],
                scenario.claims,
                allocations,
                held,
            )
            assert problem is None, (node, problem, allocations)
            chosen = names(scenario, result)
            if "from" in expected:
                assert set(chosen) <= set(expected["from"]), (node, chosen)
            for wanted in expected.get("includes", ()):
                assert wanted in chosen, (node, chosen)
            if "score" in expected:
                assert result.score == expected["score"], (node, chosen)
            for claim, requests in expected.get("requests", {}).items():
                outcome = next(c for c in result.claims if c.name == claim)
                assert outcome.allocation is not None
                got = [r["request"] for r in outcome.allocation["devices"]["results"]]
                assert sorted(set(got)) == sorted(requests), (node, got)
            for claim, fields in expected.get("allocation", {}).items():
                outcome = next(c for c in result.claims if c.name == claim)
                assert outcome.allocation is not None
                for key, value in fields.items():
                    found: Any = outcome.allocation
                    for part in key.split("."):
                        found = found.get(part)
                    assert found == value, (node, outcome.allocation)
        else:
            text = "\n".join(result.reasons)
            for wanted in expected.get("reasons", ()):
                assert wanted in text, (node, result.reasons)
