"""OpenAPI v2 and v3 documents generated from the kinds' pydantic models.

Good enough for ``kubectl explain`` (v3 paths and schemas tagged with
``x-kubernetes-group-version-kind``), for kubectl's server-side field validation
(``fieldValidation`` declared on PATCH) and for client generators. The patch types
advertised are the ones implemented: JSON patch, merge patch, strategic merge patch (with
``x-kubernetes-patch-strategy``/``-merge-key`` on the lists that merge) and apply.

Schemas are rewritten from pydantic's JSON Schema into the OpenAPI dialect Kubernetes
uses: definitions named ``io.k8s.api.<group>.<version>.<Type>``, ``$ref`` with siblings
wrapped in ``allOf``, nullable unions collapsed, quantities as ``Quantity``. The v2 document
then writes a field's reference as kube-apiserver's own v2 does: a plain ``$ref`` with its
description beside it (see ``_plain_refs``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel

from ..toolkit import MERGE_PATCH
from .openapidocs import one_description_per_field
from .patching import APPLY_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH
from .resource import ResourceType

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_META_MODULE = "apiserver.api.meta"


@dataclass(frozen=True)
class ServedKind:
    resource: ResourceType
    model: type[BaseModel]
    has_status: bool
    create_rate_limited: bool = False


def _group_prefix(group: str) -> str:
    base = group.split(".")[0] if group.endswith(".k8s.io") else group
    return "io.k8s.api." + (base or "core")


def _schema_names(kind: ServedKind, defs: dict[str, Any]) -> dict[str, str]:
    """Map pydantic definition names to Kubernetes-style qualified names."""
    prefix = f"{_group_prefix(kind.resource.group)}.{kind.resource.version}"
    modules = _model_modules(kind.model)
    names = {}
    for name in defs:
        module = modules.get(name, "")
        names[name] = f"{META}.{name}" if module == _META_MODULE else f"{prefix}.{name}"
    return names


def _model_modules(model: type[BaseModel]) -> dict[str, str]:
    """Class name -> module of every model reachable from ``model``."""
    seen: dict[str, str] = {}

    def visit(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp.__name__ in seen:
                return
            seen[tp.__name__] = tp.__module__
            for info in tp.model_fields.values():
                visit(info.annotation)
        for arg in getattr(tp, "__args__", ()) or ():
            visit(arg)

    visit(model)
    return seen


def _convert(node: Any, names: dict[str, str], ref_base: str) -> Any:
    """Rewrite one pydantic JSON Schema node into the Kubernetes OpenAPI dialect."""
    if isinstance(node, list):
        return [_convert(n, names, ref_base) for n in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    any_of = node.pop("anyOf", None)
    if any_of is not None:
        options = [o for o in any_of if o != {"type": "null"}]
        if len(options) == 1:
            merged = dict(options[0])
            for key, value in node.items():
                merged.setdefault(key, value)
            node = merged
        else:
            node["anyOf"] = options
    if node.get("x-k8s-quantity"):
        quantity = {"$ref": ref_base + QUANTITY}
        if node.get("description"):
            return {"allOf": [quantity], "description": node["description"]}
        return quantity
    for drop in (
        ("title", "additionalProperties")
        if node.get("additionalProperties") is False
        else ("title",)
    ):
        node.pop(drop, None)
    if "default" in node and node["default"] is None:
        node.pop("default")
    if "const" in node:  # neither OpenAPI 3.0 nor Swagger 2.0 has const: a one-value enum
        node["enum"] = [node.pop("const")]
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref":
            out[key] = ref_base + names[value.rsplit("/", 1)[-1]]
        elif key in ("properties", "$defs"):
            out[key] = {k: _convert(v, names, ref_base) for k, v in value.items()}
        else:
            out[key] = _convert(value, names, ref_base)
    if out.get("type") == "integer":
        out.setdefault("format", "int64")
    out.update(_patch_strategy(out))
    if "$ref" in out and len(out) > 1:
        ref = out.pop("$ref")
        out = {"allOf": [{"$ref": ref}], **out}
    return out


def _patch_strategy(node: dict[str, Any]) -> dict[str, Any]:
    """The strategic-merge extensions implied by a list's type (see ``strategicmerge``)."""
    list_type = node.get("x-kubernetes-list-type")
    keys = node.get("x-kubernetes-list-map-keys") or []
    if list_type == "map" and len(keys) == 1:
        return {"x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": keys[0]}
    if list_type == "set":
        return {"x-kubernetes-patch-strategy": "merge"}
    return {}


