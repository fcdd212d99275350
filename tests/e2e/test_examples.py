"""The demo cluster in examples/ loads with `kubectl apply -f examples/` and prints usefully."""

from __future__ import annotations

import orjson

from apiserver.api.resource import flatten_slice

from .harness import REPO, ServerProcess

EXAMPLES = REPO / "examples"


def _versions(server: ServerProcess) -> dict[str, str]:
    kinds = (
        "nodes,resourceslices,deviceclasses,resourceclaims,resourceclaimtemplates,"
        "resourceslicepatches"
    )
    items = orjson.loads(server.kubectl("get", kinds, "-A", "-o", "json").stdout)["items"]
    return {f"{i['kind']}/{i['metadata']['name']}": i["metadata"]["resourceVersion"] for i in items}


def test_apply_examples_and_list_them(fresh_server: ServerProcess) -> None:
    """Everything in examples/ is created; `kubectl get` shows each kind with its columns;
    applying again changes nothing."""
    out = fresh_server.kubectl("apply", "-f", str(EXAMPLES)).stdout
    created = [line for line in out.splitlines() if line.endswith(" created")]
    manifests = sum(
        p.read_text().count("\nkind: ") + p.read_text().startswith("kind: ")
        for p in EXAMPLES.glob("*.yaml")
    )
    assert len(created) == manifests == 19

    listing = fresh_server.kubectl(
        "get", "resourceslices,deviceclasses,resourceclaims", "-A"
    ).stdout
    sections = [s.strip().splitlines() for s in listing.strip().split("\n\n")]
    slices, classes, claims = sections
    assert slices[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert len(slices) == 1 + 6
    fabric = next(line.split() for line in slices if "fabric-pool" in line)
    assert fabric[1:3] == ["fabric.example.com", "fabric-pool"]  # no node: usable from all
    node_3 = next(line.split() for line in slices if "node-3-gpu" in line)
    assert node_3[1:4] == ["node-3", "gpu.example.com", "node-3"]
    assert classes[0].split() == ["NAME", "AGE"]
    assert len(classes) == 1 + 2
    assert claims[0].split() == ["NAMESPACE", "NAME", "STATE", "AGE"]
    assert {line.split()[2] for line in claims[1:]} == {"pending"}
    assert len(claims) == 1 + 4

    nodes = fresh_server.kubectl("get", "nodes").stdout.splitlines()
    assert nodes[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [line.split()[:2] for line in nodes[1:]] == [[f"node-{i}", "Ready"] for i in range(1, 6)]
    slice_nodes = {line.split()[1] for line in slices[1:] if line.split()[1].startswith("node-")}
    assert slice_nodes == {f"node-{i}" for i in range(1, 6)}  # every slice's node exists
    reachable = fresh_server.kubectl(
        "get", "nodes", "-l", "fabric.example.com/reachable=true", "-o", "name"
    ).stdout.split()
    assert len(reachable) == 5

    before = _versions(fresh_server)
    fresh_server.kubectl("apply", "-f", str(EXAMPLES))
    assert _versions(fresh_server) == before


def test_examples_mixin_slice_is_stored_as_written_and_flattens(
    fresh_server: ServerProcess,
) -> None:
    """The partitioned slice is stored as written, with its mixins, and flattens to six devices
    with the shared attributes; the fabric devices carry the KEP-5007 needs-attaching attribute."""
    fresh_server.kubectl("apply", "-f", str(EXAMPLES))
    stored = orjson.loads(
        fresh_server.kubectl("get", "resourceslice", "node-5-gpu.example.com", "-o", "json").stdout
    )
    assert [m["name"] for m in stored["spec"]["mixins"]["device"]] == ["h100", "half"]
    flat = flatten_slice(stored["spec"])["devices"]
    assert [d["attributes"]["model"] for d in flat] == [{"string": "h100"}] * 6
    assert [d["capacity"]["memory"]["value"] for d in flat] == ["80Gi", "40Gi", "40Gi"] * 2
    fabric = orjson.loads(
        fresh_server.kubectl(
            "get", "resourceslice", "fabric-pool-fabric.example.com", "-o", "json"
        ).stdout
    )
    assert all(
        d["attributes"]["kubernetes.io/needs-attaching"] == {"bool": True}
        for d in fabric["spec"]["devices"]
    )
