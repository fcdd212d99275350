"""The kube-scheduler extender protocol (``k8s.io/kube-scheduler/extender/v1``) on the wire.

The Go types carry no JSON tags, so their fields travel in Go's own spelling: ``Pod``,
``Nodes``, ``NodeNames``; ``FailedNodes``, ``FailedAndUnresolvableNodes``, ``Error``;
``Host``, ``Score``; ``PodName``, ``PodNamespace``, ``PodUID``, ``Node``. Go decodes keys
case-insensitively, so requests are read that way too; answers use the exact spelling.
A scheduler configured with ``nodeCacheCapable: true`` sends and expects node names, one
with ``false`` whole ``v1.Node`` objects in a ``NodeList``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..toolkit import JSON

MAX_EXTENDER_PRIORITY = 10
"""The highest score an extender gives (``extenderv1.MaxExtenderPriority``)."""


class ProtocolError(ValueError):
    """A request that is not what the scheduler sends."""


def _fields(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ProtocolError("the request body must be a JSON object")
    return {str(k).lower(): v for k, v in body.items()}


@dataclass
class FilterArgs:
    """``ExtenderArgs``: the pod and its candidate nodes, as names or as Node objects."""

    pod: JSON
    node_names: list[str]
    nodes: list[JSON] | None
    """The Node objects when the scheduler sent them (``nodeCacheCapable: false``)."""

    @classmethod
    def parse(cls, body: Any) -> FilterArgs:
        fields = _fields(body)
        pod = fields.get("pod")
        if not isinstance(pod, dict) or not isinstance(pod.get("metadata"), dict):
            raise ProtocolError("Pod is required")
        node_list = fields.get("nodes")
        if node_list is not None:
            items = node_list.get("items") if isinstance(node_list, dict) else None
            if not isinstance(items, list) or not all(
                isinstance(n, dict) and isinstance((n.get("metadata") or {}).get("name"), str)
                for n in items
            ):
                raise ProtocolError("Nodes must be a NodeList of named nodes")
            return cls(pod, [n["metadata"]["name"] for n in items], items)
        names = fields.get("nodenames")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ProtocolError("either Nodes or NodeNames is required")
        return cls(pod, list(names), None)


@dataclass
class FilterResult:
    """``ExtenderFilterResult``: the nodes that fit, and why the others do not."""

    fits: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)
    """Nodes where preempting pods would not help."""
    error: str = ""

    def wire(self, args: FilterArgs | None) -> JSON:
        """Answered in the form asked: Node objects back for Nodes, names for NodeNames
        (``args`` None: the request could not be read, and ``error`` says why)."""
        out: JSON = {
            "Nodes": None,
            "NodeNames": None,
            "FailedNodes": self.failed,
            "FailedAndUnresolvableNodes": self.unresolvable,
            "Error": self.error,
        }
        if self.error or args is None:
            return out
        if args.nodes is not None:
            fitting = set(self.fits)
            items = [n for n in args.nodes if n["metadata"]["name"] in fitting]
            out["Nodes"] = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": items}
        else:
            out["NodeNames"] = list(self.fits)
        return out


def scaled(score: int | None, top: int = 100) -> int:
    """A 0..``top`` score as an extender priority, 0..``MAX_EXTENDER_PRIORITY``."""
    if not score or score <= 0:
        return 0
    # Half rounds up (Python's round would send 5 of 100 to 0).
    return min(MAX_EXTENDER_PRIORITY, (score * MAX_EXTENDER_PRIORITY * 2 + top) // (top * 2))


def host_priorities(scores: dict[str, int], nodes: list[str]) -> list[JSON]:
    """``HostPriorityList``: one ``{Host, Score}`` per candidate, in the order sent."""
    return [{"Host": n, "Score": scores.get(n, 0)} for n in nodes]


@dataclass(frozen=True)
class BindArgs:
    """``ExtenderBindingArgs``."""

    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str

    @classmethod
    def parse(cls, body: Any) -> BindArgs:
        fields = _fields(body)
        values = [fields.get(k) for k in ("podname", "podnamespace", "poduid", "node")]
        if not all(isinstance(v, str) and v for v in (values[0], values[1], values[3])):
            raise ProtocolError("PodName, PodNamespace and Node are required")
        return cls(*(str(v or "") for v in values))


def bind_result(error: str = "") -> JSON:
    """``ExtenderBindingResult``."""
    return {"Error": error}