def _kind_schemas(kind: ServedKind, ref_base: str) -> dict[str, Any]:
    raw = kind.model.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    defs = raw.pop("$defs", {})
    defs[kind.model.__name__] = raw
    names = _schema_names(kind, defs)
    schemas = {names[n]: _convert(s, names, ref_base) for n, s in defs.items()}
    resource = kind.resource
    gvk = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    top = schemas[names[kind.model.__name__]]
    top["x-kubernetes-group-version-kind"] = [gvk]
    top.setdefault("required", [])
    list_name = f"{_group_prefix(resource.group)}.{resource.version}.{resource.list_kind}"
    schemas[list_name] = {
        "description": f"{resource.list_kind} is a collection of {resource.kind} objects.",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion of this representation."},
            "kind": {"type": "string", "description": "Kind of this representation."},
            "items": {
                "type": "array",
                "description": f"Items is the list of {resource.kind} objects.",
                "items": {"$ref": ref_base + names[kind.model.__name__]},
            },
            "metadata": {
                "allOf": [{"$ref": ref_base + f"{META}.ListMeta"}],
                "description": "Standard list metadata.",
            },
        },
        "x-kubernetes-group-version-kind": [{**gvk, "kind": resource.list_kind}],
    }
    return schemas


def _common_schemas(ref_base: str) -> dict[str, Any]:
    return {
        QUANTITY: {
            "description": "A fixed-point number, like 80Gi, 500m or 4; also accepted as a JSON number.",
            "type": "string",
        },
        f"{META}.ListMeta": {
            "description": "Metadata of a list: its resourceVersion and continue token.",
            "type": "object",
            "properties": {
                "continue": {"type": "string", "description": "Token to request the next page."},
                "remainingItemCount": {
                    "type": "integer",
                    "format": "int64",
                    "description": "How many items are left after this page, when known.",
                },
                "resourceVersion": {"type": "string", "description": "Version of the collection."},
                "selfLink": {
                    "type": "string",
                    "description": "Deprecated; not set by this server.",
                },
            },
        },
        f"{META}.Status": {
            "description": "The result of an operation that does not return an object, and every error.",
            "type": "object",
            "properties": {
                "apiVersion": {
                    "type": "string",
                    "description": "APIVersion of this representation.",
                },
                "kind": {"type": "string", "description": "Kind of this representation."},
                "code": {
                    "type": "integer",
                    "format": "int32",
                    "description": "The HTTP status code of the answer.",
                },
                "details": {
                    "type": "object",
                    "description": "What the error is about: name, group, kind, and its causes.",
                },
                "message": {"type": "string", "description": "What happened, for a human."},
                "metadata": {
                    "allOf": [{"$ref": ref_base + f"{META}.ListMeta"}],
                    "description": "Standard list metadata.",
                },
                "reason": {
                    "type": "string",
                    "description": "Why the operation failed, as a CamelCase word (e.g. NotFound).",
                },
                "status": {"type": "string", "description": "Success or Failure."},
            },
            "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Status"}],
        },
    }


def _param(name: str, description: str, schema_type: str = "string") -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": {"type": schema_type, "uniqueItems": True},
    }


_DRY_RUN = _param(
    "dryRun", "When present, modifications are not persisted. The only valid value is All."
)
_FIELD_MANAGER = _param(
    "fieldManager", "A name for the actor making the change, for field ownership."
)
_FIELD_VALIDATION = _param(
    "fieldValidation", "How to treat unknown fields in the body: Ignore, Warn (default) or Strict."
)
_FORCE = _param("force", "Force an apply to take over conflicting fields.", "boolean")
_LIST_PARAMS = [
    _param("allowWatchBookmarks", "Ask for BOOKMARK events in a watch.", "boolean"),
    _param("continue", "Token from a previous page of results."),
    _param("fieldSelector", "Restrict results by fields, e.g. metadata.name=x."),
    _param("labelSelector", "Restrict results by labels."),
    _param("limit", "Maximum number of results in a page.", "integer"),
    _param("resourceVersion", "Where a list or watch starts; see the Kubernetes API concepts."),
    _param("resourceVersionMatch", "How resourceVersion applies to a list: Exact or NotOlderThan."),
    _param(
        "sendInitialEvents",
        "Stream the current state as ADDED events first (watch-list).",
        "boolean",
    ),
    _param("timeoutSeconds", "Timeout of a list or watch call.", "integer"),
    _param("watch", "Watch for changes instead of listing.", "boolean"),
]


