"""What a DeviceReservation holds counts as allocated everywhere the server counts devices:
``kubectl get resourcepools`` (the computed ResourcePool kind) and a new
ResourcePoolStatusRequest show the held devices allocated until the reservation goes. And a
per-user cap on held reservations (``--max-reservations-per-user``): a reserving review
over it gets 429 TooManyRequests and holds nothing, also when the user's reviews come all at
once; another user, and the same user's non-reserving reviews, are not affected."""

from __future__ import annotations

import concurrent.futures
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devtools.waiting import wait_for

from .harness import ServerProcess, start_server
from .objects import is_status, node_pool_docs, unique

GROUP = "resource.k8s.io"
REVIEWS = f"/apis/{GROUP}/v1alpha3/allocationreviews"
RESERVATIONS = f"/apis/{GROUP}/v1alpha3/devicereservations"
DRIVER = "hold.example.com"
CAP = 2


@pytest.fixture(scope="module")
def tokens() -> dict[str, str]:
    return {user: secrets.token_urlsafe(16) for user in ("admin", "alice", "bob")}


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, tokens: dict[str, str]
) -> Iterator[ServerProcess]:
    workdir: Path = tmp_path_factory.mktemp("holds")
    token_file = workdir / "tokens.csv"
    token_file.write_text(
        "".join(f'{token},{user},{user}-uid,"system:masters"\n' for user, token in tokens.items())
    )
    args = [
        "--token-auth-file",
        str(token_file),
        "--pool-status",
        "--max-reservations-per-user",
        str(CAP),
    ]
    proc = start_server(workdir, args)
    yield proc
    proc.stop()


def _setup(server: ServerProcess, devices: int) -> tuple[str, str]:
    """A node with a pool of ``devices`` of the driver; (node, pool)."""
    node, pool = unique("hold-node"), unique("hold-pool")
    docs = node_pool_docs(DRIVER, node, pool, devices)
    server.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    return node, pool


def _review(node: str, count: int = 1, reserve: bool = True) -> dict[str, Any]:
    request = {"name": "r", "exactly": {"deviceClassName": DRIVER, "count": count}}
    return {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "AllocationReview",
        "spec": {
            "claims": [{"name": "c", "spec": {"devices": {"requests": [request]}}}],
            "nodeNames": [node],
            "reserve": reserve,
            "reservationSeconds": 300,
        },
    }


def _post(server: ServerProcess, token: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    with server.client() as client:
        client.headers["Authorization"] = f"Bearer {token}"
        answer = client.post(REVIEWS, json=body)
    found: dict[str, Any] = answer.json()
    return answer.status_code, found


def _reserve(server: ServerProcess, token: str, node: str) -> dict[str, Any]:
    """A reserving review that must hold its device: its status."""
    code, answer = _post(server, token, _review(node))
    assert code == 201, answer
    assert "reservation" in answer["status"], answer
    status: dict[str, Any] = answer["status"]
    return status


def _reservations(server: ServerProcess, pool: str) -> list[dict[str, Any]]:
    with server.client() as client:
        items = client.get(RESERVATIONS).json()["items"]
    return [r for r in items if any(d["pool"] == pool for d in r["spec"]["devices"])]


def _pool_row(server: ServerProcess, pool: str) -> dict[str, str]:
    """The pool's row of ``kubectl get resourcepools``, by column."""
    lines = server.kubectl("get", "resourcepools").stdout.splitlines()
    header = lines[0].split()
    rows = [dict(zip(header, line.split(), strict=False)) for line in lines[1:]]
    [row] = [r for r in rows if r.get("POOL") == pool]
    return row


def _status_request(server: ServerProcess, pool: str) -> dict[str, Any]:
    """A new ResourcePoolStatusRequest for the pool, once answered: the pool's entry."""
    name = unique("holds")
    body = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": DRIVER, "poolName": pool},
    }
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(body))
    server.kubectl("wait", "--for=condition=Complete", f"rpsr/{name}", "--timeout=30s")
    got = yaml.safe_load(server.kubectl("get", f"rpsr/{name}", "-o", "yaml").stdout)
    [entry] = got["status"]["pools"]
    found: dict[str, Any] = entry
    return found


def test_held_devices_count_as_allocated_in_pools_and_pool_status(
    server: ServerProcess, tokens: dict[str, str]
) -> None:
    node, pool = _setup(server, 4)
    wait_for(lambda: _pool_row(server, pool)["TOTAL"] == "4", "the pool in kubectl get")
    assert _pool_row(server, pool)["ALLOCATED"] == "0"

    code, answer = _post(server, tokens["admin"], _review(node, count=2))
    assert code == 201, answer
    name = answer["status"]["reservation"]["name"]
    assert len(answer["status"]["nodes"][0]["allocations"][0]["devices"]["results"]) == 2

    wait_for(lambda: _pool_row(server, pool)["ALLOCATED"] == "2", "two held in kubectl get")
    entry = _status_request(server, pool)
    assert (entry["totalDevices"], entry["allocatedDevices"], entry["availableDevices"]) == (
        4,
        2,
        2,
    )

    server.kubectl("delete", "devicereservation", name)
    wait_for(lambda: _pool_row(server, pool)["ALLOCATED"] == "0", "released in kubectl get")
    entry = _status_request(server, pool)
    assert (entry["allocatedDevices"], entry["availableDevices"]) == (0, 4)


def test_a_user_over_the_cap_gets_429_and_holds_nothing(
    server: ServerProcess, tokens: dict[str, str]
) -> None:
    node, pool = _setup(server, 8)
    alice, bob = tokens["alice"], tokens["bob"]
    for _ in range(CAP):
        _reserve(server, alice, node)
    code, refused = _post(server, alice, _review(node))
    assert code == 429
    assert is_status(refused, 429)
    assert refused["reason"] == "TooManyRequests"
    held = _reservations(server, pool)
    assert len(held) == CAP
    assert {r["spec"]["username"] for r in held} == {"alice"}

    # Not reserving, or another user: not capped.
    code, plain = _post(server, alice, _review(node, reserve=False))
    assert code == 201
    assert plain["status"]["nodes"][0]["feasible"] is True
    assert "reservation" not in plain["status"]
    _reserve(server, bob, node)

    # One of alice's released: she may hold one more.
    server.kubectl("delete", "devicereservation", held[0]["metadata"]["name"])
    _reserve(server, alice, node)
    server.kubectl("delete", "devicereservations", "--all")


def test_the_cap_holds_for_reviews_that_come_at_once(
    server: ServerProcess, tokens: dict[str, str]
) -> None:
    node, pool = _setup(server, 10)
    server.kubectl("delete", "devicereservations", "--all")

    def ask(_: int) -> tuple[int, dict[str, Any]]:
        return _post(server, tokens["alice"], _review(node))

    with concurrent.futures.ThreadPoolExecutor(10) as threads:
        answers = list(threads.map(ask, range(10)))
    codes = sorted(code for code, _ in answers)
    assert codes == [201] * CAP + [429] * (10 - CAP), answers
    assert all("reservation" in a["status"] for code, a in answers if code == 201)
    assert len(_reservations(server, pool)) == CAP
    server.kubectl("delete", "devicereservations", "--all")
