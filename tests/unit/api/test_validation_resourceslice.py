"""ResourceSlice validation, table-driven: a slice in, the exact failing field paths out.

Every limit is tested at its maximum (accepted) and one past it (rejected with the path of
the limit alone).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.api.field import ErrorType, FieldError
from apiserver.api.resource import ResourceSlice, validate_resource_slice
from apiserver.api.resource.validation import resourceslice as v
from apiserver.machinery.decoding import check_object

D0 = "spec.devices[0]"


def spec(**fields: Any) -> dict[str, Any]:
    """A valid node-local slice with one device, with ``fields`` replacing spec fields."""
    base: dict[str, Any] = {
        "driver": "gpu.example.com",
        "pool": {"name": "node-1", "generation": 0, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "devices": [{"name": "gpu-0"}],
    }
    base.update(fields)
    return {k: val for k, val in base.items() if val is not None}


def errors(spec_: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    """What the registry reports: type errors from the strict parse, else validation's."""
    obj = {"metadata": {"name": "s"}, "spec": copy.deepcopy(spec_)}
    model, unknown, errs = check_object(obj, ResourceSlice)
    assert not unknown, unknown
    if model is None:
        return errs
    old_model = None
    if old is not None:
        old_model = ResourceSlice.model_validate({"metadata": {"name": "s"}, "spec": old})
    return validate_resource_slice(model, old_model)