_ERROR_TEXT = {
    "400": "BadRequest: a malformed body or query parameter",
    "401": "Unauthorized",
    "403": "Forbidden: the user may not do this (authorization), or a policy refuses it (e.g."
    " deleting a system namespace, creating in a terminating one)",
    "404": "NotFound (for a create: the namespace does not exist)",
    "406": "NotAcceptable: no representation in the Accept header can be served",
    "409": "Conflict or AlreadyExists (a stale resourceVersion, a failed precondition, an"
    " apply conflict)",
    "410": "Expired: the resourceVersion or continue token is older than the kept history",
    "413": "RequestEntityTooLarge: the body is over 3 MiB",
    "415": "UnsupportedMediaType: the body is in a media type the operation does not take",
    "422": "Invalid: the object or the options fail validation (e.g. sendInitialEvents"
    " without watch), with a cause per field",
    "429": "TooManyRequests: over the per-user creation limit; see Retry-After",
}
_BODY_ERRORS = ("413", "415")
_ERRORS: dict[str, tuple[str, ...]] = {
    # What each action answers besides success (server failures, 5xx, aside). Every request
    # may get 400 for a bad query parameter, 401 and 403; every answer is negotiated (406).
    "get": ("400", "401", "403", "404", "406"),
    "list": ("400", "401", "403", "404", "406", "410", "422"),  # 422: options that clash
    "post": ("400", "401", "403", "404", "406", "409", *_BODY_ERRORS, "422"),
    "put": ("400", "401", "403", "404", "406", "409", *_BODY_ERRORS, "422"),
    "patch": ("400", "401", "403", "404", "406", "409", *_BODY_ERRORS, "422"),
    "delete": ("400", "401", "403", "404", "406", "409", *_BODY_ERRORS, "422"),
    "deletecollection": ("400", "401", "403", "404", "406", "410", *_BODY_ERRORS, "422"),
}
_SUCCESS: dict[str, tuple[str, ...]] = {"post": ("201",), "patch": ("200", "201")}
"""Success codes other than 200: a create answers 201, as does an apply that creates."""


def _responses(
    action: str, ref: str, status_ref: str, *, rate_limited: bool
) -> dict[str, dict[str, Any]]:
    responses: dict[str, dict[str, Any]] = {}
    for code in _SUCCESS.get(action, ("200",)):
        responses[code] = {
            "description": "Created" if code == "201" else "OK",
            "content": {"application/json": {"schema": {"$ref": ref}}},
        }
    codes = _ERRORS[action] + (("429",) if rate_limited and action == "post" else ())
    for code in codes:
        responses[code] = {
            "description": _ERROR_TEXT[code],
            "content": {"application/json": {"schema": {"$ref": status_ref}}},
        }
    return responses


def _operation(
    resource: ResourceType,
    action: str,
    op_id: str,
    ref: str,
    *,
    params: list[dict[str, Any]],
    body: list[str] | None = None,
    rate_limited: bool = False,
) -> dict[str, Any]:
    status_ref = ref[: ref.rindex("/") + 1] + f"{META}.Status"
    op: dict[str, Any] = {
        "operationId": op_id,
        "tags": [f"{resource.group or 'core'}_{resource.version}"],
        "parameters": params,
        "responses": _responses(action, ref, status_ref, rate_limited=rate_limited),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {
            "group": resource.group,
            "version": resource.version,
            "kind": resource.kind,
        },
    }
    if body:
        op["requestBody"] = {
            "required": True,
            "content": {t: {"schema": {"$ref": ref}} for t in body},
        }
    return op


_JSON_AND_YAML = ["application/json", "application/yaml"]
_PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH]
_WRITE_PARAMS = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
_NAMESPACE_PARAM = {
    "name": "namespace",
    "in": "path",
    "required": True,
    "description": "object name and auth scope",
    "schema": {"type": "string"},
}
_COLLECTION_VERBS = {"get": "list", "post": "create", "delete": "deletecollection"}
_OBJECT_VERBS = {"get": "get", "put": "update", "patch": "patch", "delete": "delete"}
"""The verb each HTTP method of a path item serves: the kind's verbs say which it keeps."""


