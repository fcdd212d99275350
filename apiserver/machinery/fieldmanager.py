"""Field ownership (``metadata.managedFields``) and server-side apply.

Kubernetes tracks which manager owns which field (structured-merge-diff). We implement
the same model over the kind's schema, derived from its pydantic model:

* structs and maps merge key by key; scalars replace;
* lists are atomic unless marked ``x-kubernetes-list-type: map`` (items merged by their
  ``x-kubernetes-list-map-keys``) or ``set`` (items are scalars, merged as a set);
* an apply owns exactly the fields in its configuration; fields it owned before and
  dropped now are removed unless another manager still owns them;
* applying a different value to a field another manager owns is a conflict (409 with
  ``FieldManagerConflict`` causes) unless ``force``, which takes the field over;
* every other write (create, update, patch) gives its manager the fields it changed and
  takes them away from everyone else.

Field sets are serialised in the ``FieldsV1`` format (``f:``, ``k:``, ``v:`` and ``.``).
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, get_args, get_origin

import orjson
from pydantic import BaseModel, WithJsonSchema

from .typehints import is_union, unwrap_optional

PathElement = tuple[str, str]  # ("f", name) | ("k", key json) | ("v", value json)
FieldPath = tuple[PathElement, ...]

_MISSING: Any = object()

# Server-set metadata is never owned by anyone.
_IGNORED_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "managedFields",
)


@dataclass
class SchemaNode:
    """The parts of a schema that merging needs: structure and list semantics."""

    kind: str  # "struct", "map", "list", "scalar", "any"
    fields: dict[str, SchemaNode] = field(default_factory=dict)
    elem: SchemaNode | None = None
    list_type: str = "atomic"  # "atomic", "set", "map"
    keys: tuple[str, ...] = ()
    quantity: bool = False
    """A scalar that is a resource quantity (written in its canonical form)."""
    quantities: bool = False
    """Whether a quantity is here or anywhere below: where none is, a walk looking for them
    stops."""

    def __post_init__(self) -> None:
        below = [*self.fields.values(), *([self.elem] if self.elem is not None else [])]
        self.quantities = self.quantity or any(child.quantities for child in below)

    def child(self, name: str) -> SchemaNode:
        if self.kind == "struct":
            return self.fields.get(name, _ANY)
        if self.kind == "map" and self.elem is not None:
            return self.elem
        return _ANY


_ANY = SchemaNode("any")


def schema_of(
    tp: Any, extra: dict[str, Any] | None = None, metadata: Iterable[Any] = ()
) -> SchemaNode:
    """Build the merge schema of a pydantic model (or any annotation inside one);
    ``metadata``: what pydantic took off a field's ``Annotated`` type."""
    if _is_quantity(tp, metadata):
        return SchemaNode("scalar", quantity=True)
    tp = _unwrap(tp)
    origin = get_origin(tp)
    extra = extra or {}
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        fields = {}
        for name, info in tp.model_fields.items():
            field_extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            fields[info.alias or name] = schema_of(info.annotation, field_extra, info.metadata)
        return SchemaNode("struct", fields=fields)
    if origin is dict:
        return SchemaNode("map", elem=schema_of(get_args(tp)[1]))
    if origin is list:
        list_type = str(extra.get("x-kubernetes-list-type", "atomic"))
        keys = tuple(extra.get("x-kubernetes-list-map-keys", ()))
        return SchemaNode("list", elem=schema_of(get_args(tp)[0]), list_type=list_type, keys=keys)
    if tp is Any:
        return _ANY
    return SchemaNode("scalar")


def _is_quantity(tp: Any, metadata: Iterable[Any]) -> bool:
    """Typed ``Quantity`` (api.base), maybe optional: known by its schema marker."""
    if any(
        isinstance(m, WithJsonSchema) and (m.json_schema or {}).get("x-k8s-quantity")
        for m in metadata
    ):
        return True
    if get_origin(tp) is typing.Annotated:
        return _is_quantity(None, get_args(tp)[1:])
    if is_union(tp):
        args = [a for a in get_args(tp) if a is not type(None)]
        return len(args) == 1 and _is_quantity(args[0], ())
    return False


def _unwrap(tp: Any) -> Any:
    tp = unwrap_optional(tp)
    # A union of several types is opaque: objects merge key by key, the rest replace.
    return Any if is_union(tp) else tp


def _key_json(item: dict[str, Any], keys: tuple[str, ...]) -> str:
    return orjson.dumps({k: item.get(k) for k in keys}, option=orjson.OPT_SORT_KEYS).decode()