def fields(spec_: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [e.field for e in errors(spec_, old)]


def attrs(count: int, prefix: str = "a") -> dict[str, Any]:
    return {f"{prefix}{i}": {"int": i} for i in range(count)}


def caps(count: int, prefix: str = "c") -> dict[str, Any]:
    return {f"{prefix}{i}": {"value": "1"} for i in range(count)}


def counters(count: int, prefix: str = "c") -> dict[str, Any]:
    return {f"{prefix}{i}": {"value": "1"} for i in range(count)}


def devices(count: int, **fields: Any) -> list[dict[str, Any]]:
    return [{"name": f"dev-{i}", **copy.deepcopy(fields)} for i in range(count)]


def device(**fields: Any) -> list[dict[str, Any]]:
    """The ``devices`` of a slice with one device ``gpu-0`` having ``fields``."""
    return [{"name": "gpu-0", **fields}]


def dmixins(count: int, **fields: Any) -> dict[str, Any]:
    return {"device": [{"name": f"m{i}", **fields} for i in range(count)]}


def taint(**fields: Any) -> dict[str, Any]:
    return {"key": "example.com/unhealthy", "effect": "NoSchedule", **fields}


SETS = [{"name": "gpu-0-set", "counters": {"memory": {"value": "80Gi"}, "sm": {"value": "8"}}}]


def consume(counter_set: str = "gpu-0-set", **fields: Any) -> dict[str, Any]:
    return {"counterSet": counter_set, **fields}


# -- rules --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec_", "expected"),
    [
        pytest.param(spec(), [], id="minimal"),
        pytest.param(spec(devices=None), [], id="no devices"),
        # Driver and pool.
        pytest.param(spec(driver="Bad_Driver"), ["spec.driver"], id="driver syntax"),
        pytest.param(spec(driver="d" * 64), ["spec.driver"], id="driver too long"),
        pytest.param(spec(driver=""), ["spec.driver"], id="driver empty"),
        pytest.param(
            spec(pool={"name": "a//b", "generation": 0, "resourceSliceCount": 1}),
            ["spec.pool.name"],
            id="pool name",
        ),
        pytest.param(
            spec(pool={"name": "a/b.c", "generation": 7, "resourceSliceCount": 3}),
            [],
            id="pool with slashes",
        ),
        pytest.param(
            spec(pool={"name": "p", "generation": -1, "resourceSliceCount": 1}),
            ["spec.pool.generation"],
            id="negative generation",
        ),
        pytest.param(
            spec(pool={"name": "p", "generation": 0, "resourceSliceCount": 0}),
            ["spec.pool.resourceSliceCount"],
            id="zero slice count",
        ),
        pytest.param(
            spec(pool={"name": "p", "generation": 0}),
            ["spec.pool.resourceSliceCount"],
            id="slice count missing",
        ),
        # Exactly one node selection.
        pytest.param(spec(nodeName=None), ["spec"], id="no node selection"),
        pytest.param(spec(allNodes=True), ["spec"], id="two node selections"),
        pytest.param(spec(nodeName=None, allNodes=True), [], id="all nodes"),
        pytest.param(spec(nodeName=None, allNodes=False), ["spec.allNodes"], id="allNodes false"),
        pytest.param(
            spec(nodeName=None, perDeviceNodeSelection=False),
            ["spec.perDeviceNodeSelection"],
            id="perDeviceNodeSelection false",
        ),
        pytest.param(spec(nodeName=""), ["spec.nodeName"], id="empty node name"),
        pytest.param(spec(nodeName="Node_1"), ["spec.nodeName"], id="node name syntax"),
        pytest.param(
            spec(
                nodeName=None,
                nodeSelector={
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                },
            ),
            [],
            id="node selector",
        ),
        pytest.param(
            spec(
                nodeName=None,
                nodeSelector={"nodeSelectorTerms": [{}, {}]},
            ),
            ["spec.nodeSelector.nodeSelectorTerms"],
            id="node selector with two terms",
        ),
        pytest.param(
            spec(
                nodeName=None,
                nodeSelector={
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "In"},
                                {"key": "bad key!", "operator": "Exists"},
                                {"key": "rank", "operator": "Gt", "values": ["x"]},
                            ],
                            "matchFields": [
                                {"key": "metadata.uid", "operator": "In", "values": ["n"]}
                            ],
                        }
                    ]
                },
            ),
            [
                "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values",
                "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[1].key",
                "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[2].values[0]",
                "spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].key",
            ],
            id="node selector requirements",
        ),
        # Devices: names, attributes, capacity.
        pytest.param(spec(devices=device(name="GPU_0")), [f"{D0}.name"], id="device name"),
        pytest.param(spec(devices=[{"name": ""}]), [f"{D0}.name"], id="device name empty"),
        pytest.param(
            spec(devices=[{"name": "a"}, {"name": "b"}, {"name": "a"}]),
            ["spec.devices[2].name"],
            id="duplicate device name",
        ),
        pytest.param(
            spec(
                devices=device(
                    attributes={
                        "model": {"string": "a100"},
                        "example.com/rev": {"version": "1.2.3"},
                        "bad name": {"int": 1},
                        "both": {"int": 1, "bool": True},
                    },
                    capacity={"memory": {"value": "80Gi"}, "a/b/c": {"value": "1"}},
                )
            ),
            [f"{D0}.attributes[bad name]", f"{D0}.attributes[both]", f"{D0}.capacity[a/b/c]"],
            id="attributes and capacity",
        ),
        # List-type attributes (upstream's DRAListTypeAttributes).
        pytest.param(
            spec(
                devices=device(
                    attributes={
                        "numa": {"ints": [0, 1]},
                        "flags": {"bools": [True, False]},
                        "example.com/pcieRoots": {"strings": ["pci0000:00", "pci0000:80"]},
                        "drivers": {"versions": ["1.2.3", "2.0.0-rc.1"]},
                    }
                )
            ),
            [],
            id="list attributes",
        ),
        pytest.param(
            spec(devices=device(attributes={"numa": {"ints": []}})),
            [f"{D0}.attributes[numa].ints"],
            id="list attribute empty",
        ),
        pytest.param(
            spec(devices=device(attributes={"roots": {"strings": ["ok", "x" * 65]}})),
            [f"{D0}.attributes[roots].strings[1]"],
            id="list attribute string too long",
        ),
        pytest.param(
            spec(devices=device(attributes={"v": {"versions": ["1.0.0", "1.0"]}})),
            [f"{D0}.attributes[v].versions[1]"],
            id="list attribute version not semver",
        ),
        pytest.param(
            spec(devices=device(attributes={"a": {"int": 1 << 63}, "b": {"int": -(1 << 63)}})),
            [f"{D0}.attributes[a].int"],
            id="int attribute beyond int64",
        ),
        pytest.param(
            spec(devices=device(attributes={"a": {"ints": [(1 << 63) - 1, -(1 << 63) - 1]}})),
            [f"{D0}.attributes[a].ints[1]"],
            id="list attribute int beyond int64",
        ),
        pytest.param(
            spec(devices=device(attributes={"v": {"strings": ["a"], "string": "a"}})),
            [f"{D0}.attributes[v]"],
            id="list and scalar both set",
        ),
        pytest.param(
            spec(devices=device(attributes={"v": {"ints": [1], "bools": [True]}})),
            [f"{D0}.attributes[v]"],
            id="two lists set",
        ),
        pytest.param(
            spec(devices=device(attributes={"v": {"ints": ["1"]}})),
            [f"{D0}.attributes[v].ints[0]"],
            id="list attribute of the wrong element type",
        ),
        pytest.param(
            spec(devices=device(attributes={"a": {"ints": list(range(47))}, "b": {"int": 1}})),
            [],
            id="48 attribute values",
        ),
        pytest.param(
            spec(
                devices=device(attributes={"a": {"ints": list(range(47))}, "b": {"ints": [1, 2]}})
            ),
            [f"{D0}.attributes"],
            id="49 attribute values",
        ),
        pytest.param(
            spec(
                devices=device(attributes={"b": {"int": 1}}, includes=["m"]),
                mixins={"device": [{"name": "m", "attributes": {"a": {"strings": ["x"] * 48}}}]},
            ),
            [f"{D0}.attributes"],
            id="attribute values counted once mixins are applied",
        ),
        pytest.param(
            spec(devices=device(capacity={"memory": {"value": "lots"}})),
            [f"{D0}.capacity[memory].value"],
            id="capacity not a quantity",
        ),
        # Per-device node selection.
        pytest.param(
            spec(
                nodeName=None,
                perDeviceNodeSelection=True,
                devices=[
                    {"name": "a", "nodeName": "node-1"},
                    {"name": "b", "allNodes": True},
                    {
                        "name": "c",
                        "nodeSelector": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": ["n"]}
                                    ]
                                }
                            ]
                        },
                    },
                ],
            ),
            [],
            id="per-device node selection",
        ),
        pytest.param(
            spec(nodeName=None, perDeviceNodeSelection=True),
            [D0],
            id="per-device node selection missing",
        ),
        pytest.param(
            spec(
                nodeName=None,
                perDeviceNodeSelection=True,
                devices=device(nodeName="n", allNodes=True),
            ),
            [D0],
            id="per-device node selection twice",
        ),
        pytest.param(
            spec(nodeName=None, perDeviceNodeSelection=True, devices=device(allNodes=False)),
            [f"{D0}.allNodes"],
            id="device allNodes false",
        ),
        pytest.param(
            spec(devices=device(nodeName="node-1", allNodes=True)),
            [f"{D0}.nodeName", f"{D0}.allNodes"],
            id="device node selection without perDeviceNodeSelection",
        ),
        # Taints.
        pytest.param(
            spec(
                devices=device(
                    taints=[
                        taint(),
                        taint(effect="None", value="v"),
                        taint(effect="NoExecute", timeAdded="2026-01-01T00:00:00Z"),
                    ]
                )
            ),
            [],
            id="taints",
        ),
        pytest.param(
            spec(devices=device(taints=[taint(key="bad key")])),
            [f"{D0}.taints[0].key"],
            id="taint key",
        ),
        pytest.param(
            spec(devices=device(taints=[taint(key="")])),
            [f"{D0}.taints[0].key"],
            id="taint key empty",
        ),
        pytest.param(
            spec(devices=device(taints=[taint(value="not valid!")])),
            [f"{D0}.taints[0].value"],
            id="taint value",
        ),
        pytest.param(
            spec(devices=device(taints=[taint(effect="PreferNoSchedule")])),
            [f"{D0}.taints[0].effect"],
            id="taint effect",
        ),
        pytest.param(
            spec(devices=device(taints=[{"key": "k"}])),
            [f"{D0}.taints[0].effect"],
            id="taint effect missing",
        ),
        # Binding conditions.
        pytest.param(
            spec(
                devices=device(
                    bindsToNode=True,
                    bindingConditions=["example.com/attached", "Ready"],
                    bindingFailureConditions=["example.com/failed"],
                )
            ),
            [],
            id="binding conditions",
        ),
        pytest.param(
            spec(devices=device(bindingConditions=["Ready"])),
            [f"{D0}.bindingFailureConditions"],
            id="binding conditions without failure conditions",
        ),
        pytest.param(
            spec(devices=device(bindingFailureConditions=["Failed"])),
            [f"{D0}.bindingConditions"],
            id="failure conditions without binding conditions",
        ),
        pytest.param(
            spec(devices=device(bindingConditions=["A", "B"], bindingFailureConditions=["B"])),
            [f"{D0}.bindingFailureConditions[0]"],
            id="binding conditions overlap",
        ),
        pytest.param(
            spec(devices=device(bindingConditions=["A", "A"], bindingFailureConditions=["F"])),
            [f"{D0}.bindingConditions[1]"],
            id="binding condition duplicate",
        ),
        pytest.param(
            spec(devices=device(bindingConditions=["not a name"], bindingFailureConditions=["-x"])),
            [f"{D0}.bindingConditions[0]", f"{D0}.bindingFailureConditions[0]"],
            id="binding condition syntax",
        ),
        # Device mixins and includes.
        pytest.param(
            spec(
                devices=[*devices(3, includes=["m0"]), {"name": "dev-3", "includes": ["gone"]}],
                mixins=dmixins(1, attributes=attrs(2)),
            ),
            ["spec.devices[3].includes[0]"],
            id="dangling device include",
        ),
        pytest.param(
            spec(
                devices=device(includes=["m0", "cs"]),
                mixins={**dmixins(1), "counterSet": [{"name": "cs", "counters": counters(1)}]},
            ),
            [f"{D0}.includes[1]"],
            id="device include of another kind of mixin",
        ),
        pytest.param(
            spec(mixins={"device": [{"name": "m"}, {"name": "m"}]}),
            ["spec.mixins.device[1].name"],
            id="duplicate device mixin name",
        ),
        pytest.param(
            spec(mixins={"device": [{"name": "Bad_Name"}, {"name": ""}]}),
            ["spec.mixins.device[0].name", "spec.mixins.device[1].name"],
            id="device mixin names",
        ),
        pytest.param(
            spec(mixins=dmixins(1, attributes={"bad name": {"int": 1}, "v": {"version": "1"}})),
            [
                "spec.mixins.device[0].attributes[bad name]",
                "spec.mixins.device[0].attributes[v].version",
            ],
            id="device mixin attributes",
        ),
        pytest.param(
            spec(mixins=dmixins(1, attributes=attrs(40))),
            [],
            id="unused device mixin larger than a device",
        ),
        pytest.param(
            spec(devices=device(includes=["m0"]), mixins=dmixins(1, attributes=attrs(40))),
            [D0],
            id="device including a mixin larger than a device",
        ),
        # Counter sets and their mixins.
        pytest.param(spec(sharedCounters=SETS), [], id="counter set"),
        pytest.param(
            spec(sharedCounters=[*SETS, {"name": "gpu-0-set", "counters": counters(1)}]),
            ["spec.sharedCounters[1].name"],
            id="duplicate counter set name",
        ),
        pytest.param(
            spec(sharedCounters=[{"name": "Set_0", "counters": {"Mem": {"value": "1"}}}]),
            ["spec.sharedCounters[0].name", "spec.sharedCounters[0].counters[Mem]"],
            id="counter set and counter names",
        ),
        pytest.param(
            spec(sharedCounters=[{"name": "s"}]),
            ["spec.sharedCounters[0].counters"],
            id="counter set without counters",
        ),
        pytest.param(
            spec(
                sharedCounters=[{"name": "s", "includes": ["cs"]}],
                mixins={"counterSet": [{"name": "cs", "counters": counters(2)}]},
            ),
            [],
            id="counter set from a mixin only",
        ),
        pytest.param(
            spec(
                sharedCounters=[{"name": "s", "includes": ["cs", "nope"]}],
                mixins={"counterSet": [{"name": "cs", "counters": counters(2)}]},
            ),
            ["spec.sharedCounters[0].includes[1]"],
            id="dangling counter set include",
        ),
        pytest.param(
            spec(mixins={"counterSet": [{"name": "cs", "counters": {}}]}),
            ["spec.mixins.counterSet[0].counters"],
            id="counter set mixin without counters",
        ),
        pytest.param(
            spec(mixins={"counterSet": [{"name": "cs"}]}),
            ["spec.mixins.counterSet[0].counters"],
            id="counter set mixin counters missing",
        ),
        pytest.param(
            spec(
                mixins={
                    "counterSet": [
                        {"name": "cs", "counters": {"Bad": {"value": "1"}}},
                        {"name": "cs", "counters": counters(1)},
                    ]
                }
            ),
            ["spec.mixins.counterSet[1].name", "spec.mixins.counterSet[0].counters[Bad]"],
            id="counter set mixin names",
        ),
        # Counter consumption.
        pytest.param(
            spec(
                sharedCounters=SETS,
                devices=device(consumesCounters=[consume(counters={"memory": {"value": "40Gi"}})]),
            ),
            [],
            id="consumption",
        ),
        # Kubernetes 1.35+: counter sets in a slice of their own, devices elsewhere in the pool.
        pytest.param(
            spec(
                sharedCounters=SETS,
                devices=device(consumesCounters=[consume("other", counters=counters(1))]),
            ),
            [],
            id="consumption of a counter set of another slice of the pool",
        ),
        pytest.param(
            spec(devices=device(consumesCounters=[consume(counters={"memory": {"value": "1"}})])),
            [],
            id="device slice without counter sets (1.35 layout)",
        ),
        pytest.param(spec(sharedCounters=SETS, devices=None), [], id="counter slice (1.35 layout)"),
        pytest.param(
            spec(sharedCounters=[{"name": "gpu-0-set"}], devices=None),
            ["spec.sharedCounters[0].counters"],
            id="counter slice: a counter set without counters",
        ),
        pytest.param(
            spec(sharedCounters=SETS + SETS, devices=None),
            ["spec.sharedCounters[1].name"],
            id="counter slice: a counter set named twice",
        ),
        pytest.param(
            spec(sharedCounters=[{"name": "Bad_Set", "counters": counters(1)}], devices=None),
            ["spec.sharedCounters[0].name"],
            id="counter slice: counter set name not a DNS label",
        ),
        pytest.param(
            spec(
                sharedCounters=[{"name": "s", "counters": {"Bad_Counter": {"value": "1"}}}],
                devices=None,
            ),
            ["spec.sharedCounters[0].counters[Bad_Counter]"],
            id="counter slice: counter name not a DNS label",
        ),
        pytest.param(
            spec(nodeName=None, sharedCounters=SETS, devices=None),
            ["spec"],
            id="counter slice: node selection still required",
        ),
        pytest.param(
            spec(devices=device(consumesCounters=[consume(counters={})])),
            [f"{D0}.consumesCounters[0].counters"],
            id="device slice: a consumption without counters",
        ),
        pytest.param(
            spec(
                devices=device(
                    consumesCounters=[consume(counters=counters(1)), consume(counters=counters(1))]
                )
            ),
            [f"{D0}.consumesCounters[1].counterSet"],
            id="device slice: one consumption per counter set",
        ),
        pytest.param(
            spec(
                sharedCounters=SETS,
                devices=device(consumesCounters=[consume(counters={"cores": {"value": "1"}})]),
            ),
            [f"{D0}.consumesCounters[0].counters[cores]"],
            id="consumption of an unknown counter",
        ),
        pytest.param(
            spec(
                sharedCounters=SETS,
                devices=device(
                    consumesCounters=[
                        consume(counters={"sm": {"value": "1"}}),
                        consume(counters={"memory": {"value": "1"}}),
                    ]
                ),
            ),
            [f"{D0}.consumesCounters[1].counterSet"],
            id="two consumptions of one counter set",
        ),
        pytest.param(
            spec(sharedCounters=SETS, devices=device(consumesCounters=[consume()])),
            [f"{D0}.consumesCounters[0].counters"],
            id="consumption without counters",
        ),
        pytest.param(
            spec(sharedCounters=SETS, devices=device(consumesCounters=[consume("")])),
            [f"{D0}.consumesCounters[0].counterSet", f"{D0}.consumesCounters[0].counters"],
            id="consumption without counter set",
        ),
        pytest.param(
            spec(
                sharedCounters=[{"name": "s", "includes": ["cs"]}],
                devices=device(
                    consumesCounters=[
                        consume("s", includes=["half"], counters={"c0": {"value": "2"}})
                    ]
                ),
                mixins={
                    "counterSet": [{"name": "cs", "counters": counters(2)}],
                    "deviceCounterConsumption": [{"name": "half", "counters": counters(2)}],
                },
            ),
            [],
            id="consumption through mixins",
        ),
        pytest.param(
            spec(
                sharedCounters=[{"name": "s", "counters": counters(1)}],
                devices=device(consumesCounters=[consume("s", includes=["ok", "wide"])]),
                mixins={
                    "deviceCounterConsumption": [
                        {"name": "ok", "counters": counters(1)},
                        {"name": "wide", "counters": counters(3)},
                    ]
                },
            ),
            [f"{D0}.consumesCounters[0].includes[1]"],
            id="consumption mixin with counters the set lacks",
        ),
        pytest.param(
            spec(
                sharedCounters=[{"name": "s", "counters": counters(1)}],
                devices=device(consumesCounters=[consume("s", includes=["nope"])]),
            ),
            [f"{D0}.consumesCounters[0].includes[0]", f"{D0}.consumesCounters[0].counters"],
            id="dangling consumption include",
        ),
        pytest.param(
            spec(
                mixins={
                    "deviceCounterConsumption": [
                        {"name": "x", "counters": {}},
                        {"name": "x", "counters": counters(1)},
                    ]
                }
            ),
            [
                "spec.mixins.deviceCounterConsumption[1].name",
                "spec.mixins.deviceCounterConsumption[0].counters",
            ],
            id="consumption mixin names and counters",
        ),
        # Request policies: valid only with allowMultipleAllocations, and within the value.
        pytest.param(
            spec(
                devices=device(
                    allowMultipleAllocations=True,
                    capacity={
                        "bw": {
                            "value": "10Gi",
                            "requestPolicy": {
                                "default": "1Gi",
                                "validValues": ["1Gi", "2Gi", "10Gi"],
                            },
                        },
                        "mem": {
                            "value": "8Gi",
                            "requestPolicy": {
                                "default": "2Gi",
                                "validRange": {"min": "1Gi", "max": "8Gi", "step": "1Gi"},
                            },
                        },
                        "slots": {"value": 4, "requestPolicy": {"default": 1}},
                    },
                )
            ),
            [],
            id="request policies",
        ),
        pytest.param(
            spec(
                devices=device(
                    capacity={"mem": {"value": "8Gi", "requestPolicy": {"default": "1Gi"}}}
                )
            ),
            [f"{D0}.capacity[mem].requestPolicy"],
            id="request policy without allowMultipleAllocations",
        ),
        pytest.param(
            spec(
                devices=device(includes=["plain", "shared"]),
                mixins={
                    "device": [
                        {"name": "plain", "capacity": {"mem": {"value": "1"}}},
                        {
                            "name": "shared",
                            "capacity": {"mem": {"value": "8", "requestPolicy": {"default": "1"}}},
                        },
                    ]
                },
            ),
            [f"{D0}.includes[1]"],
            id="request policy from a mixin without allowMultipleAllocations",
        ),
        pytest.param(
            spec(
                devices=device(includes=["shared", "plain"]),
                mixins={
                    "device": [
                        {
                            "name": "shared",
                            "capacity": {"mem": {"value": "8", "requestPolicy": {"default": "1"}}},
                        },
                        {"name": "plain", "capacity": {"mem": {"value": "1"}}},
                    ]
                },
            ),
            [],
            id="request policy of a mixin overridden by a later mixin",
        ),
        pytest.param(
            spec(
                devices=device(includes=["shared"], capacity={"mem": {"value": "4"}}),
                mixins={
                    "device": [
                        {
                            "name": "shared",
                            "capacity": {"mem": {"value": "8", "requestPolicy": {"default": "1"}}},
                        }
                    ]
                },
            ),
            [],
            id="request policy of a mixin overridden by the device",
        ),
        pytest.param(
            spec(
                devices=device(
                    allowMultipleAllocations=True,
                    capacity={
                        # a default alone may exceed the value, as upstream
                        "a": {"value": "1Gi", "requestPolicy": {"default": "2Gi"}},
                        "b": {"value": "4", "requestPolicy": {"validValues": ["1", "2"]}},
                        "c": {
                            "value": "4",
                            "requestPolicy": {"default": "3", "validValues": ["1", "3", "2", "8"]},
                        },
                        "d": {
                            "value": "4",
                            "requestPolicy": {"default": "2", "validValues": ["1", "3"]},
                        },
                        "e": {
                            "value": "4",
                            "requestPolicy": {
                                "default": "1",
                                "validValues": ["1"],
                                "validRange": {"min": "1"},
                            },
                        },
                    },
                )
            ),
            [
                f"{D0}.capacity[b].requestPolicy.default",
                f"{D0}.capacity[c].requestPolicy.validValues[2]",
                f"{D0}.capacity[c].requestPolicy.validValues[3]",
                f"{D0}.capacity[d].requestPolicy.default",
                f"{D0}.capacity[e].requestPolicy",
            ],
            id="request policy values",
        ),
        pytest.param(
            spec(
                devices=device(
                    allowMultipleAllocations=True,
                    capacity={
                        "a": {
                            "value": "4",
                            "requestPolicy": {"default": "1", "validRange": {"min": "5"}},
                        },
                        "b": {"value": "4", "requestPolicy": {"validRange": {"min": "1"}}},
                        "c": {
                            "value": "8",
                            "requestPolicy": {
                                "default": "2",
                                "validRange": {"min": "1", "step": "2"},
                            },
                        },
                        "d": {
                            "value": "8",
                            "requestPolicy": {
                                "default": "1",
                                "validRange": {"min": "1", "max": "6", "step": "2"},
                            },
                        },
                        "e": {
                            "value": "8",
                            "requestPolicy": {
                                "default": "9",
                                "validRange": {"min": "1", "max": "9"},
                            },
                        },
                        "f": {
                            "value": "8",
                            "requestPolicy": {
                                "default": "1",
                                "validRange": {"min": "1", "step": "0"},
                            },
                        },
                        "g": {
                            "value": "500m",
                            "requestPolicy": {
                                "default": "250m",
                                "validRange": {"min": "0", "max": "500m", "step": "250m"},
                            },
                        },
                    },
                )
            ),
            [
                f"{D0}.capacity[a].requestPolicy.validRange.min",
                f"{D0}.capacity[a].requestPolicy.default",
                f"{D0}.capacity[b].requestPolicy.default",
                f"{D0}.capacity[c].requestPolicy.default",
                f"{D0}.capacity[d].requestPolicy.validRange.max",
                f"{D0}.capacity[e].requestPolicy.validRange.max",
                f"{D0}.capacity[f].requestPolicy.validRange.step",
            ],
            id="request policy ranges",
        ),
        pytest.param(
            spec(devices=device(attributes={"kubernetes.io/needs-attaching": {"bool": True}})),
            [],
            id="the KEP-5007 needs-attaching attribute",
        ),
        pytest.param(
            spec(devices=device(attributes={"kubernetes.io/needs-other": {"bool": True}})),
            [f"{D0}.attributes[kubernetes.io/needs-other]"],
            id="other hyphenated names are no C identifiers",
        ),
        # Everything is reported, not just the first problem.
        pytest.param(
            spec(
                driver="Bad",
                nodeName=None,
                devices=[{"name": "x", "includes": ["nope"]}, {"name": "x"}],
            ),
            ["spec.driver", "spec", "spec.devices[0].includes[0]", "spec.devices[1].name"],
            id="several problems",
        ),
    ],
)
def test_resource_slice_validation(spec_: dict[str, Any], expected: list[str]) -> None:
    assert fields(spec_) == expected


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 2}}, []),
        ({"devices": devices(3)}, []),
        ({"driver": "other.example.com"}, ["spec.driver"]),
        (
            {"pool": {"name": "node-2", "generation": 0, "resourceSliceCount": 1}},
            ["spec.pool.name"],
        ),
        ({"nodeName": "node-2"}, ["spec.nodeName"]),
        ({"nodeName": None, "allNodes": True}, ["spec.nodeName"]),
    ],
)
def test_update_keeps_driver_pool_name_and_node_name(
    change: dict[str, Any], expected: list[str]
) -> None:
    assert fields(spec(**change), old=spec()) == expected


