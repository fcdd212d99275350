"""The kubectl commands of KEP-5677's user stories and "kubectl Integration" section, run
verbatim with the real kubectl against ResourcePoolStatusRequest (short name rpsr).

The KEP's controller is played by the test: it writes the status through the status
subresource with ``kubectl patch --subresource=status``, as the controller would.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import orjson
import yaml

from .harness import ServerProcess
from .objects import MERGE_PATCH, RPSR_PATH, LineReader, is_status, kubectl_popen, stop

KEP_STATUS: dict[str, Any] = {
    "observationTime": "2026-02-07T10:30:00Z",
    "pools": [
        {
            "driver": "example.com/gpu",
            "poolName": "node-1",
            "nodeName": "node-1",
            "totalDevices": 4,
            "allocatedDevices": 3,
            "availableDevices": 1,
            "sliceCount": 1,
            "generation": 1,
        },
        {
            "driver": "example.com/gpu",
            "poolName": "node-2",
            "nodeName": "node-2",
            "totalDevices": 4,
            "allocatedDevices": 1,
            "availableDevices": 3,
            "sliceCount": 1,
            "generation": 1,
        },
    ],
    "conditions": [
        {
            "type": "Complete",
            "status": "True",
            "reason": "CalculationComplete",
            "message": "",
            "lastTransitionTime": "2026-02-07T10:30:00Z",
        }
    ],
}


def _stamp() -> int:
    """Stands in for the KEP's ``$(date +%s)``: a number no other test uses."""
    return 1_700_000_000 + uuid.uuid4().int % 100_000_000


def _kep_request(name: str, driver: str = "example.com/gpu") -> str:
    """The manifest of the user stories, as written there."""
    return f"""apiVersion: resource.k8s.io/v1alpha1
kind: ResourcePoolStatusRequest
metadata:
  name: {name}
spec:
  driver: {driver}
"""


def _create(server: ServerProcess, name: str) -> None:
    out = server.kubectl("create", "-f", "-", input=_kep_request(name)).stdout
    assert out.strip() == f"resourcepoolstatusrequest.resource.k8s.io/{name} created"


def _set_status(server: ServerProcess, name: str, status: dict[str, Any] = KEP_STATUS) -> None:
    """What the KEP's controller does: write the answer through the status subresource."""
    out = server.kubectl(
        "patch",
        f"rpsr/{name}",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    ).stdout
    assert out.strip() == f"resourcepoolstatusrequest.resource.k8s.io/{name} patched"


def _get(server: ServerProcess, name: str) -> dict[str, Any]:
    got: dict[str, Any] = yaml.safe_load(server.kubectl("get", f"rpsr/{name}", "-o", "yaml").stdout)
    return got


def _rows(table: str) -> tuple[list[str], dict[str, list[str]]]:
    """The header and the rows by name of ``kubectl get`` output (cells split on 2+ spaces)."""
    lines = table.splitlines()
    starts = [
        i for i, ch in enumerate(lines[0]) if ch != " " and (i == 0 or lines[0][i - 1] == " ")
    ]
    header = lines[0].split()

    def cells(line: str) -> list[str]:
        bounds = [*starts[1:], len(line) + 1]
        return [line[a:b].strip() for a, b in zip(starts, bounds, strict=True)]

    return header, {cells(line)[0]: cells(line) for line in lines[1:]}


def test_story_1_create_wait_get_delete(server: ServerProcess) -> None:
    """Story 1: create with the KEP's manifest, wait for Complete (started before the status
    is set), view the result as YAML, delete it."""
    name = f"check-gpus-{_stamp()}"
    _create(server, name)
    wait = kubectl_popen(
        server, "wait", "--for=condition=Complete", f"rpsr/{name}", "--timeout=30s"
    )
    try:
        _set_status(server, name)
        out, err = wait.communicate(timeout=60)
    finally:
        stop(wait)
    assert wait.returncode == 0, err
    assert out.strip() == f"resourcepoolstatusrequest.resource.k8s.io/{name} condition met"

    got = _get(server, name)
    assert got["apiVersion"] == "resource.k8s.io/v1alpha1"
    assert got["kind"] == "ResourcePoolStatusRequest"
    assert got["metadata"]["name"] == name
    assert got["spec"] == {"driver": "example.com/gpu", "limit": 100}
    assert got["status"] == KEP_STATUS

    out = server.kubectl("delete", f"rpsr/{name}").stdout
    assert out.strip() == f'resourcepoolstatusrequest.resource.k8s.io "{name}" deleted'
    gone = server.kubectl("get", f"rpsr/{name}", check=False)
    assert gone.returncode != 0
    assert "NotFound" in gone.stderr


