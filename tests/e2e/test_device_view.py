"""The computed device view against the real server, driven with kubectl: the KEP-5027
test-plan scenario (a patch changes an attribute and only the patched devices match a
selector on it; deleting the patch brings back the driver's data), PATCHED-BY, field
selectors, watch, read-only verbs, and faulty selectors reported on the patch."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from apiserver.api.resource import flatten_slice
from apiserver.cel import EvaluationError, compile_selector, device_value, evaluate
from devtools.waiting import wait_for

from .harness import REPO, ServerProcess, start_server
from .objects import GROUP, TABLE, assert_read_only, unique

DEVICES = f"/apis/{GROUP}/v1alpha3/devices"
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server of this module's own, with the patch status controller on."""
    proc = start_server(
        tmp_path_factory.mktemp("device-view"),
        ["--bookmark-interval", "1", "--patch-status", "--patch-status-interval", "0.2"],
    )
    yield proc
    proc.stop()


def apply(server: ServerProcess, *objects: dict[str, Any]) -> None:
    server.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(o) for o in objects))


def gpu_slice(driver: str, node: str, models: list[str]) -> dict[str, Any]:
    """A node's GPUs; the model comes from a mixin (KEP-5234), the index is the device's."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {
            "driver": driver,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "mixins": {
                "device": [
                    {"name": m, "attributes": {"model": {"string": m}}} for m in sorted(set(models))
                ]
            },
            "devices": [
                {"name": f"gpu-{i}", "includes": [m], "attributes": {"index": {"int": i}}}
                for i, m in enumerate(models)
            ],
        },
    }


def patch(name: str, **devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "ResourceSlicePatch",
        "metadata": {"name": name},
        "spec": {"devices": devices},
    }


def devices_of(client: httpx.Client, driver: str) -> dict[str, dict[str, Any]]:
    resp = client.get(DEVICES, params={"fieldSelector": f"spec.driver={driver}"})
    assert resp.status_code == 200, resp.text
    return {d["metadata"]["name"]: d for d in resp.json()["items"]}


def cel_matches(expression: str, objects: dict[str, dict[str, Any]]) -> set[str]:
    """Evaluate a device selector in-process over the devices the server returned."""
    program = compile_selector(expression)
    matched = set()
    for name, obj in objects.items():
        try:
            if evaluate(program, device_value(obj["spec"]["driver"], obj["spec"])):
                matched.add(name)
        except EvaluationError:
            pass
    return matched


def test_a_patch_changes_what_a_selector_matches_until_it_is_deleted(
    server: ServerProcess,
) -> None:
    """The KEP's e2e scenario: a patch gives some devices a new attribute value; only those
    devices match a selector on it; without the patch the view is the driver's data again."""
    driver = f"{unique('gpu')}.example.com"
    slices = [
        gpu_slice(driver, "node-a", ["a100", "a100", "h100"]),
        gpu_slice(driver, "node-b", ["a100", "h100"]),
    ]
    apply(server, *slices)
    with server.client() as client:
        driver_data = wait_for(
            lambda: len(devices_of(client, driver)) == 5 and devices_of(client, driver), "5 devices"
        )
        selector = f'device.attributes["{driver}"].model == "a100-maintenance"'
        assert cel_matches(selector, driver_data) == set()

        name = unique("maint")
        apply(
            server,
            patch(
                name,
                priority=10,
                filter={
                    "driver": driver,
                    "selectors": [
                        {"cel": {"expression": f'device.attributes["{driver}"].model == "a100"'}}
                    ],
                },
                attributes={f"{driver}/model": {"string": "a100-maintenance"}},
            ),
        )
        patched = {f"node-a-{driver}.gpu-0", f"node-a-{driver}.gpu-1", f"node-b-{driver}.gpu-0"}

        def view_patched() -> dict[str, dict[str, Any]] | None:
            now = devices_of(client, driver)
            return now if cel_matches(selector, now) == patched else None

        now = wait_for(view_patched, "the patched view")
        with_value = {
            n
            for n, d in now.items()
            if d["spec"]["attributes"]["model"] == {"string": "a100-maintenance"}
        }
        assert with_value == patched
        for n in patched:
            assert now[n]["status"]["patchedBy"] == [
                {"name": name, "priority": 10, "attributes": [f"{driver}/model"]}
            ]
        table = server.kubectl("get", "devices", "--field-selector", f"spec.driver={driver}").stdout
        rows = {line.split()[0]: line.split() for line in table.splitlines()[1:]}
        assert table.splitlines()[0].split() == [
            "NAME",
            "DRIVER",
            "POOL",
            "NODE",
            "DEVICE",
            "PATCHED-BY",
            "AGE",
        ]
        for n in patched:
            assert rows[n][5] == name
        assert rows[f"node-a-{driver}.gpu-2"][5] != name

        server.kubectl("delete", "rsp", name)

        def back_to_driver() -> bool:
            current = devices_of(client, driver)
            return all("status" not in d for d in current.values()) and len(current) == 5

        wait_for(back_to_driver, "the driver's data")
        current = devices_of(client, driver)
        assert cel_matches(selector, current) == set()
        for obj in slices:
            for flat in flatten_slice(obj["spec"])["devices"]:
                shown = current[f"{obj['metadata']['name']}.{flat['name']}"]["spec"]
                assert shown["attributes"] == flat["attributes"]


