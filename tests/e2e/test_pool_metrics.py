"""Pool availability on /metrics of a real server over the example cluster: every pool's
gauges equal what a ResourcePoolStatusRequest answers for it, the per-driver totals are
their sums, a reserving AllocationReview shows as held devices (within allocated, as pool
status counts them) and as one more observation of the review latency, and ``--metrics-max-pools`` leaves only the per-driver totals."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from devtools.waiting import wait_for

from .harness import REPO, ServerProcess, start_server
from .test_kubectl_pool_status import allocate

EXAMPLES = REPO / "examples"
DRIVERS = ("gpu.example.com", "fabric.example.com")
COUNTS = {
    "devices": "totalDevices",
    "allocated_devices": "allocatedDevices",
    "available_devices": "availableDevices",
    "unavailable_devices": "unavailableDevices",
}
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(server: ServerProcess) -> Samples:
    with server.client() as client:
        text = client.get("/metrics").text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def by_pool(samples: Samples, name: str) -> dict[tuple[str, str, str], float]:
    out = {}
    for (metric, labels), value in samples.items():
        if metric == f"dra_pool_{name}":
            found = dict(labels)
            out[(found["driver"], found["pool"], found["node"])] = value
    return out


def by_driver(samples: Samples, name: str) -> dict[str, float]:
    return {
        dict(labels)["driver"]: value
        for (metric, labels), value in samples.items()
        if metric == f"dra_driver_{name}"
    }


def value(samples: Samples, name: str) -> float:
    return samples[(name, ())]


def ask(server: ServerProcess, name: str, driver: str) -> list[dict[str, Any]]:
    """A ResourcePoolStatusRequest for every pool of ``driver``: its pool entries."""
    manifest = {
        "apiVersion": "resource.k8s.io/v1alpha1",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": driver},
    }
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    server.kubectl("wait", "--for=condition=Complete", f"rpsr/{name}", "--timeout=30s")
    got = yaml.safe_load(server.kubectl("get", f"rpsr/{name}", "-o", "yaml").stdout)
    server.kubectl("delete", f"rpsr/{name}")
    pools: list[dict[str, Any]] = got["status"].get("pools", [])
    return pools


def reserve_one(server: ServerProcess, node: str) -> dict[str, Any]:
    claim = {
        "devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
        }
    }
    body = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "AllocationReview",
        "spec": {
            "claims": [{"name": "one", "spec": claim}],
            "nodeNames": [node],
            "reserve": True,
            "reservationSeconds": 600,
        },
    }
    out = server.kubectl("create", "-f", "-", "-o", "yaml", input=yaml.safe_dump(body)).stdout
    status: dict[str, Any] = yaml.safe_load(out)["status"]
    return status


def start(workdir: Path, *args: str) -> ServerProcess:
    server = start_server(workdir, ["--pool-status", *args])
    server.kubectl("apply", "-f", str(EXAMPLES))
    allocate(server, "two-gpus-same-model", "gpus", [("node-1", "gpu-0"), ("node-1", "gpu-1")])
    allocate(server, "one-gpu", "gpu", [("node-1", "gpu-2")])
    return server


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start(tmp_path_factory.mktemp("pool-metrics"))
    yield server
    server.stop()


def expected(server: ServerProcess, round_: int) -> dict[str, dict[tuple[str, str, str], int]]:
    """The gauges' values per pool as the ResourcePoolStatusRequests answer them."""
    out: dict[str, dict[tuple[str, str, str], int]] = {name: {} for name in COUNTS}
    for driver in DRIVERS:
        for pool in ask(server, f"metrics-{round_}-{driver.split('.')[0]}", driver):
            key = (pool["driver"], pool["poolName"], pool.get("nodeName", ""))
            for name, field in COUNTS.items():
                out[name][key] = pool[field]
    return out


def test_pool_gauges_equal_the_pool_status_answer(cluster: ServerProcess) -> None:
    want = expected(cluster, 1)
    assert want["allocated_devices"][("gpu.example.com", "node-1", "node-1")] == 3
    assert {driver for driver, _, _ in want["devices"]} == set(DRIVERS)

    def agrees() -> Samples | None:
        samples = scrape(cluster)
        got = {name: by_pool(samples, name) for name in COUNTS}
        return samples if got == want else None

    samples = wait_for(agrees, "the pool gauges to equal the ResourcePoolStatusRequests'")
    assert value(samples, "dra_pool_metrics_per_pool") == 1
    for name in COUNTS:
        per_pool = by_pool(samples, name)
        assert by_driver(samples, name) == {
            driver: sum(v for (d, _, _), v in per_pool.items() if d == driver) for driver in DRIVERS
        }
    assert by_driver(samples, "pools") == {
        driver: sum(1 for (d, _, _) in want["devices"] if d == driver) for driver in DRIVERS
    }
    assert set(by_pool(samples, "held_devices").values()) == {0}


