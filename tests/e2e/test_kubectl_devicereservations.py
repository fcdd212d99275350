"""kubectl and DeviceReservations: the server makes them, users see and release them.

Reservations come from the reservation service (the reserving review calls it); here an
in-process service on the same etcd as the server process makes them, as another replica
would, and kubectl reads and deletes them through the server.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from apiserver.kinds.devicereservation import DeviceReservationStrategy
from apiserver.kinds.resourceclaim import ResourceClaimStrategy
from apiserver.machinery import Registry, errors
from apiserver.reservations import ClaimRef, ReservationService
from apiserver.sources import StoreSource
from apiserver.storage.etcd import EtcdConfig, EtcdStore
from devtools.localetcd import LocalEtcd

from .harness import ServerProcess, start_server

GROUP = "resource.k8s.io"
DEVICES = [("gpu.example.com", "node-1", f"gpu-{i}") for i in range(3)]
_prefixes = itertools.count()


@pytest.fixture
def prefix() -> str:
    return f"/e2e-reservations-{next(_prefixes)}"


@pytest.fixture
def etcd_server(tmp_path: Path, etcd: LocalEtcd, prefix: str) -> Iterator[ServerProcess]:
    proc = start_server(tmp_path / "server", ["--etcd-prefix", prefix], storage=etcd.url)
    yield proc
    proc.stop()


@pytest.fixture
async def service(etcd: LocalEtcd, prefix: str) -> AsyncIterator[ReservationService]:
    store = EtcdStore(EtcdConfig.from_url(etcd.url, prefix=prefix, compaction_interval=0))
    await store.start()
    registry = Registry(DeviceReservationStrategy.for_group(GROUP), store)
    claims = StoreSource(
        store, ResourceClaimStrategy.upstream().resource.key_prefix(), name="resourceclaims"
    )
    reservations = ReservationService(registry, claims)
    await claims.start()
    await reservations.start()
    try:
        yield reservations
    finally:
        await reservations.close()
        await claims.close()
        await store.close()


async def kubectl(
    server: ServerProcess, *args: str, check: bool = True, input: str | None = None
) -> tuple[int, str]:
    result = await asyncio.to_thread(server.kubectl, *args, check=check, input=input)
    return result.returncode, result.stdout + result.stderr


async def test_kubectl_shows_a_reservation_and_delete_releases_it(
    etcd_server: ServerProcess, service: ReservationService
) -> None:
    reservation = await service.reserve("node-1", DEVICES, [ClaimRef("default", "train")], 300)
    name = str(reservation.metadata.name)

    _, out = await kubectl(etcd_server, "get", "devicereservations")
    header, row = out.strip().splitlines()
    assert re.split(r"\s{2,}", header) == ["NAME", "NODE", "DEVICES", "EXPIRES", "AGE"]
    cells = re.split(r"\s{2,}", row)
    assert cells[:3] == [name, "node-1", "gpu.example.com/node-1/gpu-0,+2 more"]
    assert re.fullmatch(r"4m\d+s|5m", cells[3]), cells[3]  # five minutes, counting down

    _, out = await kubectl(etcd_server, "get", "devicereservation", name, "-o", "json")
    stored = json.loads(out)
    assert stored["spec"]["claims"] == [{"namespace": "default", "name": "train"}]
    assert [d["device"] for d in stored["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2"]

    _, out = await kubectl(etcd_server, "explain", "devicereservation.spec.expirationTime")
    assert "When the reservation lapses" in out

    # Users cannot make or change one: only the server does.
    manifest = {**stored, "metadata": {"name": "mine"}}
    code, out = await kubectl(
        etcd_server,
        "create",
        "-f",
        "-",
        input=json.dumps(manifest),
        check=False,
    )
    assert code != 0
    assert "MethodNotAllowed" in out
    code, out = await kubectl(
        etcd_server, "label", "devicereservation", name, "team=a", check=False
    )
    assert code != 0
    assert "MethodNotAllowed" in out

    # While it exists, the devices cannot be reserved again.
    with pytest.raises(errors.StatusError) as info:
        await service.reserve("node-1", DEVICES[2:], [ClaimRef("default", "other")], 300)
    assert info.value.code == 409

    _, out = await kubectl(etcd_server, "delete", "devicereservation", name)
    assert f'devicereservation.resource.k8s.io "{name}" deleted' in out
    _, out = await kubectl(etcd_server, "get", "devicereservations")
    assert "No resources found" in out
    again = await service.reserve("node-1", DEVICES[2:], [ClaimRef("default", "other")], 300)
    assert again.metadata.name != name