# -- limits: the maximum is accepted, one more is rejected --------------------------------


def _attribute_total(total: int) -> dict[str, Any]:
    """``total`` attributes: 128 devices of up to 32, the rest in an unused device mixin."""
    in_devices = min(total, v.MAX_DEVICES * 32)
    devs = [
        {"name": f"dev-{i}", "attributes": attrs(min(32, in_devices - 32 * i))}
        for i in range(v.MAX_DEVICES)
        if in_devices > 32 * i
    ]
    rest = total - in_devices
    mixins = dmixins(1, capacity=caps(rest)) if rest else None
    return spec(devices=devs, mixins=mixins)


def _counter_total(total: int) -> dict[str, Any]:
    """``total`` counters: 32 counter sets of up to 8, the rest in a counter set mixin."""
    in_sets = min(total, 32 * 8)
    sets = [
        {"name": f"set-{i}", "counters": counters(min(8, in_sets - 8 * i))}
        for i in range(32)
        if in_sets > 8 * i
    ]
    rest = total - in_sets
    mixins = {"counterSet": [{"name": "extra", "counters": counters(rest)}]} if rest else None
    return spec(sharedCounters=sets, devices=None, mixins=mixins)


def _consumed_total(total: int) -> dict[str, Any]:
    """``total`` consumed counters: 128 devices consuming 16 each, the rest in a mixin."""
    in_devices = min(total, v.MAX_DEVICES * 16)
    devs = [
        {
            "name": f"dev-{i}",
            "consumesCounters": [consume("s", counters=counters(min(16, in_devices - 16 * i)))],
        }
        for i in range(v.MAX_DEVICES)
        if in_devices > 16 * i
    ]
    rest = total - in_devices
    mixins = (
        {"deviceCounterConsumption": [{"name": "extra", "counters": counters(rest)}]}
        if rest
        else None
    )
    return spec(
        sharedCounters=[{"name": "s", "counters": counters(16)}], devices=devs, mixins=mixins
    )


