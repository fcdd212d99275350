"""JSON patch (RFC 6902) and JSON merge patch (RFC 7386) applied to stored objects.

The patch types the server accepts are listed here; strategic merge patch lives in
``strategicmerge`` (it needs the kind's schema), server-side apply in ``fieldmanager``.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import orjson

from ..api import field as fielderr
from ..toolkit import MERGE_PATCH, json_copy
from . import errors, integers
from .decoding import check_depth

MAX_JSON_PATCH_OPERATIONS = 10_000
MAX_JSON_PATCH_COPY_BYTES = 3 * 1024 * 1024
"""Limits that keep a small patch from building a huge object (as kube-apiserver's)."""

JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
SUPPORTED_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)


def decode_patch(body: bytes) -> Any:
    """The JSON of a patch body (400 when malformed, too deep, or holding an integer that
    does not fit in 64 bits), before its type's own shape is checked."""
    try:
        patch = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        integers.check_json(body, "the patch")  # an integer too long even for a float
        raise errors.bad_request(f"error decoding patch: {exc}") from exc
    check_depth(body, patch)
    integers.check_json(body, "the patch")
    return patch


def apply_json_patch(
    obj: dict[str, Any], body: bytes, kind: str, group: str, name: str
) -> dict[str, Any]:
    operations = decode_patch(body)
    if not isinstance(operations, list):
        raise errors.bad_request("a JSON patch must be an array of operations")
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise errors.too_large_patch(
            f"the JSON patch has {len(operations)} operations, more than the limit of"
            f" {MAX_JSON_PATCH_OPERATIONS}"
        )
    patched: Any = json_copy(obj)
    copied = 0
    for index, op in enumerate(operations):
        try:
            if isinstance(op, dict) and op.get("op") == "copy":
                # "copy" is the one operation that grows the object beyond the patch's own
                # bytes; doubling a value twenty times would take gigabytes.
                copied += len(
                    orjson.dumps(jsonpatch.JsonPointer(op.get("from", "")).resolve(patched))
                )
                if copied > MAX_JSON_PATCH_COPY_BYTES:
                    raise errors.too_large_patch(
                        f"the JSON patch copies more than {MAX_JSON_PATCH_COPY_BYTES} bytes"
                    )
            patched = jsonpatch.JsonPatch([op]).apply(patched, in_place=True)
        except (
            jsonpatch.JsonPatchException,
            jsonpatch.JsonPointerException,
            TypeError,
            KeyError,
        ) as exc:
            raise errors.invalid(
                kind,
                group,
                name,
                [fielderr.invalid("patch", _text(body), _operation_failed(index, op, exc))],
            ) from exc
    if not isinstance(patched, dict):
        raise errors.bad_request("the patch did not produce an object")
    return patched


def apply_merge_patch(obj: dict[str, Any], body: bytes) -> dict[str, Any]:
    patch = decode_patch(body)
    if not isinstance(patch, dict):
        raise errors.bad_request("a merge patch must be a JSON object")
    result = merge_patch(obj, patch)
    assert isinstance(result, dict)
    return result


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, ``null`` deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _operation_failed(index: int, op: Any, exc: Exception) -> str:
    """Why operation ``index`` could not be applied, in our words (the library's wording
    is not an API: it changes between releases)."""
    if not isinstance(op, dict):
        return f"operation {index} is not an object"
    what = f"operation {index} ({op.get('op')!s} {op.get('path')!s})"
    if isinstance(exc, jsonpatch.JsonPatchTestFailed):
        expected = orjson.dumps(op.get("value")).decode()
        return f"{what} failed: the value at that path is not {_short(expected)}"
    if isinstance(exc, jsonpatch.InvalidJsonPatch):
        return f"{what} is not a valid JSON patch operation"
    return f"{what} could not be applied: the path does not exist or cannot hold a value"


def _short(text: str) -> str:
    return text if len(text) <= 200 else text[:197] + "..."


def _text(body: bytes) -> str:
    return _short(body.decode("utf-8", "replace"))