def test_kubectl_get_wide_and_field_selectors(server: ServerProcess) -> None:
    driver = f"{unique('wide')}.example.com"
    apply(
        server, gpu_slice(driver, "node-w", ["a100", "h100"]), gpu_slice(driver, "node-x", ["a100"])
    )
    with server.client() as client:
        wait_for(lambda: len(devices_of(client, driver)) == 3, "3 devices")
    out = server.kubectl(
        "get",
        "devices",
        "-o",
        "wide",
        "--field-selector",
        f"spec.driver={driver},spec.pool.name=node-w",
    ).stdout
    lines = out.splitlines()
    assert lines[0].split() == [
        "NAME",
        "DRIVER",
        "POOL",
        "NODE",
        "DEVICE",
        "PATCHED-BY",
        "ATTRIBUTES",
        "CAPACITY",
        "TAINTS",
        "SLICE",
        "AGE",
    ]
    rows = [line.split() for line in lines[1:]]
    assert [r[0] for r in rows] == [f"node-w-{driver}.gpu-0", f"node-w-{driver}.gpu-1"]
    assert rows[0][1:5] == [driver, "node-w", "node-w", "gpu-0"]
    assert "index=0,model=a100" in lines[1]
    by_node = server.kubectl(
        "get",
        "devices",
        "-o",
        "name",
        "--field-selector",
        f"spec.driver={driver},spec.nodeName=node-x",
    ).stdout.split()
    assert by_node == [f"device.resource.k8s.io/node-x-{driver}.gpu-0"]


def test_devices_are_read_only(server: ServerProcess) -> None:
    writes = (
        ("POST", DEVICES),
        ("PUT", f"{DEVICES}/x"),
        ("PATCH", f"{DEVICES}/x"),
        ("DELETE", DEVICES),
    )
    assert_read_only(server, GROUP, "devices", writes)


def test_a_watch_sees_a_patch_arrive(server: ServerProcess) -> None:
    driver = f"{unique('watch')}.example.com"
    apply(server, gpu_slice(driver, "node-v", ["a100"]))
    with server.client() as client:
        wait_for(lambda: len(devices_of(client, driver)) == 1, "the device")
        listed = client.get(DEVICES, params={"fieldSelector": f"spec.driver={driver}"}).json()
        version = listed["metadata"]["resourceVersion"]
        name = unique("watched")
        params = {
            "watch": "1",
            "resourceVersion": version,
            "fieldSelector": f"spec.driver={driver}",
            "timeoutSeconds": "20",
        }
        with client.stream("GET", DEVICES, params=params) as stream:
            apply(
                server,
                patch(
                    name, filter={"driver": driver}, attributes={f"{driver}/fresh": {"bool": True}}
                ),
            )
            for line in stream.iter_lines():
                event = json.loads(line)
                assert event["type"] == "MODIFIED", event
                assert event["object"]["status"]["patchedBy"][0]["name"] == name
                assert int(event["object"]["metadata"]["resourceVersion"]) > int(version)
                break
        table = client.get(
            DEVICES, params={"fieldSelector": f"spec.driver={driver}"}, headers={"Accept": TABLE}
        ).json()
        assert table["kind"] == "Table"
        assert [c["name"] for c in table["columnDefinitions"]][5] == "Patched-By"