def _flattened(own: int, from_mixins: int) -> dict[str, Any]:
    """A device with ``own`` attributes and ``from_mixins`` capacities from two mixins (the
    second repeats the first's entries, which count once)."""
    half = from_mixins // 2
    first = caps(half)
    second = {**caps(half), **caps(from_mixins - half, prefix="d")}
    return spec(
        devices=device(attributes=attrs(own), includes=["m0", "m1"]),
        mixins={"device": [{"name": "m0", "capacity": first}, {"name": "m1", "capacity": second}]},
    )


def _sets(count: int) -> list[dict[str, Any]]:
    return [{"name": f"set-{i}", "counters": counters(1)} for i in range(count)]


LIMITS = [
    ("devices", lambda n: spec(devices=devices(n)), 128, "spec.devices"),
    ("attributes and capacities in the slice", _attribute_total, 4096, "spec"),
    ("attributes and capacities of a flattened device", lambda n: _flattened(12, n - 12), 32, D0),
    ("counter sets", lambda n: spec(sharedCounters=_sets(n)), 32, "spec.sharedCounters"),
    ("counters in the slice", _counter_total, 256, "spec"),
    ("consumed counters in the slice", _consumed_total, 2048, "spec"),
    (
        "device mixins",
        lambda n: spec(mixins=dmixins(n)),
        128,
        "spec.mixins.device",
    ),
    (
        "counter set mixins",
        lambda n: spec(
            mixins={"counterSet": [{"name": f"m{i}", "counters": counters(1)} for i in range(n)]}
        ),
        32,
        "spec.mixins.counterSet",
    ),
    (
        "counter consumption mixins",
        lambda n: spec(
            mixins={
                "deviceCounterConsumption": [
                    {"name": f"m{i}", "counters": counters(1)} for i in range(n)
                ]
            }
        ),
        128,
        "spec.mixins.deviceCounterConsumption",
    ),
    (
        "includes of a device",
        lambda n: spec(devices=device(includes=[f"m{i}" for i in range(n)]), mixins=dmixins(n)),
        8,
        f"{D0}.includes",
    ),
    (
        "includes of a counter set",
        lambda n: spec(
            sharedCounters=[{"name": "s", "includes": [f"m{i}" for i in range(n)]}],
            mixins={"counterSet": [{"name": f"m{i}", "counters": counters(1)} for i in range(n)]},
        ),
        8,
        "spec.sharedCounters[0].includes",
    ),
    (
        "includes of a counter consumption",
        lambda n: spec(
            sharedCounters=[{"name": "s", "counters": counters(1)}],
            devices=device(consumesCounters=[consume("s", includes=[f"m{i}" for i in range(n)])]),
            mixins={
                "deviceCounterConsumption": [
                    {"name": f"m{i}", "counters": counters(1)} for i in range(n)
                ]
            },
        ),
        4,
        f"{D0}.consumesCounters[0].includes",
    ),
    (
        "counter consumptions of a device",
        lambda n: spec(
            sharedCounters=_sets(n),
            devices=device(
                consumesCounters=[consume(f"set-{i}", counters=counters(1)) for i in range(n)]
            ),
        ),
        4,
        f"{D0}.consumesCounters",
    ),
    (
        "taints of a device",
        lambda n: spec(devices=device(taints=[taint(key=f"example.com/t{i}") for i in range(n)])),
        4,
        f"{D0}.taints",
    ),
    (
        "binding conditions",
        lambda n: spec(
            devices=device(
                bindingConditions=[f"c{i}" for i in range(n)], bindingFailureConditions=["f"]
            )
        ),
        4,
        f"{D0}.bindingConditions",
    ),
    (
        "binding failure conditions",
        lambda n: spec(
            devices=device(
                bindingConditions=["c"], bindingFailureConditions=[f"f{i}" for i in range(n)]
            )
        ),
        4,
        f"{D0}.bindingFailureConditions",
    ),
    (
        "valid values of a request policy",
        lambda n: spec(
            devices=device(
                allowMultipleAllocations=True,
                capacity={
                    "bw": {
                        "value": "100",
                        "requestPolicy": {
                            "default": "1",
                            "validValues": [str(i + 1) for i in range(n)],
                        },
                    }
                },
            )
        ),
        10,
        f"{D0}.capacity[bw].requestPolicy.validValues",
    ),
]