def field_set(obj: Any, node: SchemaNode, prefix: FieldPath = ()) -> set[FieldPath]:
    """Every owned path in ``obj``: leaves, atomic lists, and items of keyed lists."""
    out: set[FieldPath] = set()
    if not isinstance(obj, dict):
        return out
    for name, value in obj.items():
        path = (*prefix, ("f", name))
        child = node.child(name)
        _collect(value, child, path, out)
    return out


def _collect(value: Any, node: SchemaNode, path: FieldPath, out: set[FieldPath]) -> None:
    if isinstance(value, dict) and node.kind in ("struct", "map", "any"):
        if not value:
            out.add(path)
        for name, sub in value.items():
            entry = (*path, ("f", name))
            if node.kind == "map":
                # A map entry is owned itself (as in structured-merge-diff), so dropping it
                # from an apply removes the whole entry, not just its leaves.
                out.add(entry)
            _collect(sub, node.child(name), entry, out)
    elif isinstance(value, list) and node.kind == "list" and node.list_type == "map":
        elem = node.elem or _ANY
        for item in value:
            if isinstance(item, dict):
                item_path = (*path, ("k", _key_json(item, node.keys)))
                out.add(item_path)
                for name, sub in item.items():
                    _collect(sub, elem.child(name), (*item_path, ("f", name)), out)
    elif isinstance(value, list) and node.kind == "list" and node.list_type == "set":
        for item in value:
            out.add((*path, ("v", orjson.dumps(item).decode())))
    else:
        out.add(path)


def _differs(old: Any, new: Any) -> bool:
    """Whether a field changed. An object on both sides changes only through its children."""
    if isinstance(old, dict) and isinstance(new, dict):
        return False
    return bool(old != new)


def value_at(obj: Any, path: FieldPath) -> Any:
    cur = obj
    for kind, text in path:
        if kind == "f":
            if not isinstance(cur, dict) or text not in cur:
                return _MISSING
            cur = cur[text]
        elif kind == "k":
            key = orjson.loads(text)
            if not isinstance(cur, list):
                return _MISSING
            for item in cur:
                if isinstance(item, dict) and all(item.get(k) == v for k, v in key.items()):
                    cur = item
                    break
            else:
                return _MISSING
        else:
            wanted = orjson.loads(text)
            if not isinstance(cur, list) or wanted not in cur:
                return _MISSING
            cur = wanted
    return cur


def _is_key_field(path: FieldPath) -> bool:
    """Whether ``path`` is a key field of a map-list item, e.g. a condition's ``type``."""
    if len(path) < 2 or path[-2][0] != "k" or path[-1][0] != "f":
        return False
    return path[-1][1] in orjson.loads(path[-2][1])


def remove_path(obj: Any, path: FieldPath) -> None:
    if not path:
        return
    parent = value_at(obj, path[:-1])
    kind, text = path[-1]
    if kind == "f" and isinstance(parent, dict):
        parent.pop(text, None)
    elif kind == "k" and isinstance(parent, list):
        key = orjson.loads(text)
        parent[:] = [
            i
            for i in parent
            if not (isinstance(i, dict) and all(i.get(k) == v for k, v in key.items()))
        ]
    elif kind == "v" and isinstance(parent, list):
        value = orjson.loads(text)
        parent[:] = [i for i in parent if i != value]


def merge(live: Any, config: Any, node: SchemaNode) -> Any:
    """Merge an applied configuration into the live object by the schema's rules."""
    if isinstance(config, dict) and node.kind in ("struct", "map", "any"):
        result = dict(live) if isinstance(live, dict) else {}
        for name, value in config.items():
            result[name] = merge(result.get(name, _MISSING), value, node.child(name))
        return result
    if (
        isinstance(config, list)
        and node.kind == "list"
        and node.list_type == "map"
        and isinstance(live, list)
    ):
        elem = node.elem or _ANY
        result_list = list(live)
        for item in config:
            if not isinstance(item, dict):
                continue
            key = _key_json(item, node.keys)
            for i, existing in enumerate(result_list):
                if isinstance(existing, dict) and _key_json(existing, node.keys) == key:
                    result_list[i] = merge(existing, item, elem)
                    break
            else:
                result_list.append(copy.deepcopy(item))
        return result_list
    if (
        isinstance(config, list)
        and node.kind == "list"
        and node.list_type == "set"
        and isinstance(live, list)
    ):
        return list(live) + [i for i in config if i not in live]
    return copy.deepcopy(config)


