"""Conversion of ResourcePoolStatusRequest between the stored ``v1alpha1`` (the seed's
shape) and upstream's ``v1alpha3``: pure functions over JSON objects.

Field by field (v1alpha1 → v1alpha3, and back):

* ``spec.driver``, ``spec.poolName``, ``spec.limit``: the same.
* ``status.totalMatchingPools`` ↔ ``status.poolCount``; ``status.truncated`` is
  ``poolCount > len(pools)`` (as the controller writes it), so it is not kept. A status with
  neither pools nor a ``Complete`` condition (a ``Failed`` answer) has no
  ``totalMatchingPools``; in v1alpha3, where ``poolCount`` is required, it reads 0.
* ``pools[].sliceCount`` ↔ ``pools[].resourceSliceCount`` (unset when 0: upstream's minimum
  is 1); the four counts are the same, and a v1alpha3 count left unset (a pool with a
  ``validationError``) is stored as 0, so it reads back as 0.
* ``status.validationErrors`` (the request's, each ``pool <name>: <problem>`` as the
  controller words them) ↔ ``pools[].validationError``: a pool's problems joined with
  ``"; "`` (cut to 256 bytes); messages that name no listed pool have no place in v1alpha3.
* ``status.observationTime`` ↔ the ``lastTransitionTime`` of the ``Complete`` or ``Failed``
  condition (the controller writes both with one clock reading): a status written in
  v1alpha3 is stored as answered then, so this server's controller leaves it alone, as
  upstream's leaves a request with a status. (A v1alpha1 status with such a condition and
  no ``observationTime``, written back through v1alpha3, gains that time.)
* ``spec.ttlSecondsAfterComplete``, an ``observationTime`` other than that, and the
  request's own ``validationErrors`` (when the pools' messages do not say them all) have no
  v1alpha3 field: they travel in the annotation ``KEPT``, so a v1alpha3 client that writes back what
  it read (an update, a patch, ``kubectl edit``) keeps them; one that drops the annotation
  drops them (a TTL dropped is a spec change, refused as such). The kept
  ``validationErrors`` are used only while the pools' messages still say the same; a
  status written in v1alpha3 with other messages is stored from those.
* Upstream's ``spec.defaultPartitionTypeAttribute`` is refused by validation, so it never
  needs a place in v1alpha1.

Round trips: v1alpha1 → v1alpha3 → v1alpha1 gives back the stored object for every status
the controller writes, except ``totalMatchingPools``/``truncated`` of a status with pools
but no ``Complete`` condition. v1alpha3 → v1alpha1 → v1alpha3 gives back the object except
unset counts (0) and a ``resourceSliceCount`` of 0 (unset).
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from ...toolkit import JSON
from .resourcepoolstatusrequest_v1alpha3 import VALIDATION_ERROR_MAX_BYTES

KEPT = "resourcepoolstatusrequest.dra.x-k8s.io/v1alpha1-fields"
"""The annotation of a v1alpha3 object that holds the v1alpha1 fields it has no place for,
as JSON (``{"spec": {...}, "status": {...}}``)."""

_COUNTS = ("totalDevices", "allocatedDevices", "availableDevices", "unavailableDevices")
_SEPARATOR = "; "


def _pool_prefix(pool_name: str) -> str:
    return f"pool {pool_name}: "


def _clip_bytes(message: str, limit: int = VALIDATION_ERROR_MAX_BYTES) -> str:
    data = message.encode()
    if len(data) <= limit:
        return message
    return data[: limit - len("…".encode())].decode(errors="ignore") + "…"


def _is_complete(status: JSON) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == "Complete" for c in status.get("conditions") or []
    )


def _answered_at(status: JSON) -> str | None:
    """When the request was answered, as its ``Complete`` or ``Failed`` condition says."""
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") in ("Complete", "Failed"):
            at = condition.get("lastTransitionTime")
            return at if isinstance(at, str) else None
    return None


def _pool_errors(messages: list[str], pool_name: str) -> str | None:
    prefix = _pool_prefix(pool_name)
    found = [m[len(prefix) :] for m in messages if m.startswith(prefix)]
    return _clip_bytes(_SEPARATOR.join(found)) if found else None


# -- v1alpha1 -> v1alpha3 ------------------------------------------------------------


def _problems_by_pool(messages: list[str], pools: list[Any]) -> dict[str, str]:
    """Each listed pool's ``validationError``, from the request's messages."""
    found: dict[str, str] = {}
    for pool in pools:
        name = str(pool.get("poolName")) if isinstance(pool, dict) else ""
        problem = _pool_errors(messages, name)
        if problem is not None:
            found[name] = problem
    return found


def _pool_to_v1alpha3(pool: JSON, problems: dict[str, str]) -> JSON:
    # A copy of the stored entry (validated, so only its known fields), renamed: the read
    # path of every v1alpha3 client, kept cheap.
    out = dict(pool)
    slices = out.pop("sliceCount", 0)
    if slices:
        out["resourceSliceCount"] = slices
    out.setdefault("generation", 0)
    if out.get("nodeName", "") is None:
        del out["nodeName"]
    problem = problems.get(str(pool.get("poolName"))) if problems else None
    if problem is not None:
        out["validationError"] = problem
    return out


def to_v1alpha3(stored: JSON) -> JSON:
    """The v1alpha3 form of a stored (v1alpha1) request. It shares the parts that do not
    change (conditions, labels, managed fields) with ``stored``: neither may be mutated
    afterwards (the store's objects never are)."""
    out: JSON = {k: v for k, v in stored.items() if k not in ("spec", "status")}
    spec = stored.get("spec") or {}
    kept_spec: JSON = {}
    out_spec: JSON = {k: spec[k] for k in ("driver", "poolName", "limit") if k in spec}
    if "ttlSecondsAfterComplete" in spec:
        kept_spec["ttlSecondsAfterComplete"] = spec["ttlSecondsAfterComplete"]
    out["spec"] = out_spec
    kept_status: JSON = {}
    status = stored.get("status")
    if isinstance(status, dict):
        messages = [m for m in status.get("validationErrors") or [] if isinstance(m, str)]
        pools = status.get("pools")
        out_status: JSON = {}
        total = status.get("totalMatchingPools")
        out_status["poolCount"] = total if total is not None else len(pools or [])
        if pools is not None:
            problems = _problems_by_pool(messages, pools) if messages else {}
            out_status["pools"] = [_pool_to_v1alpha3(p, problems) for p in pools]
        if "conditions" in status:
            out_status["conditions"] = status["conditions"]
        out["status"] = out_status
        if "observationTime" in status and status["observationTime"] != _answered_at(status):
            kept_status["observationTime"] = status["observationTime"]
        if messages and messages != _validation_errors(out_status.get("pools") or [], None):
            kept_status["validationErrors"] = messages
    kept = {k: v for k, v in (("spec", kept_spec), ("status", kept_status)) if v}
    if kept:
        meta = dict(out.get("metadata") or {})
        out["metadata"] = meta
        annotations = dict(meta.get("annotations") or {})
        annotations[KEPT] = orjson.dumps(kept, option=orjson.OPT_SORT_KEYS).decode()
        meta["annotations"] = annotations
    return out


# -- v1alpha3 -> v1alpha1 ------------------------------------------------------------


def _kept(meta: JSON) -> JSON:
    raw = (meta.get("annotations") or {}).get(KEPT)
    if not isinstance(raw, str):
        return {}
    try:
        kept = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return kept if isinstance(kept, dict) else {}


def _pool_to_v1alpha1(pool: JSON) -> JSON:
    out: JSON = {"driver": pool.get("driver"), "poolName": pool.get("poolName")}
    if pool.get("nodeName") is not None:
        out["nodeName"] = pool["nodeName"]
    for name in _COUNTS:
        out[name] = pool.get(name) or 0
    out["sliceCount"] = pool.get("resourceSliceCount") or 0
    out["generation"] = pool.get("generation", 0)
    return out


def _validation_errors(pools: list[JSON], kept: Any) -> list[str]:
    """The kept messages while the pools still say what they said; else the pools' own."""
    still_said = isinstance(kept, list) and all(isinstance(m, str) for m in kept)
    if still_said and all(
        p.get("validationError") == _pool_errors(kept, str(p.get("poolName"))) for p in pools
    ):
        return list(kept)
    return [
        _pool_prefix(str(p.get("poolName"))) + str(p["validationError"])
        for p in pools
        if p.get("validationError")
    ]


def to_v1alpha1(served: JSON) -> JSON:
    """The stored (v1alpha1) form of a v1alpha3 request."""
    out: JSON = {k: copy.deepcopy(v) for k, v in served.items() if k not in ("spec", "status")}
    meta = out.get("metadata")
    kept: JSON = {}
    if isinstance(meta, dict):
        kept = _kept(meta)
        annotations = dict(meta.get("annotations") or {})
        if KEPT in annotations:
            del annotations[KEPT]
            if annotations:
                meta["annotations"] = annotations
            else:
                meta.pop("annotations")
    spec = served.get("spec")
    if isinstance(spec, dict):
        out_spec: JSON = {k: spec[k] for k in ("driver", "poolName", "limit") if k in spec}
        ttl = (kept.get("spec") or {}).get("ttlSecondsAfterComplete")
        if ttl is not None:
            out_spec["ttlSecondsAfterComplete"] = ttl
        out["spec"] = out_spec
    elif "spec" in served:
        out["spec"] = spec  # ill-typed: the storage side never sees it (validated first)
    status = served.get("status")
    if isinstance(status, dict):
        kept_status = kept.get("status") or {}
        out_status: JSON = {}
        answered = kept_status.get("observationTime") or _answered_at(status)
        if answered is not None:
            out_status["observationTime"] = answered
        pools = [p for p in status.get("pools") or [] if isinstance(p, dict)]
        if "pools" in status:
            out_status["pools"] = [_pool_to_v1alpha1(p) for p in pools]
        if "conditions" in status:
            out_status["conditions"] = copy.deepcopy(status["conditions"])
        messages = _validation_errors(pools, kept_status.get("validationErrors"))
        if messages:
            out_status["validationErrors"] = messages
        if pools or _is_complete(status):
            count = status.get("poolCount")
            total = count if isinstance(count, int) else len(pools)
            out_status["truncated"] = total > len(pools)
            out_status["totalMatchingPools"] = total
        out["status"] = out_status
    return out
