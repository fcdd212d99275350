"""``--gc-young-threshold`` reaches the process's collector, and /metrics shows its work:
the server and the shim each started with a threshold of 100 collect the young generation
many times more often over the same requests than at their default (20,000), counted by
the ``python_gc_collections_total`` each /metrics serves."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from devtools.metrics import gc_collections

from .harness import ServerProcess, start_server, start_shim
from .objects import unique

LOW = ["--gc-young-threshold", "100"]
REQUESTS = 200


@pytest.fixture(scope="module")
def low_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server(tmp_path_factory.mktemp("low-threshold"), LOW)
    yield proc
    proc.stop()


def _collections(client: httpx.Client) -> dict[str, float]:
    """``python_gc_collections_total`` per generation, from /metrics."""
    response = client.get("/metrics")
    assert response.status_code == 200
    return gc_collections(response.text)


def _young_collections_over(client: httpx.Client, requests: Callable[[], None]) -> float:
    before = _collections(client)
    assert set(before) == {"0", "1", "2"}
    requests()
    return _collections(client)["0"] - before["0"]


def _events(client: httpx.Client) -> Callable[[], None]:
    """``REQUESTS`` Events created, each kept by the server's caches."""

    def create() -> None:
        for _ in range(REQUESTS):
            name = unique("gc-event")
            event = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": name, "namespace": "default"},
                "reason": "Collected",
                "message": "counted",
                "type": "Normal",
            }
            assert client.post("/api/v1/namespaces/default/events", json=event).status_code == 201

    return create


def test_the_servers_threshold_decides_how_often_it_collects(
    server: ServerProcess, low_server: ServerProcess
) -> None:
    with server.client() as default, low_server.client() as low:
        at_default = _young_collections_over(default, _events(default))
        at_low = _young_collections_over(low, _events(low))
    # Most of what a write makes is freed at once; what it keeps (the event in the caches)
    # adds up to a collection every few writes at 100, and to none at 20,000.
    assert at_low >= REQUESTS / 10
    assert at_low > 4 * at_default


def _scrapes(client: httpx.Client) -> Callable[[], None]:
    """``REQUESTS`` scrapes of /metrics, each a few hundred objects made and dropped."""

    def scrape() -> None:
        for _ in range(REQUESTS):
            assert client.get("/metrics").status_code == 200

    return scrape


def test_the_shims_threshold_decides_how_often_it_collects(
    server: ServerProcess, tmp_path: Path
) -> None:
    default = start_shim(server, tmp_path / "default")
    low = start_shim(server, tmp_path / "low", LOW)
    try:
        with default.client() as client:
            at_default = _young_collections_over(client, _scrapes(client))
        with low.client() as client:
            at_low = _young_collections_over(client, _scrapes(client))
    finally:
        low.stop()
        default.stop()
    assert at_low >= REQUESTS / 10
    assert at_low > 4 * at_default
