"""Server-side printing: kubectl-style ages and meta.k8s.io/v1 Tables."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apiserver.kinds import strategies
from apiserver.machinery import AGE_COLUMN, NAME_COLUMN, Column, human_age, human_duration, path
from apiserver.machinery.table import partial_object_metadata, table

MINUTE = 60
HOUR = 60 * MINUTE
DAY = 24 * HOUR
YEAR = 365 * DAY


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        # The same table as Kubernetes' duration.HumanDuration.
        (-2, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (45, "45s"),
        (119, "119s"),
        (2 * MINUTE, "2m"),
        (5 * MINUTE + 3, "5m3s"),
        (9 * MINUTE + 59, "9m59s"),
        (10 * MINUTE + 30, "10m"),
        (179 * MINUTE, "179m"),
        (3 * HOUR, "3h"),
        (3 * HOUR + 25 * MINUTE, "3h25m"),
        (7 * HOUR + 59 * MINUTE, "7h59m"),
        (8 * HOUR + 30 * MINUTE, "8h"),
        (47 * HOUR, "47h"),
        (2 * DAY, "2d"),
        (3 * DAY + 5 * HOUR, "3d5h"),
        (7 * DAY + 23 * HOUR, "7d23h"),
        (8 * DAY, "8d"),
        (12 * DAY + 7 * HOUR, "12d"),
        (2 * YEAR - DAY, "729d"),
        (2 * YEAR, "2y"),
        (2 * YEAR + 40 * DAY, "2y40d"),
        (7 * YEAR + 364 * DAY, "7y364d"),
        (8 * YEAR, "8y"),
        (9 * YEAR + 100 * DAY, "9y"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("timestamp", "text"),
    [
        ((NOW - timedelta(seconds=45)).strftime("%Y-%m-%dT%H:%M:%SZ"), "45s"),
        ((NOW - timedelta(minutes=5, seconds=3)).strftime("%Y-%m-%dT%H:%M:%SZ"), "5m3s"),
        ("2025-06-01T09:00:00+00:00", "3h"),
        ("2025-06-01T11:00:00+02:00", "3h"),
        ("2025-06-01T11:59:59.5Z", "0s"),
        ("2025-06-01T12:00:30Z", "<invalid>"),  # in the future beyond clock skew
        (None, "<unknown>"),
        ("", "<unknown>"),
        ("yesterday", "<invalid>"),
    ],
)
def test_human_age(timestamp: str | None, text: str) -> None:
    assert human_age(timestamp, NOW) == text


@pytest.mark.parametrize(
    ("keys", "obj", "value"),
    [
        (("spec", "a"), {"spec": {"a": 1}}, 1),
        (("spec", "a"), {"spec": {}}, None),
        (("spec", "a"), {"spec": "x"}, None),
        (("items", 1, "n"), {"items": [{"n": 1}, {"n": 2}]}, 2),
        (("items", 5), {"items": [1]}, None),
        (("items", 0), {"items": {"0": 1}}, None),
    ],
)
def test_path_getter(keys: tuple[str | int, ...], obj: dict[str, Any], value: Any) -> None:
    assert path(*keys)(obj) == value


OBJECTS: list[dict[str, Any]] = [
    {
        "metadata": {
            "name": "a",
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {"x": "1"},
        },
        "spec": {"tags": ["t1", "t2"], "n": 3},
    },
    {"metadata": {"name": "b"}, "spec": {}},
]
COLUMNS = (
    NAME_COLUMN,
    Column("Tags", "string", path("spec", "tags"), "Joined tags."),
    Column("N", "integer", path("spec", "n"), priority=1),
    Column("Broken", "string", lambda obj: obj["missing"]["deep"]),
)


def test_table_rows_and_column_definitions() -> None:
    result = table(COLUMNS, OBJECTS, list_meta={"resourceVersion": "7"})
    assert result["kind"] == "Table"
    assert result["apiVersion"] == "meta.k8s.io/v1"
    assert result["metadata"] == {"resourceVersion": "7"}
    assert [c["name"] for c in result["columnDefinitions"]] == ["Name", "Tags", "N", "Broken"]
    assert result["columnDefinitions"][0] == {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": "Name must be unique within a namespace.",
        "priority": 0,
    }
    assert result["columnDefinitions"][2]["priority"] == 1
    # Lists are joined with commas; missing values and failing getters give empty cells.
    assert [r["cells"] for r in result["rows"]] == [
        ["a", "t1,t2", 3, None],
        ["b", None, None, None],
    ]


def test_table_row_objects_per_include_object() -> None:
    as_metadata = table(COLUMNS, OBJECTS)
    assert as_metadata["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": OBJECTS[0]["metadata"],
    }
    as_object = table(COLUMNS, OBJECTS, include_object="Object")
    assert as_object["rows"][1]["object"] == OBJECTS[1]
    bare = table(COLUMNS, OBJECTS, include_object="None")
    assert all("object" not in r for r in bare["rows"])


def test_table_without_headers() -> None:
    result = table(COLUMNS, OBJECTS, with_headers=False)
    assert result["columnDefinitions"] == []
    assert len(result["rows"]) == 2


def test_partial_object_metadata() -> None:
    assert partial_object_metadata({"metadata": {"name": "x"}, "spec": {}}) == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"name": "x"},
    }


def test_served_kinds_print_name_first_and_age_last() -> None:
    for strategy in strategies(standalone=False):
        if "list" not in strategy.verbs:
            continue  # a review kind is never listed: no table to print
        columns = strategy.table_columns()
        assert columns[0] is NAME_COLUMN
        assert columns[-1] is AGE_COLUMN
        assert len(columns) > 2


def test_events_print_like_kubectl() -> None:
    """Events lead with LAST SEEN and show NAME only with -o wide, as kubectl prints them."""
    event = next(s for s in strategies() if s.resource.kind == "Event")
    columns = event.table_columns()
    assert [c.name for c in columns if c.priority == 0] == [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Message",
    ]
    assert [c.name for c in columns if c.format == "name"] == ["Name"]
    assert next(c for c in columns if c.name == "Name").priority == 1
    obj = {"involvedObject": {"kind": "ResourceSlicePatch", "name": "p"}, "type": "Warning"}
    row = table(columns, [obj])["rows"][0]["cells"]
    assert row[1] == "Warning"
    assert row[3] == "resourceslicepatch/p"


def test_resource_slice_patch_columns() -> None:
    rsp = next(s for s in strategies() if s.resource.kind == "ResourceSlicePatch")
    obj = {
        "metadata": {"name": "p", "creationTimestamp": "2000-01-01T00:00:00Z"},
        "spec": {
            "devices": {
                "priority": 5,
                "filter": {"driver": "gpu.example.com", "pool": "pool-a", "device": "gpu-0"},
            }
        },
        "status": {"matchedDevices": 2},
    }
    [row] = table(rsp.table_columns(), [obj])["rows"]
    cells = dict(zip([c.name for c in rsp.table_columns()], row["cells"], strict=True))
    assert cells["Name"] == "p"
    assert cells["Driver"] == "gpu.example.com"
    assert cells["Pool"] == "pool-a"
    assert cells["Device"] == "gpu-0"
    assert cells["Priority"] == 5
    assert cells["Matched"] == 2
    assert cells["Age"].endswith("y")