@pytest.mark.parametrize(
    ("make", "limit", "path"), [pytest.param(m, n, p, id=name) for name, m, n, p in LIMITS]
)
def test_limit_accepts_the_maximum_and_rejects_one_more(make: Any, limit: int, path: str) -> None:
    assert fields(make(limit)) == []
    assert fields(make(limit + 1)) == [path]


def test_limits_are_the_kep_numbers() -> None:
    """The documented choices: the KEP's numbers, including where upstream differs."""
    assert (
        v.MAX_DEVICES,
        v.MAX_ATTRIBUTES_AND_CAPACITIES_PER_SLICE,
        v.MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
        v.MAX_COUNTERS_PER_SLICE,
        v.MAX_CONSUMED_COUNTERS_PER_SLICE,
        v.MAX_COUNTER_SETS,
        v.MAX_DEVICE_MIXINS,
        v.MAX_COUNTER_SET_MIXINS,
        v.MAX_CONSUMPTION_MIXINS,
        v.MAX_INCLUDES,
        v.MAX_CONSUMPTION_INCLUDES,
        v.MAX_TAINTS_PER_DEVICE,
        v.MAX_CONSUMPTIONS_PER_DEVICE,
    ) == (128, 4096, 32, 256, 2048, 32, 128, 32, 128, 8, 4, 4, 4)