@dataclass(frozen=True)
class _KindPaths:
    """What the operations of one kind's paths are written from: its resource, the
    references they answer with, and the kind as operation ids spell it."""

    resource: ResourceType
    model_ref: str
    list_ref: str
    status_ref: str
    op_kind: str

    @classmethod
    def of(cls, kind: ServedKind, ref_base: str) -> _KindPaths:
        resource = kind.resource
        prefix = f"{ref_base}{_group_prefix(resource.group)}.{resource.version}"
        # Operation ids are unique across the document: a kind served in several versions
        # names the version in those of the versions it is not stored in.
        op_kind = resource.kind
        if resource.stored_version != resource.version:
            op_kind = resource.version.capitalize() + op_kind
        return cls(
            resource,
            model_ref=f"{prefix}.{kind.model.__name__}",
            list_ref=f"{prefix}.{resource.list_kind}",
            status_ref=ref_base + f"{META}.Status",
            op_kind=op_kind,
        )

    @property
    def root(self) -> str:
        """The API root the kind is served under: ``/apis/<group>/<version>`` or ``/api/v1``."""
        resource = self.resource
        if resource.group:
            return f"/apis/{resource.group}/{resource.version}"
        return f"/api/{resource.version}"

    @property
    def name_param(self) -> dict[str, Any]:
        return {
            "name": "name",
            "in": "path",
            "required": True,
            "description": f"name of the {self.resource.kind}",
            "schema": {"type": "string"},
        }


def _served_only(
    item: dict[str, Any], verb_of: dict[str, str], verbs: Collection[str]
) -> dict[str, Any]:
    """``item`` with only the operations the kind is served for (a computed kind reads, a
    review kind only creates)."""
    return {
        key: value for key, value in item.items() if key == "parameters" or verb_of[key] in verbs
    }


def _collection_item(
    paths: _KindPaths, scope: list[dict[str, Any]], suffix: str, *, rate_limited: bool
) -> dict[str, Any]:
    """The collection's path item: list (and watch), create, delete a collection."""
    resource, k = paths.resource, paths.op_kind
    return {
        "parameters": scope,
        "get": _operation(
            resource, "list", f"list{suffix}{k}", paths.list_ref, params=_LIST_PARAMS
        ),
        "post": _operation(
            resource,
            "post",
            f"create{suffix}{k}",
            paths.model_ref,
            params=_WRITE_PARAMS,
            body=_JSON_AND_YAML,
            rate_limited=rate_limited,
        ),
        "delete": _operation(
            resource,
            "deletecollection",
            f"deleteCollection{suffix}{k}",
            paths.status_ref,
            params=[_DRY_RUN, *_LIST_PARAMS],
        ),
    }


def _object_item(
    paths: _KindPaths, scope: list[dict[str, Any]], suffix: str, *, status: bool = False
) -> dict[str, Any]:
    """One object's path item (read, replace, patch, delete), or with ``status`` its status
    subresource's (read, replace with a JSON body only, patch)."""
    resource, model_ref = paths.resource, paths.model_ref
    name = f"{suffix}{paths.op_kind}{'Status' if status else ''}"
    item = {
        "parameters": [paths.name_param, *scope],
        "get": _operation(resource, "get", f"read{name}", model_ref, params=[]),
        "put": _operation(
            resource,
            "put",
            f"replace{name}",
            model_ref,
            params=_WRITE_PARAMS,
            body=["application/json"] if status else _JSON_AND_YAML,
        ),
        "patch": _operation(
            resource,
            "patch",
            f"patch{name}",
            model_ref,
            params=[*_WRITE_PARAMS, _FORCE],
            body=_PATCH_TYPES,
        ),
    }
    if not status:
        deleted_ref = model_ref if resource.returns_deleted_object else paths.status_ref
        item["delete"] = _operation(
            resource, "delete", f"delete{name}", deleted_ref, params=[_DRY_RUN]
        )
    return item


def _paths(kind: ServedKind, ref_base: str) -> dict[str, Any]:
    """Every path one kind is served under, with the operations it is served for."""
    paths = _KindPaths.of(kind, ref_base)
    resource = paths.resource
    if resource.namespaced:
        base = f"{paths.root}/namespaces/{{namespace}}/{resource.plural}"
        scope, suffix = [_NAMESPACE_PARAM], "Namespaced"
    else:
        base, scope, suffix = f"{paths.root}/{resource.plural}", [], ""
    collection = _collection_item(paths, scope, suffix, rate_limited=kind.create_rate_limited)
    out = {base: _served_only(collection, _COLLECTION_VERBS, resource.verbs)}
    item = _served_only(_object_item(paths, scope, suffix), _OBJECT_VERBS, resource.verbs)
    if len(item) > 1:
        out[f"{base}/{{name}}"] = item
    if kind.has_status:
        out[f"{base}/{{name}}/status"] = _object_item(paths, scope, suffix, status=True)
    if resource.namespaced and "list" in resource.verbs:
        out[f"{paths.root}/{resource.plural}"] = {
            "get": _operation(
                resource,
                "list",
                f"list{paths.op_kind}ForAllNamespaces",
                paths.list_ref,
                params=_LIST_PARAMS,
            )
        }
    return out


