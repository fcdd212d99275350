"""Types of the core (``v1``) group that the standalone server serves: Events, Namespaces, Nodes,
Pods and their Binding.

The group's face: other layers import from here, never from its modules."""

from .binding import Binding
from .event import Event
from .namespace import Namespace
from .node import Node
from .pod import Pod
from .protobuf import KINDS
from .validation.event import validate_event
from .validation.namespace import validate_namespace, validate_namespace_status
from .validation.node import validate_node, validate_node_status
from .validation.pod import validate_pod

__all__ = [
    "KINDS",
    "Binding",
    "Event",
    "Namespace",
    "Node",
    "Pod",
    "validate_event",
    "validate_namespace",
    "validate_namespace_status",
    "validate_node",
    "validate_node_status",
    "validate_pod",
]