def test_devices_with_taints_and_counters_are_not_capped_at_64() -> None:
    """Upstream halves the devices of a slice with taints or consumed counters; the KEP's
    slice-wide limits replace that, so 128 such devices are accepted."""
    devs = devices(
        128,
        taints=[taint()],
        consumesCounters=[consume("s", counters=counters(1))],
    )
    assert fields(spec(sharedCounters=[{"name": "s", "counters": counters(1)}], devices=devs)) == []


# -- error types and messages -------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec_", "error_type"),
    [
        (spec(devices=device(includes=["nope"])), ErrorType.NOT_FOUND),
        (
            spec(
                sharedCounters=SETS,
                devices=device(consumesCounters=[consume(counters={"nope": {"value": "1"}})]),
            ),
            ErrorType.NOT_FOUND,
        ),
        (spec(devices=devices(129)), ErrorType.TOO_MANY),
        (spec(devices=device(taints=[taint()] * 5)), ErrorType.TOO_MANY),
        (_attribute_total(4097), ErrorType.INVALID),
        (spec(mixins={"device": [{"name": "m"}, {"name": "m"}]}), ErrorType.DUPLICATE),
        (spec(nodeName=None), ErrorType.REQUIRED),
        (spec(devices=device(taints=[taint(effect="Sometimes")])), ErrorType.NOT_SUPPORTED),
        (spec(devices=device(nodeName="n")), ErrorType.FORBIDDEN),
    ],
)
def test_error_types(spec_: dict[str, Any], error_type: ErrorType) -> None:
    [err] = errors(spec_)
    assert err.type is error_type


