"""Write the translated upstream cases (``translate.py``'s JSON) as our per-area YAML files,
with the marks this project adds (``MARKS``: divergence, anyValid, rewritten, gateOff).

    python tests/unit/allocator/upstream/organise.py cases.json

Run by hand after a translation; the YAML it writes is reviewed and committed, and is what
the tests read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
FILES = {
    "TestAllocator": "allocator_testing.go",
    "TestLexicographicalAllocator": "lexicographical_testing.go",
}

# (area, file stem, test on the upstream name), first match wins.
AREAS: list[tuple[str, str, Any]] = [
    ("lexicographic order", "lexicographic", lambda n: n.startswith("lexicographical-")),
    ("search effort", "search_effort", lambda n: n.startswith("check-combinations-")),
    ("list-type attributes", "list_attributes", lambda n: n.startswith("list-attributes-")),
    ("distinct attribute", "distinct_attribute", lambda n: "distinct-constraint" in n),
    (
        "allowMultipleAllocations",
        "allow_multiple",
        lambda n: n.startswith("allow-multiple-allocations-"),
    ),
    ("consumable capacity", "consumable_capacity", lambda n: n.startswith("consumable-capacity-")),
    ("binding conditions", "binding_conditions", lambda n: "binding-conditions" in n),
    (
        "partitionable devices",
        "partitionable",
        lambda n: (
            n.startswith("partitionable-devices") or n == "all-devices-with-consumed-counters"
        ),
    ),
    ("device taints", "taints", lambda n: n.startswith("tainted-")),
    ("prioritized lists", "prioritized_list", lambda n: "prioritized-list" in n),
    ("admin access", "admin_access", lambda n: "admin-access" in n),
    ("multi-host pools", "multi_host", lambda n: "multi-host" in n),
    ("allocation mode All", "allocation_mode_all", lambda n: n.startswith("all-devices-")),
    ("matchAttribute", "match_attribute", lambda n: n.startswith("with-constraint")),
    ("class and claim config", "config", lambda n: "config" in n),
    (
        "node selection",
        "node_selection",
        lambda n: (
            "network-attached" in n
            or n
            in (
                "other-node",
                "node-restriction",
                "different-resourceslices-in-pool-can-target-different-nodes",
            )
        ),
    ),
    (
        "limits",
        "limits",
        lambda n: (
            n
            in (
                "max-number-devices",
                "too-many-devices-single-request",
                "many-devices-okay",
                "too-many-devices-total",
            )
        ),
    ),
    ("bad input", "bad_input", lambda n: n.startswith(("unknown-", "invalid-CEL"))),
    ("basics", "basics", lambda n: True),
]

GATES = {
    "adminAccess": "DRAAdminAccess",
    "prioritizedList": "DRAPrioritizedList",
    "partitionableDevices": "DRAPartitionableDevices",
    "deviceTaints": "DRADeviceTaints",
    "deviceBindingAndStatus": "DRADeviceBindingConditions",
    "consumableCapacity": "DRAConsumableCapacity",
    "listTypeAttributes": "DRAListTypeAttributes",
}

# What this project adds to a case (the marks are described in tests/unit/allocator/upstream_cases.py).
MARKS: dict[str, dict[str, str]] = (
    json.loads((HERE / "marks.json").read_text()) if (HERE / "marks.json").exists() else {}
)


def area_of(name: str) -> tuple[str, str]:
    for area, stem, test in AREAS:
        if test(name):
            return area, stem
    raise AssertionError(name)


def _rename(value: Any, old: str, new: str) -> tuple[Any, bool]:
    """Every string (keys too) with ``old`` replaced by ``new``, and whether any changed."""
    if isinstance(value, str):
        return value.replace(old, new), old in value
    if isinstance(value, list):
        pairs = [_rename(v, old, new) for v in value]
        return [v for v, _ in pairs], any(c for _, c in pairs)
    if isinstance(value, dict):
        out, changed = {}, False
        for k, v in value.items():
            nk, ck = _rename(k, old, new)
            nv, cv = _rename(v, old, new)
            out[nk] = nv
            changed = changed or ck or cv
        return out, changed
    return value, False


def rewrite(raw: dict[str, Any]) -> list[str]:
    """The smallest changes that make upstream's objects valid for kube-apiserver; returns
    what was changed (the case's ``rewritten`` note)."""
    notes = []
    for old, new, why in (
        ("subReq-", "subreq-", "subrequest names subReq-N are not DNS labels: subreq-N"),
        ("capacity-0", "capacity0", "capacity names must be C identifiers: capacity0/capacity1"),
        ("capacity-1", "capacity1", None),
    ):
        changed = False
        for key in ("claimsToAllocate", "expectResults", "slices", "allocatedCapacityDevices"):
            if key in raw:
                raw[key], c = _rename(raw[key], old, new)
                changed = changed or c
        if changed and why:
            notes.append(why)
    seen: set[str] = set()
    for obj in raw.get("slices") or ():
        name = obj["metadata"]["name"]
        if name in seen:
            obj["metadata"]["name"] = name = f"{name}-dup{len(seen)}"
            if "slice names must be unique: a repeated name gets -dupN" not in notes:
                notes.append("slice names must be unique: a repeated name gets -dupN")
        seen.add(name)
    for obj in raw.get("slices") or ():
        for counter_set in obj["spec"].get("sharedCounters") or ():
            if not counter_set.get("counters"):
                counter_set["counters"] = {"memory": {"value": "1Gi"}}
                note = "a counter set needs at least one counter: memory 1Gi added"
                if note not in notes:
                    notes.append(note)
    claim_names: set[str] = set()
    for claim in raw.get("claimsToAllocate") or ():
        if claim["metadata"]["name"] in claim_names:
            claim["metadata"]["name"] += "-b"
            notes.append("claim names must be unique in a namespace: a repeated name gets -b")
        claim_names.add(claim["metadata"]["name"])
    for obj in raw.get("slices") or ():
        for device in obj["spec"].get("devices") or ():
            for capacity in (device.get("capacity") or {}).values():
                if _fit_policy(capacity, bool(device.get("allowMultipleAllocations"))):
                    note = (
                        "a requestPolicy needs allowMultipleAllocations and must fit the capacity "
                        "value: dropped on dedicated devices, validRange max/step cut to the value"
                    )
                    if note not in notes:
                        notes.append(note)
    for claim in raw.get("claimsToAllocate") or ():
        for request in claim["spec"]["devices"].get("requests") or ():
            for alternative in [request.get("exactly")] + (request.get("firstAvailable") or []):
                if (
                    alternative
                    and alternative.get("allocationMode") == "All"
                    and alternative.get("count")
                ):
                    del alternative["count"]
                    if "count is not allowed with allocationMode All: dropped" not in notes:
                        notes.append("count is not allowed with allocationMode All: dropped")
    for obj in raw.get("slices") or ():
        for device in obj["spec"].get("devices") or ():
            if device.get("bindingConditions") and not device.get("bindingFailureConditions"):
                device["bindingFailureConditions"] = ["BindingFailed"]
                for result in raw.get("expectResults") or ():
                    for r in result["devices"]["results"]:
                        if r["device"] == device["name"] and r.get("bindingConditions"):
                            r["bindingFailureConditions"] = ["BindingFailed"]
                notes.append(
                    "bindingConditions need bindingFailureConditions too: BindingFailed added"
                )
    return notes


def _fit_policy(capacity: dict[str, Any], shared: bool) -> bool:
    """Makes a capacity's requestPolicy one kube-apiserver accepts; whether it changed."""
    policy = capacity.get("requestPolicy")
    if policy is None:
        return False
    if not shared:
        del capacity["requestPolicy"]
        return True
    valid_range = policy.get("validRange")
    if valid_range is None:
        return False
    value, changed = float(capacity["value"]), False
    if "max" in valid_range and float(valid_range["max"]) > value:
        valid_range["max"] = capacity["value"]
        changed = True
    if "step" in valid_range and float(valid_range["min"]) + float(valid_range["step"]) > value:
        del valid_range["step"]
        changed = True
    return changed


def convert(raw: dict[str, Any]) -> dict[str, Any]:
    name = raw["name"]
    notes = rewrite(raw)
    case: dict[str, Any] = {"name": name, "upstream": f"{FILES[raw['file']]}:{raw['line']}"}
    case["gates"] = sorted(GATES[k] for k, v in (raw.get("features") or {}).items() if v)
    if notes:
        case["rewritten"] = "; ".join(notes)
    case.update(MARKS.get(name, {}))
    node = raw.get("node") or {
        "metadata": {"name": "node-1", "labels": {"region": "region-1", "planet": "earth"}}
    }
    case["node"] = {"name": node["metadata"]["name"], "labels": node["metadata"]["labels"]}
    case["classes"] = raw.get("classes") or []
    case["slices"] = raw.get("slices") or []
    allocated = [{"device": d} for d in raw.get("allocatedDevices") or []]
    for shared in raw.get("allocatedSharedDeviceIDs") or []:
        device, share = shared.split("#")
        allocated.append({"device": device, "shareID": share})
    for device, consumed in (raw.get("allocatedCapacityDevices") or {}).items():
        allocated.append({"device": device, "consumedCapacity": consumed})
    if allocated:
        case["allocated"] = allocated
    case["claims"] = raw.get("claimsToAllocate") or []
    if "expectError" in raw:
        case["expect"] = {"error": raw["expectError"]["error"]}
    elif raw.get("expectResults") and case["claims"]:
        case["expect"] = {"results": raw["expectResults"]}
    elif case["claims"]:
        case["expect"] = {"unschedulable": True}
    else:
        case["expect"] = {"results": []}
    if "expectNumAllocateOneInvocations" in raw:
        case["upstreamSearchSteps"] = raw["expectNumAllocateOneInvocations"]
    return case


def main(path: str) -> None:
    by_file: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    for raw in json.loads(Path(path).read_text()):
        area, stem = area_of(raw["name"])
        by_file.setdefault(stem, (area, []))[1].append(convert(raw))
    for stem, (area, cases) in by_file.items():
        cases.sort(key=lambda c: (c["upstream"].split(":")[0], int(c["upstream"].split(":")[1])))
        text = yaml.safe_dump(
            {"area": area, "cases": cases}, sort_keys=False, width=120, default_flow_style=None
        )
        (HERE / f"{stem}.yaml").write_text(
            f"# Upstream allocator cases: {area}. Generated by organise.py, reviewed.\n{text}"
        )


if __name__ == "__main__":
    main(sys.argv[1])