def test_wait_sees_the_status_written_after_its_watch_started(server: ServerProcess) -> None:
    """kubectl wait, once its watch-list has synced on a request without status, returns
    "condition met" when the status is written later (the live event, not the initial list)."""
    name = f"check-gpus-{_stamp()}"
    _create(server, name)
    wait = kubectl_popen(
        server, "wait", "--for=condition=Complete", f"rpsr/{name}", "--timeout=30s", "-v=6"
    )
    try:
        assert wait.stderr is not None
        log = LineReader(wait.stderr)
        log.wait_for(lambda line: "Caches populated" in line)
        assert wait.poll() is None, "kubectl wait ended before the status was set"
        _set_status(server, name)
        assert wait.stdout is not None
        out = wait.stdout.read()
        assert wait.wait(timeout=60) == 0, log.lines
    finally:
        stop(wait)
    assert out.strip() == f"resourcepoolstatusrequest.resource.k8s.io/{name} condition met"


def test_wait_without_watch_list(server: ServerProcess) -> None:
    """With client-go's WatchListClient feature off (kubectl 1.34 and older behave so), kubectl
    wait lists, then watches from the list's resourceVersion, and still sees the condition."""
    name = f"check-gpus-{_stamp()}"
    _create(server, name)
    wait = kubectl_popen(
        server,
        "wait",
        "--for=condition=Complete",
        f"rpsr/{name}",
        "--timeout=30s",
        "-v=6",
        env={"KUBE_FEATURE_WatchListClient": "false"},
    )
    try:
        assert wait.stderr is not None
        log = LineReader(wait.stderr)
        log.wait_for(lambda line: "Caches populated" in line)
        _set_status(server, name)
        assert wait.stdout is not None
        out = wait.stdout.read()
        assert wait.wait(timeout=60) == 0, log.lines
    finally:
        stop(wait)
    assert out.strip() == f"resourcepoolstatusrequest.resource.k8s.io/{name} condition met"
    requests = [line for line in log.drain() if '"Response" verb="GET"' in line]
    assert not any("sendInitialEvents" in line for line in requests), requests
    assert any("watch=true" in line for line in requests), requests


def test_wait_times_out_without_status(server: ServerProcess) -> None:
    """kubectl wait fails (non-zero, "timed out") while no controller has answered."""
    name = f"check-gpus-{_stamp()}"
    _create(server, name)
    result = server.kubectl(
        "wait", "--for=condition=Complete", f"rpsr/{name}", "--timeout=1s", check=False
    )
    assert result.returncode != 0
    assert "timed out" in result.stderr


def test_story_2_jsonpath_pools(server: ServerProcess) -> None:
    """Story 2: `kubectl get rpsr/debug-check -o jsonpath='{.status.pools[*]}'` prints each pool."""
    name = f"debug-check-{uuid.uuid4().hex[:8]}"
    _create(server, name)
    status = {
        **KEP_STATUS,
        "pools": [
            {**KEP_STATUS["pools"][0], "allocatedDevices": 4, "availableDevices": 0},
            KEP_STATUS["pools"][1],
            {
                **KEP_STATUS["pools"][0],
                "poolName": "node-3",
                "nodeName": "node-3",
                "allocatedDevices": 4,
                "availableDevices": 0,
            },
        ],
    }
    _set_status(server, name, status)
    out = server.kubectl("get", f"rpsr/{name}", "-o", "jsonpath={.status.pools[*]}").stdout
    pools = [json.loads(part) for part in out.split(" ") if part]
    assert [(p["nodeName"], p["availableDevices"]) for p in pools] == [
        ("node-1", 0),
        ("node-2", 3),
        ("node-3", 0),
    ]


def test_story_3_automation(server: ServerProcess) -> None:
    """Story 3: create, wait --timeout=60s, sum availableDevices from jsonpath, delete."""
    request_name = f"monitor-{_stamp()}"
    driver = "example.com/gpu"
    out = server.kubectl("create", "-f", "-", input=_kep_request(request_name, driver)).stdout
    assert f"/{request_name} created" in out
    _set_status(server, request_name)
    waited = server.kubectl(
        "wait", "--for=condition=Complete", f"rpsr/{request_name}", "--timeout=60s"
    )
    assert "condition met" in waited.stdout
    available = server.kubectl(
        "get", f"rpsr/{request_name}", "-o", "jsonpath={.status.pools[*].availableDevices}"
    ).stdout
    assert available == "1 3"
    assert sum(int(n) for n in available.split(" ")) == 4
    server.kubectl("delete", f"rpsr/{request_name}")
    assert server.kubectl("get", f"rpsr/{request_name}", check=False).returncode != 0