# -- FieldsV1 ----------------------------------------------------------------------


def encode_fields(paths: Iterable[FieldPath]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    members: list[FieldPath] = sorted(paths)
    for path in members:
        node = root
        for kind, text in path:
            node = node.setdefault(f"{kind}:{text}", {})
    for path in members:
        node = root
        for kind, text in path:
            node = node[f"{kind}:{text}"]
        if node:
            node["."] = {}
    return root


def decode_fields(tree: dict[str, Any], prefix: FieldPath = ()) -> set[FieldPath]:
    out: set[FieldPath] = set()
    for name, sub in tree.items():
        if name == ".":
            out.add(prefix)
            continue
        kind, _, text = name.partition(":")
        path = (*prefix, (kind, text))
        if isinstance(sub, dict) and sub:
            out |= decode_fields(sub, path)
        else:
            out.add(path)
    return out


def render_path(path: FieldPath) -> str:
    """A path as Kubernetes prints it in conflicts: ``.spec.x``, ``.status.conditions[type="A"]``."""
    out = ""
    for kind, text in path:
        if kind == "f":
            out += f".{text}"
        elif kind == "k":
            key = orjson.loads(text)
            out += "[" + ",".join(f"{k}={orjson.dumps(v).decode()}" for k, v in key.items()) + "]"
        else:
            out += f"[={text}]"
    return out


# -- managers ------------------------------------------------------------------------


@dataclass(frozen=True)
class Conflict:
    manager: str
    api_version: str
    path: FieldPath
    operation: str = "Apply"
    subresource: str = ""
    time: str = ""

    def owner(self) -> str:
        """The owning entry as Kubernetes names it: ``"mgr" [with subresource "s"] using
        group/version``, and `` at <time>`` for an Update entry that has a time."""
        text = _go_quote(self.manager)
        if self.subresource:
            text += f" with subresource {_go_quote(self.subresource)}"
        text += f" using {self.api_version}"
        if self.operation == "Update" and self.time:
            text += f" at {self.time}"
        return text


def conflict_message(conflicts: list[Conflict]) -> str:
    """The message of a 409 for ``conflicts``, in Kubernetes' words: one conflict on one
    line, several grouped under each owner (owners sorted), a ``- path`` line per field."""
    if len(conflicts) == 1:
        only = conflicts[0]
        return (
            f"Apply failed with 1 conflict: conflict with {only.owner()}: {render_path(only.path)}"
        )
    by_owner: dict[tuple[str, str, str, str, str], list[Conflict]] = {}
    for c in conflicts:
        key = (c.manager, c.operation, c.api_version, c.time, c.subresource)
        by_owner.setdefault(key, []).append(c)
    lines: list[str] = []
    for key in sorted(by_owner):
        group = by_owner[key]
        lines.append(f"conflicts with {group[0].owner()}:")
        lines.extend(f"- {render_path(c.path)}" for c in group)
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)


def _go_quote(text: str) -> str:
    """``text`` in double quotes as Go's %q writes a plain string."""
    return orjson.dumps(text).decode()


class ApplyConflictError(Exception):
    def __init__(self, conflicts: list[Conflict]) -> None:
        super().__init__(f"{len(conflicts)} conflicts")
        self.conflicts = conflicts


@dataclass
class _Entry:
    manager: str
    operation: str
    subresource: str
    api_version: str
    time: str
    fields: set[FieldPath]

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.manager, self.operation, self.subresource)

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": encode_fields(self.fields),
        }
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def _entries(obj: dict[str, Any]) -> list[_Entry]:
    entries = []
    for raw in obj.get("metadata", {}).get("managedFields") or []:
        if not isinstance(raw, dict):
            continue
        entries.append(
            _Entry(
                manager=str(raw.get("manager", "")),
                operation=str(raw.get("operation", "Update")),
                subresource=str(raw.get("subresource", "")),
                api_version=str(raw.get("apiVersion", "")),
                time=str(raw.get("time", "")),
                fields=decode_fields(raw.get("fieldsV1") or {}),
            )
        )
    return entries


