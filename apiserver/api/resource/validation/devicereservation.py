"""Validation of DeviceReservation: well-formed names, bounded lists, each device once."""

from __future__ import annotations

from ... import field
from ...field import FieldError, Path
from ...names import dns1123_label_errors, dns1123_subdomain_errors
from ..allocationreview import CLAIMS_MAX
from ..devicereservation import DEVICES_MAX, DeviceReservation
from .device import validate_device_name, validate_driver_name, validate_pool_name


def validate_device_reservation(reservation: DeviceReservation) -> list[FieldError]:
    spec = reservation.spec
    path = Path("spec")
    errs = field.required_name(path.child("nodeName"), spec.node_name, dns1123_subdomain_errors)
    devices = path.child("devices")
    if not spec.devices:
        errs.append(field.required(str(devices), "at least one device must be reserved"))
    elif len(spec.devices) > DEVICES_MAX:
        errs.append(field.too_many(str(devices), len(spec.devices), DEVICES_MAX))
    seen: set[tuple[str, str, str]] = set()
    for i, device in enumerate(spec.devices[:DEVICES_MAX]):
        at = devices.index(i)
        errs += validate_driver_name(device.driver, at.child("driver"))
        errs += validate_pool_name(device.pool, at.child("pool"))
        errs += validate_device_name(device.device, at.child("device"))
        ident = (device.driver, device.pool, device.device)
        if ident in seen:
            errs.append(field.duplicate(str(at), "/".join(ident)))
        seen.add(ident)
    claims = path.child("claims")
    if not spec.claims:
        errs.append(field.required(str(claims), "at least one claim must be named"))
    elif len(spec.claims) > CLAIMS_MAX:
        errs.append(field.too_many(str(claims), len(spec.claims), CLAIMS_MAX))
    for i, claim in enumerate(spec.claims[:CLAIMS_MAX]):
        at = claims.index(i)
        for name, value, check in (
            ("namespace", claim.namespace, dns1123_label_errors),
            ("name", claim.name, dns1123_subdomain_errors),
        ):
            errs += field.required_name(at.child(name), value, check)
    return errs


def validate_device_reservation_update(
    new: DeviceReservation, old: DeviceReservation
) -> list[FieldError]:
    if new.spec != old.spec:
        return [field.invalid("spec", None, "field is immutable")]
    return validate_device_reservation(new)
