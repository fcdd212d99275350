"""Strategic merge patch, driven by the kind's schema.

kubectl sends strategic merge patches for the kinds compiled into it (our standalone
``resource.k8s.io/v1`` kinds and Events) and for any kind whose OpenAPI advertises them.
It is a JSON merge patch (``null`` deletes, objects merge key by key) except for lists:

* a list of objects keyed by one field (``x-kubernetes-list-type: map`` with one key, the
  ``patchMergeKey`` of Kubernetes' Go types) merges item by item on that key;
* a list of scalars marked ``set`` merges as a union;
* every other list is replaced whole.

Directives: ``$patch: replace|delete|merge`` on an object or a list item,
``$retainKeys``, ``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>``
(kubectl sends the last one with every apply; it only orders items). Directives never
reach the stored object.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from . import errors
from .fieldmanager import SchemaNode
from .patching import decode_patch

_DELETE = object()


def apply_strategic_merge_patch(
    obj: dict[str, Any], body: bytes, schema: SchemaNode
) -> dict[str, Any]:
    patch = decode_patch(body)
    if not isinstance(patch, dict):
        raise errors.bad_request("a strategic merge patch must be a JSON object")
    result = _merge_object(obj, patch, schema)
    if result is _DELETE or not isinstance(result, dict):
        raise errors.bad_request(
            'a strategic merge patch cannot delete the whole object ("$patch": "delete")'
        )
    return result


def merge_key(node: SchemaNode) -> str | None:
    """The merge key of a list, if it merges item by item."""
    if node.kind == "list" and node.list_type == "map" and len(node.keys) == 1:
        return node.keys[0]
    return None


def _merge_object(original: Any, patch: dict[str, Any], node: SchemaNode) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return _strip(patch)
    if directive not in (None, "merge"):
        raise errors.bad_request(f'unknown patch directive "$patch": {directive!r}')
    result = dict(original) if isinstance(original, dict) else {}
    retain = patch.get("$retainKeys")
    if retain is not None:
        if not isinstance(retain, list):
            raise errors.bad_request('"$retainKeys" must be a list of field names')
        result = {k: v for k, v in result.items() if k in retain}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            if not isinstance(value, list):
                raise errors.bad_request(f'"{key}" must be a list')
            if isinstance(result.get(name), list):
                result[name] = [v for v in result[name] if v not in value]
            continue
        if key.startswith("$setElementOrder/"):
            name = key.split("/", 1)[1]
            if name not in patch and isinstance(result.get(name), list) and isinstance(value, list):
                result[name] = _ordered(result[name], value, merge_key(node.child(name)))
            continue
        if key.startswith("$"):
            continue
        child = node.child(key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and child.kind in ("struct", "map", "any"):
            merged = _merge_object(result.get(key), value, child)
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(
                result.get(key), value, child, patch.get(f"$setElementOrder/{key}")
            )
        else:
            result[key] = copy.deepcopy(value)
    return result


def _merge_list(original: Any, patch: list[Any], node: SchemaNode, order: Any) -> list[Any]:
    key = merge_key(node)
    if key is not None:
        merged = _merge_keyed(original, patch, node, key)
    elif node.kind == "list" and node.list_type == "set":
        merged = list(original) if isinstance(original, list) else []
        merged += [v for v in patch if v not in merged]
    else:
        return [_strip(item) for item in patch if not _is_directive(item)]
    if isinstance(order, list):
        merged = _ordered(merged, order, key)
    return merged


def _merge_keyed(original: Any, patch: list[Any], node: SchemaNode, key: str) -> list[Any]:
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [_strip(i) for i in patch if not _is_directive(i)]
    result = list(original) if isinstance(original, list) else []
    elem = node.elem or SchemaNode("any")
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise errors.bad_request(
                f'every item of a list merged on "{key}" must be an object with "{key}"'
            )
        at = next(
            (i for i, e in enumerate(result) if isinstance(e, dict) and e.get(key) == item[key]),
            None,
        )
        if item.get("$patch") == "delete":
            if at is not None:
                del result[at]
            continue
        if at is None:
            result.append(_strip(item))
        else:
            merged = _merge_object(result[at], item, elem)
            if merged is _DELETE:
                del result[at]
            else:
                result[at] = merged
    return result


def _ordered(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    """Items in ``$setElementOrder`` order first, the rest after in their current order."""

    def identity(item: Any) -> Any:
        value = item.get(key) if key is not None and isinstance(item, dict) else item
        return orjson.dumps(value)

    wanted = [identity(o) for o in order]
    rank = {w: i for i, w in enumerate(wanted)}
    return sorted(items, key=lambda item: rank.get(identity(item), len(rank)))


def _is_directive(item: Any) -> bool:
    return isinstance(item, dict) and set(item) <= {"$patch"}


def _strip(value: Any) -> Any:
    """A patch value without directives, ready to be stored."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value
