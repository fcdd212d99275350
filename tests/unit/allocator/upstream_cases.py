"""Upstream's allocator test cases as data (``upstream/*.yaml``) and how an answer
is compared with what upstream expects; used by the unit runner (the engine) and the e2e
runner (AllocationReview against a real server).

A case holds the upstream name and line, the feature gates it turns on, the node, the
DeviceClasses, ResourceSlices and claims as Kubernetes objects, devices already allocated
(``allocated``: ``driver/pool/device``, with ``shareID``/``consumedCapacity`` for shared
ones) and ``expect``: ``results`` (one AllocationResult per claim, in claim order),
``unschedulable`` or ``error`` (upstream's error substring; we only require "not feasible":
the engine has no separate fatal-error outcome). Marks this project adds:

- ``gateOff: <why>``: the case runs with a feature gate off; the feature is always on here,
  so the case is listed and not run.
- ``anyValid: <why>``: upstream's pick is one of several equally valid answers; any answer
  that the independent checker accepts (and with upstream's node selector) agrees.
- ``rewritten: <why>``: the smallest change that makes an object valid for kube-apiserver.
- ``divergence: <area>: <what is missing>``: disagrees today; runs as a strict xfail.
- ``divergenceServer: <area>: <what>``: disagrees only through the server (e2e).
- ``refusedAtCreate: <why>``: kube-apiserver validation refuses one of the case's objects;
  through the server the case agrees only if ours refuses it too (the engine still runs it).
- ``deliberate: <why>`` with ``ourExpect``: upstream behaviour we deliberately do not follow
  (listed in the README with the upstream line); the case checks our answer instead.

Comparison: results per claim as a multiset of (request, driver, pool, device, adminAccess,
tolerations, binding conditions, shareID present, consumedCapacity); node selector terms,
requirements and values in any order (upstream's matchers ignore order too); config entries
(upstream's plain ``allocationResult`` expects none).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from apiserver.cel import quantity
from apiserver.toolkit import JSON

HERE = Path(__file__).parent / "upstream"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # PyYAML built without libyaml has none
NAMESPACE = "default"


@dataclass(frozen=True)
class Case:
    area: str
    raw: JSON

    @property
    def name(self) -> str:
        return str(self.raw["name"])

    @property
    def id(self) -> str:
        return self.name

    def mark(self, key: str) -> str | None:
        value = self.raw.get(key)
        return None if value is None else str(value)


def load_cases() -> list[Case]:
    out: list[Case] = []
    for path in sorted(HERE.glob("*.yaml")):
        # libyaml's safe loader: the same documents, parsed several times faster, and every
        # test process (each parallel worker) loads these at collection
        data = yaml.load(path.read_text(), Loader=_LOADER)
        out.extend(Case(data["area"], raw) for raw in data["cases"])
    return out


def runnable(cases: Sequence[Case]) -> list[Case]:
    return [c for c in cases if c.mark("gateOff") is None]


def device_triple(text: str) -> tuple[str, str, str]:
    driver, pool, device = text.split("/")
    return driver, pool, device


def allocated_claims(case: Case) -> Iterator[JSON]:
    """One claim per already-allocated device, holding it as upstream's allocated state does."""
    for i, entry in enumerate(case.raw.get("allocated") or ()):
        driver, pool, device = device_triple(entry["device"])
        result: JSON = {"request": "r", "driver": driver, "pool": pool, "device": device}
        if "shareID" in entry:
            result["shareID"] = entry["shareID"]
        if "consumedCapacity" in entry:
            result["consumedCapacity"] = entry["consumedCapacity"]
            result.setdefault("shareID", f"00000000-0000-4000-8000-{i:012d}")
        yield {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"allocated-{i}", "namespace": NAMESPACE},
            "spec": {
                "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "held"}}]}
            },
            "status": {"allocation": {"devices": {"results": [result]}}},
        }


# ------------------------------------------------------------------ comparison


def _q(value: Any) -> str:
    try:
        return str(quantity.parse(str(value)))
    except Exception:  # an unparsable value compares as written
        return str(value)


def _result_key(r: JSON) -> tuple[Any, ...]:
    return (
        r.get("request"),
        r.get("driver"),
        r.get("pool"),
        r.get("device"),
        bool(r.get("adminAccess")),
        _canon(r.get("tolerations") or []),
        tuple(r.get("bindingConditions") or ()),
        tuple(r.get("bindingFailureConditions") or ()),
        r.get("shareID") is not None,
        tuple(sorted((k, _q(v)) for k, v in (r.get("consumedCapacity") or {}).items())),
    )


def _canon(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(
            sorted((k, _canon(v)) for k, v in value.items() if v not in (None, "", [], {}))
        )
    if isinstance(value, list):
        return tuple(sorted((_canon(v) for v in value), key=repr))
    return value


def _selector(selector: JSON | None) -> Any:
    if not selector:
        return None
    terms = []
    for term in selector.get("nodeSelectorTerms") or ():
        terms.append(
            tuple(
                tuple(
                    sorted(
                        (r["key"], r["operator"], tuple(sorted(r.get("values") or ())))
                        for r in term.get(kind) or ()
                    )
                )
                for kind in ("matchExpressions", "matchFields")
            )
        )
    return tuple(sorted(terms))


def _config(allocation: JSON) -> Any:
    out = []
    for entry in allocation.get("devices", {}).get("config") or ():
        out.append(
            (
                entry.get("source"),
                tuple(sorted(entry.get("requests") or ())),
                _canon(entry.get("opaque") or {}),
            )
        )
    return tuple(out)


def differences(expected: JSON, got: JSON | None, *, devices_too: bool = True) -> str | None:
    """None when one claim's allocation agrees with upstream's, else what differs."""
    if got is None:
        return "no allocation"
    want = sorted((_result_key(r) for r in expected["devices"]["results"]), key=repr)
    have = sorted((_result_key(r) for r in got.get("devices", {}).get("results") or ()), key=repr)
    if not devices_too:
        want = sorted((k[:1] + k[4:] for k in want), key=repr)
        have = sorted((k[:1] + k[4:] for k in have), key=repr)
    if want != have:
        return f"results: want {want}, got {have}"
    if _selector(expected.get("nodeSelector")) != _selector(got.get("nodeSelector")):
        return f"nodeSelector: want {expected.get('nodeSelector')}, got {got.get('nodeSelector')}"
    if _config(expected) != _config(got):
        return f"config: want {_config(expected)}, got {_config(got)}"
    return None


def verdict(
    case: Case, feasible: bool, allocations: Sequence[JSON | None], any_valid_ok: bool | None
) -> str | None:
    """None when our answer agrees with upstream's expectation, else why not.

    ``any_valid_ok``: for anyValid cases, whether the checker accepted our answer (unit), or
    None where only the shape can be compared (e2e: requests, flags and node selector)."""
    expect = case.raw.get("ourExpect") or case.raw["expect"]
    if "error" in expect or "unschedulable" in expect:
        return None if not feasible else f"feasible, upstream: {expect}"
    wanted: list[JSON] = expect["results"]
    if not wanted:
        return None if feasible else "infeasible with nothing to allocate"
    if not feasible:
        return "infeasible, upstream allocates"
    any_valid = case.mark("anyValid") is not None
    if any_valid and any_valid_ok is False:
        return "answer rejected by the checker"
    for claim, want, got in zip(case.raw["claims"], wanted, allocations, strict=True):
        problem = differences(want, got, devices_too=not any_valid)
        if problem is not None:
            return f"{claim['metadata']['name']}: {problem}"
    return None