class FieldManager:
    """Ownership bookkeeping for one kind; ``subresource`` scopes what a write may own."""

    def __init__(self, model: type[BaseModel], api_version: str, *, has_status: bool) -> None:
        self.schema = schema_of(model)
        self.api_version = api_version
        self.has_status = has_status

    def _tracked(self, obj: dict[str, Any], subresource: str) -> set[FieldPath]:
        paths = field_set(obj, self.schema)
        return {p for p in paths if self._is_tracked(p, subresource)}

    def _is_tracked(self, path: FieldPath, subresource: str) -> bool:
        top = path[0][1]
        if top in ("apiVersion", "kind"):
            return False
        if top == "metadata":
            if self.has_status and subresource == "status":
                return False  # the status endpoint resets metadata, as Kubernetes does
            return len(path) > 1 and path[1][1] not in _IGNORED_METADATA
        if self.has_status:
            return (top == "status") == (subresource == "status")
        return True

    def update(
        self,
        old: dict[str, Any] | None,
        new: dict[str, Any],
        manager: str,
        *,
        subresource: str = "",
        now: str,
    ) -> None:
        """Record a non-apply write in ``new``'s managedFields."""
        entries = _entries(old) if old is not None else []
        present = field_set(new, self.schema)
        new_fields = {p for p in present if self._is_tracked(p, subresource)}
        if old is None:
            changed = new_fields
        else:
            changed = {p for p in new_fields if _differs(value_at(old, p), value_at(new, p))}
        for entry in entries:
            entry.fields = {p for p in entry.fields if p in present} - changed
        if changed:
            mine = self._find(entries, manager, "Update", subresource)
            mine.fields |= changed
            mine.time = now
            mine.api_version = self.api_version
        self._store(new, entries)

    def apply(
        self,
        live: dict[str, Any] | None,
        config: dict[str, Any],
        manager: str,
        *,
        force: bool,
        subresource: str = "",
        now: str,
        normalized: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The object after applying ``config`` as ``manager``; raises ApplyConflictError.

        ``normalized``: ``config`` as the server would store it (canonical quantities, the
        values the server sets kept from ``live``); its values are what is compared with the
        live object's, so that a field the server set is no conflict. What the manager owns
        is what ``config`` names."""
        base = live if live is not None else {}
        entries = _entries(base)
        applied = self._tracked(config, subresource)
        compared = normalized if normalized is not None else config
        conflicts = []
        for entry in entries:
            if entry.identity == (manager, "Apply", subresource):
                continue
            for path in entry.fields & applied:
                if _differs(value_at(base, path), value_at(compared, path)):
                    conflicts.append(
                        Conflict(
                            entry.manager,
                            entry.api_version,
                            path,
                            entry.operation,
                            entry.subresource,
                            entry.time,
                        )
                    )
        if conflicts and not force:
            raise ApplyConflictError(sorted(conflicts, key=lambda c: (c.manager, c.path)))
        taken = {c.path for c in conflicts}
        mine = self._find(entries, manager, "Apply", subresource)
        dropped = mine.fields - applied
        merged: dict[str, Any] = merge(base, _tracked_part(config, self, subresource), self.schema)
        others = [e for e in entries if e is not mine]
        # A dropped field stays if another manager owns it or anything below it. Parents
        # go first (their children with them); key fields of a kept list item stay.
        still_owned = {p[:i] for e in others for p in e.fields for i in range(1, len(p) + 1)}
        for path in sorted(dropped, key=len):
            if path in still_owned or _is_key_field(path):
                continue
            if value_at(merged, path) is not _MISSING:
                remove_path(merged, path)
        for entry in others:
            entry.fields -= taken
        mine.fields = applied
        mine.time = now
        mine.api_version = self.api_version
        self._store(merged, entries)
        return merged

    @staticmethod
    def _find(entries: list[_Entry], manager: str, operation: str, subresource: str) -> _Entry:
        for entry in entries:
            if entry.identity == (manager, operation, subresource):
                return entry
        entry = _Entry(manager, operation, subresource, "", "", set())
        entries.append(entry)
        return entry

    @staticmethod
    def _store(obj: dict[str, Any], entries: list[_Entry]) -> None:
        kept = [e.to_json() for e in entries if e.fields]
        meta = obj.setdefault("metadata", {})
        if kept:
            meta["managedFields"] = kept
        else:
            meta.pop("managedFields", None)


def _tracked_part(
    config: dict[str, Any], manager: FieldManager, subresource: str
) -> dict[str, Any]:
    """The part of an applied configuration this endpoint may change."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key in ("apiVersion", "kind"):
            out[key] = value
        elif key == "metadata" and isinstance(value, dict):
            if manager.has_status and subresource == "status":
                continue
            out[key] = {
                k: v
                for k, v in value.items()
                if k not in _IGNORED_METADATA or k in ("name", "namespace")
            }
        elif manager.has_status and (key == "status") != (subresource == "status"):
            continue
        else:
            out[key] = value
    return out