def _schemas_and_paths(
    kinds: Iterable[ServedKind], ref_base: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The schemas (the common ones and each kind's, one description per field) and the
    paths of ``kinds``, in the v3 shape."""
    schemas: dict[str, Any] = _common_schemas(ref_base)
    paths: dict[str, Any] = {}
    for kind in kinds:
        schemas.update(_kind_schemas(kind, ref_base))
        paths.update(_paths(kind, ref_base))
    one_description_per_field(schemas)
    return schemas, paths


def v3_document(kinds: Iterable[ServedKind], title: str) -> dict[str, Any]:
    schemas, paths = _schemas_and_paths(kinds, "#/components/schemas/")
    return {
        "openapi": "3.0.0",
        "info": {"title": title, "version": "v0.1.0"},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def v2_document(kinds: Iterable[ServedKind], title: str) -> dict[str, Any]:
    """Swagger 2.0: the same content, with parameters and bodies in the v2 shape."""
    definitions, v3_paths = _schemas_and_paths(kinds, "#/definitions/")
    paths = {
        path: {
            verb: _v2_operation(op) if verb != "parameters" else [_v2_param(p) for p in op]
            for verb, op in item.items()
        }
        for path, item in v3_paths.items()
    }
    document: dict[str, Any] = {
        "swagger": "2.0",
        "info": {"title": title, "version": "v0.1.0"},
        "paths": dict(sorted(paths.items())),
        "definitions": dict(sorted(definitions.items())),
    }
    plain: dict[str, Any] = _plain_refs(document)
    return plain


_ANNOTATIONS = frozenset({"description", "default", "readOnly", "example"})
"""Keywords that only annotate a field: beside a plain ``$ref`` they change nothing about
which schema the field has, so v2 needs no ``allOf`` to carry them."""

_DATA = frozenset({"default", "enum", "example"})
_NAMED = frozenset({"properties", "definitions"})
"""Maps from a name (a field's, a definition's) to a schema: any name may appear there."""


def _plain_refs(node: Any) -> Any:
    """``{"allOf": [{"$ref": X}], "description": ...}`` written as ``{"$ref": X,
    "description": ...}``, at any depth.

    That is the shape kube-apiserver publishes in v2 (its v3 uses ``allOf``), and the only
    one kubectl 1.28 reads: its OpenAPI v2 parser (kube-openapi of that release) finds no
    schema behind a field written with ``allOf``, and its strategic-merge diff, which the
    second client-side apply and ``kubectl diff`` compute, panics on the missing schema. A
    field whose ``allOf`` holds more than one schema, or whose siblings shape the value
    (type, properties, ...), keeps its ``allOf``.
    """
    if isinstance(node, list):
        return [_plain_refs(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _NAMED and isinstance(value, dict):
            out[key] = {name: _plain_refs(schema) for name, schema in value.items()}
        elif key in _DATA or key.startswith("x-"):
            out[key] = value  # data (a default, an enum's members, an extension): as written
        else:
            out[key] = _plain_refs(value)
    all_of = out.get("allOf")
    siblings = [key for key in out if key != "allOf"]
    if (
        isinstance(all_of, list)
        and len(all_of) == 1
        and isinstance(all_of[0], dict)
        and list(all_of[0]) == ["$ref"]
        and all(key in _ANNOTATIONS or key.startswith("x-") for key in siblings)
    ):
        del out["allOf"]
        out = {"$ref": all_of[0]["$ref"], **out}
    return out


def _v2_param(param: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in param.items() if k != "schema"}
    out["type"] = param.get("schema", {}).get("type", "string")
    if out["type"] == "string":
        out["uniqueItems"] = True
    return out


def _v2_operation(op: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in op.items() if k not in ("requestBody", "responses", "parameters")}
    params = [_v2_param(p) for p in op.get("parameters", [])]
    body = op.get("requestBody")
    if body:
        content = body["content"]
        out["consumes"] = list(content)
        params.append(
            {
                "name": "body",
                "in": "body",
                "required": True,
                "schema": next(iter(content.values()))["schema"],
            }
        )
    out["parameters"] = params
    out["produces"] = ["application/json"]
    out["schemes"] = ["https"]
    out["responses"] = {
        code: {
            "description": response["description"],
            "schema": response["content"]["application/json"]["schema"],
        }
        for code, response in op["responses"].items()
    }
    return out


def encode(document: dict[str, Any]) -> tuple[bytes, str]:
    """Deterministic bytes (the same on every replica) and their upper-case SHA-512 hash."""
    body = orjson.dumps(document, option=orjson.OPT_SORT_KEYS)
    return body, hashlib.sha512(body).hexdigest().upper()
