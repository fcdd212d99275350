"""DeviceClass (``resource.k8s.io/v1``, standalone mode): cluster-scoped, printed as NAME, AGE."""

from __future__ import annotations

from typing import ClassVar

from ..api.field import FieldError
from ..api.resource import DRA_GROUP, DRA_VERSION, DeviceClass, validate_device_class
from ..machinery import FieldGetter, Strategy, string_at


class DeviceClassStrategy(Strategy[DeviceClass]):
    model = DeviceClass
    version = DRA_VERSION
    kind = "DeviceClass"
    plural = "deviceclasses"
    singular = "deviceclass"
    extra_field_getters: ClassVar[dict[str, FieldGetter]] = {
        "spec.extendedResourceName": string_at("spec", "extendedResourceName")
    }

    @classmethod
    def upstream(cls) -> DeviceClassStrategy:
        return cls(DRA_GROUP)

    def validate(self, obj: DeviceClass) -> list[FieldError]:
        return validate_device_class(obj)

    def validate_update(self, new: DeviceClass, old: DeviceClass) -> list[FieldError]:
        return validate_device_class(new, old)