def test_kubectl_integration_section(server: ServerProcess, tmp_path: Path) -> None:
    """The "kubectl Integration" commands: create -f request.yaml, wait (default timeout),
    get -o yaml, get rpsr (listing), delete."""
    name = f"my-request-{uuid.uuid4().hex[:8]}"
    request = tmp_path / "request.yaml"
    request.write_text(_kep_request(name))
    assert "created" in server.kubectl("create", "-f", str(request)).stdout
    _set_status(server, name)
    assert (
        "condition met" in server.kubectl("wait", "--for=condition=Complete", f"rpsr/{name}").stdout
    )
    assert _get(server, name)["status"]["conditions"][0]["type"] == "Complete"
    header, rows = _rows(server.kubectl("get", "rpsr").stdout)
    assert header == ["NAME", "DRIVER", "POOL", "COMPLETE", "POOLS", "AGE"]
    assert name in rows
    assert "deleted" in server.kubectl("delete", f"rpsr/{name}").stdout
    _, rows = _rows(server.kubectl("get", "rpsr").stdout)
    assert name not in rows


def test_get_rpsr_table_columns(server: ServerProcess) -> None:
    """`kubectl get rpsr` prints NAME, DRIVER, POOL, COMPLETE, POOLS, AGE; COMPLETE and POOLS
    fill in once the status is written; -o wide adds TRUNCATED."""
    pending = f"check-gpus-{_stamp()}"
    done = f"check-gpus-{_stamp()}"
    _create(server, pending)
    server.kubectl(
        "create",
        "-f",
        "-",
        input=_kep_request(done) + "  poolName: node-1\n",
    )
    _set_status(server, done, {**KEP_STATUS, "pools": KEP_STATUS["pools"][:1]})
    header, rows = _rows(server.kubectl("get", "rpsr").stdout)
    assert header == ["NAME", "DRIVER", "POOL", "COMPLETE", "POOLS", "AGE"]
    assert rows[pending][:5] == [pending, "example.com/gpu", "", "", ""]
    assert rows[done][:5] == [done, "example.com/gpu", "node-1", "True", "1"]
    assert rows[done][5].endswith(("s", "m"))
    header, rows = _rows(server.kubectl("get", "rpsr", "-o", "wide").stdout)
    assert header == ["NAME", "DRIVER", "POOL", "COMPLETE", "POOLS", "TRUNCATED", "AGE"]
    header, rows = _rows(server.kubectl("get", "rpsr", done, pending).stdout)
    assert sorted(rows) == sorted([done, pending])


def test_spec_is_immutable(server: ServerProcess) -> None:
    """A spec change is rejected with 422 "field is immutable" (kubectl and raw HTTP alike) and
    the stored object is unchanged."""
    name = f"check-gpus-{_stamp()}"
    _create(server, name)
    before = _get(server, name)
    result = server.kubectl(
        "patch",
        f"rpsr/{name}",
        "--type=merge",
        "-p",
        '{"spec":{"driver":"example.com/other"}}',
        check=False,
    )
    assert result.returncode != 0
    assert "field is immutable" in result.stderr
    with server.client() as client:
        response = client.patch(
            f"{RPSR_PATH}/{name}",
            content=orjson.dumps({"spec": {"limit": 5}}),
            headers={"Content-Type": MERGE_PATCH},
        )
        replaced = client.put(
            f"{RPSR_PATH}/{name}",
            json={**before, "spec": {**before["spec"], "poolName": "node-9"}},
        )
    for answer in (response, replaced):
        assert answer.status_code == 422
        body = answer.json()
        assert is_status(body, 422)
        assert body["reason"] == "Invalid"
        assert "field is immutable" in body["message"]
        assert [c["field"] for c in body["details"]["causes"]] == ["spec"]
    after = _get(server, name)
    assert after == before


def test_metadata_stays_mutable(server: ServerProcess) -> None:
    """Labels can still change on a request whose spec is fixed; generation stays 1."""
    name = f"check-gpus-{_stamp()}"
    _create(server, name)
    server.kubectl("label", f"rpsr/{name}", "team=ml")
    got = _get(server, name)
    assert got["metadata"]["labels"] == {"team": "ml"}
    assert got["metadata"]["generation"] == 1


def test_limit_defaults_to_100(server: ServerProcess) -> None:
    """spec.limit defaults to 100; an explicit limit is kept; out of range is rejected."""
    default = f"check-gpus-{_stamp()}"
    explicit = f"check-gpus-{_stamp()}"
    _create(server, default)
    server.kubectl("create", "-f", "-", input=_kep_request(explicit) + "  limit: 5\n")
    assert _get(server, default)["spec"]["limit"] == 100
    assert _get(server, explicit)["spec"]["limit"] == 5
    too_many = f"check-gpus-{_stamp()}"
    result = server.kubectl(
        "create", "-f", "-", input=_kep_request(too_many) + "  limit: 1001\n", check=False
    )
    assert result.returncode != 0
    assert "spec.limit" in result.stderr
    assert server.kubectl("get", f"rpsr/{too_many}", check=False).returncode != 0
