"""Device states straight from a slice, without patches: for tools, benchmarks and tests
that need what the view would publish for slices no ResourceSlicePatch touches."""

from __future__ import annotations

from ..api.resource import as_dict, device_placement, flatten_slice, placement
from ..toolkit import JSON
from .names import device_object_name, device_object_uid
from .state import DeviceState


def unpatched_states(obj: JSON) -> list[DeviceState]:
    """The states of a slice's devices, mixins flattened, as the view builds them."""
    meta, spec = as_dict(obj.get("metadata")), as_dict(obj.get("spec"))
    name, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    flat = flatten_slice(spec)
    shared = placement(spec)
    out = []
    for device in flat.get("devices") or ():
        if not isinstance(device, dict):
            continue
        where = device_placement(device) if shared.per_device else shared
        device_name = str(device.get("name", ""))
        out.append(
            DeviceState(
                name=device_object_name(name, device_name),
                uid=device_object_uid(uid, device_name),
                slice_name=name,
                slice_uid=uid,
                created=meta.get("creationTimestamp"),
                driver=str(spec.get("driver", "")),
                pool=as_dict(spec.get("pool")),
                nodes=where.fields,
                device=device,
            )
        )
    return out
