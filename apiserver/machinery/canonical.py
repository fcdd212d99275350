"""Values Kubernetes writes in one canonical form, whatever form they were sent in.

Resource quantities: ``1000m`` is stored and answered as ``1``, ``85899345920`` (a JSON
number) as ``"85899345920"``, ``1.5Gi`` as ``1536Mi``, as kube-apiserver decodes a
``resource.Quantity`` and encodes it again. Typed clients rely on it: the Python client's
models and client-go read a quantity as a string. Where the quantities are comes from the
kind's schema (the fields typed ``Quantity``).
"""

from __future__ import annotations

from typing import Any

from ..cel.quantity import QuantityError, serialized
from .fieldmanager import SchemaNode


def canonicalize_quantities(value: Any, node: SchemaNode) -> Any:
    """``value`` with every quantity the schema places in it in canonical form (dicts and
    lists are changed in place); a value that is not a quantity is left to validation."""
    if not node.quantities:
        return value
    if node.quantity:
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            try:
                return serialized(value)
            except QuantityError:
                return value
        return value
    if isinstance(value, dict):
        if node.kind == "struct":
            for name, child in node.fields.items():
                if name in value:
                    value[name] = canonicalize_quantities(value[name], child)
        elif node.kind == "map" and node.elem is not None:
            for key in value:
                value[key] = canonicalize_quantities(value[key], node.elem)
    elif isinstance(value, list) and node.kind == "list" and node.elem is not None:
        for index, item in enumerate(value):
            value[index] = canonicalize_quantities(item, node.elem)
    return value