def test_dangling_include_names_the_mixin() -> None:
    [err] = errors(spec(devices=device(includes=["gone"])))
    assert str(err) == (
        'spec.devices[0].includes[0]: Not found: "gone": no device mixin of that name in this'
        " ResourceSlice"
    )


def test_slice_wide_limit_message_says_what_was_counted() -> None:
    [err] = errors(_attribute_total(4097))
    assert err.message() == (
        "Invalid value: 4097: the total number of attributes and capacities across devices and"
        " device mixins must not exceed 4096"
    )


def test_consumption_mixin_error_lists_the_missing_counters() -> None:
    [err] = errors(
        spec(
            sharedCounters=[{"name": "s", "counters": counters(1)}],
            devices=device(consumesCounters=[consume("s", includes=["wide"])]),
            mixins={"deviceCounterConsumption": [{"name": "wide", "counters": counters(3)}]},
        )
    )
    assert err.detail == "the mixin consumes counters that counter set s does not have: c1, c2"


def test_an_oversized_list_is_checked_only_up_to_its_limit() -> None:
    """129 bad device names give the TooMany error and the first 128 name errors."""
    errs = errors(spec(devices=[{"name": f"Bad_{i}"} for i in range(129)]))
    assert errs[0].field == "spec.devices"
    assert [e.field for e in errs[1:]] == [f"spec.devices[{i}].name" for i in range(128)]