def test_a_reservation_is_held_and_the_review_timed(cluster: ServerProcess) -> None:
    before = scrape(cluster)
    reviews = value(before, "dra_allocation_review_duration_seconds_count")
    status = reserve_one(cluster, "node-2")
    [result] = status["nodes"][0]["allocations"][0]["devices"]["results"]
    key = (result["driver"], result["pool"], "node-2")

    def held() -> Samples | None:
        samples = scrape(cluster)
        return samples if by_pool(samples, "held_devices").get(key) == 1 else None

    samples = wait_for(held, "the reserved device to show as held")
    assert value(samples, "dra_reservation_held_devices") == 1
    assert by_driver(samples, "held_devices")[result["driver"]] == 1
    assert value(samples, "dra_allocation_review_duration_seconds_count") == reviews + 1
    # Held counts as allocated, in the pool status and here alike, until it is written.
    assert (
        by_pool(samples, "allocated_devices")[key] == by_pool(before, "allocated_devices")[key] + 1
    )
    want = expected(cluster, 2)
    assert by_pool(samples, "allocated_devices") == want["allocated_devices"]
    assert by_pool(samples, "available_devices") == want["available_devices"]
    cluster.kubectl("delete", "devicereservations", "--all")
    wait_for(
        lambda: value(scrape(cluster), "dra_reservation_held_devices") == 0,
        "the deleted reservation to hold nothing",
    )


def test_more_pools_than_the_flag_exports_driver_totals_only(tmp_path: Path) -> None:
    server = start(tmp_path / "capped", "--metrics-max-pools", "1")
    try:
        want = expected(server, 3)

        def totals() -> Samples | None:
            samples = scrape(server)
            sums = {
                driver: sum(v for (d, _, _), v in want["devices"].items() if d == driver)
                for driver in DRIVERS
            }
            return samples if by_driver(samples, "devices") == sums else None

        samples = wait_for(totals, "the per-driver totals")
        assert value(samples, "dra_pool_metrics_per_pool") == 0
        assert not any(name.startswith("dra_pool_") and labels for name, labels in samples)
    finally:
        server.stop()


# -- the example Grafana dashboard ---------------------------------------------------------

DASHBOARD = EXAMPLES / "grafana" / "pool-availability.json"
PROMQL_WORDS = {
    # PromQL keywords and aggregation modifiers: never metric names
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers that are not a function
    call, a keyword, a label matcher (``{...}``), a range (``[...]``), a grouping label list
    (``by (...)``) or inside a string."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    # A grouping goes with its label list: ``sum by (le) (x)`` is then ``sum (x)``.
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        word = match.group()
        rest = text[match.end() :].lstrip()
        if word.lower() in PROMQL_WORDS or rest.startswith("("):
            continue
        if match.start() > 0 and (
            text[match.start() - 1].isdigit() or text[match.start() - 1] == "."
        ):
            continue  # a number's exponent or unit
        names.add(word)
    return names


def exported_names(server: ServerProcess) -> set[str]:
    with server.client() as client:
        text = client.get("/metrics").text
    names = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
    return names


def dashboard_expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            inner = re.fullmatch(r"label_values\((\w+),\s*\w+\)", query["query"])
            assert inner, query
            exprs.append(inner.group(1))
    return exprs


def test_metric_names_are_parsed_from_promql() -> None:
    """The parser the dashboard check uses finds the selected metrics and nothing else."""
    assert metric_names(
        'histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="b c"}[5m]))) / on (pool) b'
        " > 1e3 and bottomk(10, c offset 5m)"
    ) == {"a_bucket", "b", "c"}
    assert metric_names("no_such_metric * 2") == {"no_such_metric"}


def test_the_dashboard_charts_only_metrics_the_server_exports(cluster: ServerProcess) -> None:
    dashboard = json.loads(DASHBOARD.read_text())  # valid JSON, or this fails
    assert dashboard["panels"]
    over_time = [p for p in dashboard["panels"] if p["type"] == "timeseries"]
    assert any("dra_pool_available_devices" in t["expr"] for p in over_time for t in p["targets"])
    for panel in dashboard["panels"]:
        assert panel.get("targets"), panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
    wait_for(lambda: "dra_pool_available_devices" in exported_names(cluster), "the pool gauges")
    exported = exported_names(cluster)
    named = {name for expr in dashboard_expressions() for name in metric_names(expr)}
    assert named
    assert named <= exported, sorted(named - exported)
