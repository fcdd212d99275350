"""The shared field types of apiserver/api/base.py: quantities and timestamps."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.resource import DeviceCapacity
from apiserver.machinery.decoding import check_object


@pytest.mark.parametrize(
    "value",
    [
        "1",
        "1.5",
        ".5",
        "10n",
        "5u",
        "100m",
        "2k",
        "3M",
        "4G",
        "1T",
        "2P",
        "1E",
        "4Gi",
        "1Ki",
        "1Ei",
        "1e3",
        "1E-2",
        "+5",
        "-1",
        4,
        2.5,
    ],
)
def test_quantities_kubernetes_accepts(value: Any) -> None:
    model, _, errs = check_object({"value": value}, DeviceCapacity)
    assert errs == []
    assert model is not None


@pytest.mark.parametrize("value", ["", "abc", "1Q", "1mi", "1KiB", "1 Gi", "Gi", True, None, [1]])
def test_values_that_are_not_quantities(value: Any) -> None:
    _, _, errs = check_object({"value": value}, DeviceCapacity)
    assert [e.field for e in errs] == ["value"]
