"""``resource.k8s.io/v1`` DeviceTaintRule (KEP-5055, GA in 1.37): a taint an administrator puts
on the devices a selector picks, without touching their ResourceSlices."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..base import APIModel
from ..meta import CONDITIONS_SCHEMA_EXTRA, Condition, KindModel
from .device import DeviceTaint

MAX_CONDITIONS = 8
"""``DeviceTaintRuleStatusMaxConditions``."""


class DeviceTaintSelector(APIModel):
    """Which devices a rule taints: all criteria must be satisfied; empty selects every device."""

    driver: str | None = Field(
        None, description="If driver is set, only devices from that driver are selected."
    )
    pool: str | None = Field(
        None,
        description="If pool is set, only devices in that pool are selected. Pool names are "
        "unique per driver, so driver should be set as well.",
    )
    device: str | None = Field(
        None,
        description="If device is set, only devices with that name are selected. Device names "
        "are unique per pool, so driver and pool should be set as well.",
    )


class DeviceTaintRuleSpec(APIModel):
    """The devices and the taint applied to them."""

    device_selector: DeviceTaintSelector | None = Field(
        None,
        description="DeviceSelector defines which device(s) the taint is applied to. All "
        "selector criteria must be satisfied for a device to match. The empty selector matches "
        "all devices. Without a selector, no devices are matched.",
    )
    taint: DeviceTaint = Field(
        description="The taint that gets applied to matching devices (timeAdded is set by the "
        "server when empty)."
    )


class DeviceTaintRuleStatus(APIModel):
    """What the server observed about the rule."""

    conditions: list[Condition] | None = Field(
        None,
        description="Conditions provide information about the state of the DeviceTaintRule "
        f"and the cluster at some point in time (at most {MAX_CONDITIONS}).",
        json_schema_extra=CONDITIONS_SCHEMA_EXTRA,
    )


class DeviceTaintRule(KindModel):
    """Adds one taint to all devices which match the selector."""

    spec: DeviceTaintRuleSpec = Field(
        description="Spec specifies the selector and one taint. Changing the spec automatically "
        "increments the metadata.generation number."
    )
    status: DeviceTaintRuleStatus | None = Field(
        None, description="Status provides information about what was requested in the spec."
    )


def set_rule_taint_time(spec: Any, now: str, old: Any = None) -> None:
    """Set ``timeAdded`` of a rule's taint (JSON form) when it has none: the stored spec's time
    if ``old`` had the same key, value and effect, else ``now``. Tolerates ill-typed input."""
    taint = spec.get("taint") if isinstance(spec, dict) else None
    if not isinstance(taint, dict) or taint.get("timeAdded"):
        return
    before = old.get("taint") if isinstance(old, dict) else None
    same = isinstance(before, dict) and all(
        before.get(k) == taint.get(k) for k in ("key", "value", "effect")
    )
    kept = before.get("timeAdded") if same and isinstance(before, dict) else None
    taint["timeAdded"] = kept or now