def test_a_faulty_selector_is_reported_on_the_patch(server: ServerProcess) -> None:
    """One device lacks the attribute the selector reads: the patch skips it, the patch's
    status says so (condition and matched count) and kubectl describe shows the Event."""
    driver = f"{unique('faulty')}.example.com"
    broken = gpu_slice(driver, "node-f", ["a100", "a100"])
    del broken["spec"]["devices"][1]["includes"]  # gpu-1 has no model
    apply(server, broken)
    name = unique("faulty")
    apply(
        server,
        patch(
            name,
            filter={
                "driver": driver,
                "selectors": [
                    {"cel": {"expression": f'device.attributes["{driver}"].model == "a100"'}}
                ],
            },
            attributes={f"{driver}/checked": {"bool": True}},
        ),
    )

    def status() -> dict[str, Any] | None:
        got = json.loads(server.kubectl("get", "rsp", name, "-o", "json").stdout)
        return got.get("status") if got.get("status", {}).get("conditions") else None

    written = wait_for(status, "the patch status")
    assert written["matchedDevices"] == 1
    assert written["observedGeneration"] == 1
    [condition] = written["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "SelectorsValid",
        "False",
        "FaultySelector",
    )
    assert f"{driver}/node-f/gpu-1" in condition["message"]

    def described() -> str | None:
        out = server.kubectl("describe", "rsp", name).stdout
        events = out.split("Events:", 1)[1]
        return events if "FaultySelector" in events else None

    events = wait_for(described, "the Event")
    assert "Warning" in events
    assert "no such key: model" in events
    with server.client() as client:
        skipped = client.get(f"{DEVICES}/node-f-{driver}.gpu-1").json()
        assert skipped["status"]["selectorErrors"][0]["patch"] == name
        listed = client.get(
            "/api/v1/namespaces/default/events",
            params={"fieldSelector": f"involvedObject.name={name}"},
        ).json()
        assert len(listed["items"]) == 1


def test_readyz_waits_for_the_device_view(server: ServerProcess) -> None:
    with server.client() as client:
        verbose = client.get("/readyz", params={"verbose": "1"}).text
    for check in (
        "informer-resourceslices",
        "informer-deviceclasses",
        "informer-resourceslicepatches",
        "informer-devicetaintrules",
        "device-view",
    ):
        assert f"[+]{check} ok" in verbose


def test_a_server_without_the_status_controller_leaves_status_alone(tmp_path: Path) -> None:
    proc = start_server(tmp_path / "quiet")
    try:
        name = unique("quiet")
        driver = f"{unique('quiet')}.example.com"
        apply(
            proc,
            gpu_slice(driver, "node-q", ["a100"]),
            patch(name, attributes={"example.com/x": {"bool": True}}),
        )

        def applied() -> bool:
            [device] = devices_of(client, driver).values() or [{}]
            return [p["name"] for p in device.get("status", {}).get("patchedBy", [])] == [name]

        # The view has matched the patch: with the controller on, its status follows.
        with proc.client() as client:
            wait_for(applied, "the patch on the device")
        got = json.loads(proc.kubectl("get", "rsp", name, "-o", "json").stdout)
        assert "status" not in got
    finally:
        proc.stop()


def test_the_readme_walk_through_on_the_examples(server: ServerProcess) -> None:
    """`kubectl apply -f examples/`, then the README's commands: the patched GPU names its
    patch, the others on that node do not."""
    server.kubectl("apply", "-f", str(EXAMPLES))
    name = "node-4-gpu.example.com.gpu-3"

    def patched() -> dict[str, Any] | None:
        got = server.kubectl("get", "device", name, "-o", "json", check=False)
        if got.returncode != 0:
            return None
        obj: dict[str, Any] = json.loads(got.stdout)
        return obj if obj.get("status", {}).get("patchedBy") else None

    device = wait_for(patched, "the patched example device")
    assert device["status"]["patchedBy"][0]["name"] == "node-4-gpu-3-unhealthy"
    assert device["spec"]["attributes"]["healthy"] == {"bool": False}
    wide = server.kubectl(
        "get",
        "devices",
        "-o",
        "wide",
        "--field-selector",
        "spec.driver=gpu.example.com,spec.pool.name=node-4",
    ).stdout
    rows = {line.split()[0]: line for line in wide.splitlines()[1:]}
    assert "node-4-gpu-3-unhealthy" in rows[name]
    assert "node-4-gpu-3-unhealthy" not in rows["node-4-gpu.example.com.gpu-0"]

    def described() -> str | None:
        out = server.kubectl("describe", "rsp", "node-4-gpu-3-unhealthy").stdout
        return out if re.search(r"Matched Devices:\s+1\n", out) else None

    text = wait_for(described, "the example patch's status")
    assert "SelectorsValid" in text
