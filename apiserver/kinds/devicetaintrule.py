"""DeviceTaintRule (``resource.k8s.io/v1``, standalone mode): cluster-scoped, status
subresource; the server sets the taint's ``timeAdded`` as upstream's strategy does."""

from __future__ import annotations

from typing import Any, ClassVar

from ..api.field import FieldError
from ..api.resource import (
    DRA_GROUP,
    DRA_VERSION,
    DeviceTaintRule,
    set_rule_taint_time,
    validate_device_taint_rule,
    validate_device_taint_rule_status,
)
from ..machinery import Column, Strategy, path
from ..toolkit.timestamps import now_rfc3339


class DeviceTaintRuleStrategy(Strategy[DeviceTaintRule]):
    model = DeviceTaintRule
    version = DRA_VERSION
    kind = "DeviceTaintRule"
    plural = "devicetaintrules"
    singular = "devicetaintrule"
    has_status = True
    columns: ClassVar[tuple[Column, ...]] = (
        Column(
            "Driver",
            "string",
            path("spec", "deviceSelector", "driver"),
            "Driver whose devices are tainted.",
        ),
        Column("Pool", "string", path("spec", "deviceSelector", "pool"), "Pool that is tainted."),
        Column(
            "Device", "string", path("spec", "deviceSelector", "device"), "Device that is tainted."
        ),
        Column("Key", "string", path("spec", "taint", "key"), "The taint's key."),
        Column("Effect", "string", path("spec", "taint", "effect"), "The taint's effect."),
    )

    @classmethod
    def upstream(cls) -> DeviceTaintRuleStrategy:
        return cls(DRA_GROUP)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        set_rule_taint_time(obj.get("spec"), now_rfc3339())

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        # An unchanged taint keeps the time it was added; a new one gets now.
        set_rule_taint_time(obj.get("spec"), now_rfc3339(), old.get("spec"))

    def validate(self, obj: DeviceTaintRule) -> list[FieldError]:
        return validate_device_taint_rule(obj)

    def validate_update(self, new: DeviceTaintRule, old: DeviceTaintRule) -> list[FieldError]:
        return validate_device_taint_rule(new)

    def validate_status(self, obj: DeviceTaintRule) -> list[FieldError]:
        return validate_device_taint_rule_status(obj.status)
