"""HTTP handling of resource requests, for every kind: parse, dispatch, encode.

Requests arrive as ``/apis/<group>/<version>/...`` (or ``/api/v1/...``); the path and
method say which verb of which registry to call; query parameters and headers become
typed options; the answer is built from stored JSON bytes wherever the client wants the
object as stored, and from dicts only for Tables and metadata-only views.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from ..api import field as fielderr
from ..api import meta
from ..storage import StoredObject
from . import errors, queryparams
from .decoding import FieldValidation, check_object, decode_body, media_type
from .negotiation import Shape, negotiate
from .patching import APPLY_PATCH, SUPPORTED_PATCH_TYPES
from .registry import DeleteOptions, ListOptions, ListResult, Registry, WriteOptions, WriteResult
from .requestinfo import RequestInfo, allowed_methods, parse_request
from .selectors import parse_field_selector, parse_label_selector
from .table import partial_object_metadata, table
from .warningheader import warning_headers
from .watch import INITIAL_EVENTS_END, WatchItem, WatchRequest, WatchStream

JSON = "application/json"
MAX_BODY_BYTES = 3 * 1024 * 1024
FIELD_MANAGER_MAX = 128


def json_response(
    body: bytes, code: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(body, status_code=code, media_type=JSON, headers=dict(headers or {}))


def status_response(err: errors.StatusError) -> Response:
    return json_response(err.body(), err.code, err.headers)


class ResourceHandler:
    """Routes resource requests of one or more group-versions to their registries."""

    def __init__(
        self,
        registries: Mapping[tuple[str, str, str], Registry],
        *,
        max_body_bytes: int = MAX_BODY_BYTES,
        min_request_timeout: float = 1800.0,
        bookmark_interval: float = 60.0,
    ) -> None:
        self.registries = dict(registries)
        self.max_body_bytes = max_body_bytes
        self.min_request_timeout = min_request_timeout
        self.bookmark_interval = bookmark_interval

    async def handle(
        self, request: Request, group: str, version: str, segments: list[str]
    ) -> Response:
        try:
            queryparams.check(request.query_params)
            info = parse_request(
                request.method,
                segments,
                watch_param="true" if queryparams.flag(request.query_params, "watch") else None,
            )
            registry = self.registries.get((group, version, info.resource))
            if registry is None or (
                info.namespace is not None and not registry.resource.namespaced
            ):
                raise errors.StatusError(
                    404, "NotFound", "the server could not find the requested resource"
                )
            self._check_subresource(registry, info)
            if registry.resource.read_only and info.verb not in registry.resource.verbs:
                raise errors.method_not_allowed(info.verb, info.resource)
            return await self._dispatch(request, registry, info)
        except errors.StatusError as err:
            if err.code == 405:
                err.headers.setdefault("Allow", self._allow(group, version, segments))
            return status_response(err)

    def _allow(self, group: str, version: str, segments: list[str]) -> str:
        info = parse_request("GET", segments, watch_param=None)  # the URL's shape only
        registry = self.registries.get((group, version, info.resource))
        return allowed_methods(info, read_only=registry is not None and registry.resource.read_only)

    @staticmethod
    def _check_subresource(registry: Registry, info: RequestInfo) -> None:
        if info.subresource is None:
            return
        if info.subresource != "status" or not registry.strategy.has_status:
            raise errors.StatusError(
                404, "NotFound", "the server could not find the requested resource"
            )
        if info.verb not in ("get", "update", "patch"):
            raise errors.method_not_allowed(info.verb, f"{info.resource}/{info.subresource}")

    async def _dispatch(self, request: Request, registry: Registry, info: RequestInfo) -> Response:
        namespace = info.namespace
        if info.verb == "get":
            assert info.name is not None
            shape = negotiate(request.headers.get("accept"), collection=False)
            stored = await registry.get(namespace, info.name)
            return self._object(request, registry, stored, shape)
        if info.verb == "list":
            shape = negotiate(request.headers.get("accept"), collection=True)
            opts = parse_list_options(request, registry, watch=False)
            return self._list(request, registry, await registry.list(namespace, opts), shape)
        if info.verb == "watch":
            shape = negotiate(request.headers.get("accept"), collection=True, watch=True)
            return await self._watch(request, registry, namespace, shape)
        if info.verb == "create":
            shape = _answer_shape(request)  # refused now, not after the object is stored
            write = parse_write_options(request, apply=False)
            body = decode_body(await self._body(request), request.headers.get("content-type"))
            result = await registry.create(
                namespace, body, write, user_agent=request.headers.get("user-agent", "")
            )
            return self._written(request, registry, result, shape)
        if info.verb == "update":
            assert info.name is not None
            shape = _answer_shape(request)
            write = parse_write_options(request, apply=False)
            body = decode_body(await self._body(request), request.headers.get("content-type"))
            result = await registry.update(
                namespace,
                info.name,
                body,
                write,
                subresource=info.subresource or "",
                user_agent=request.headers.get("user-agent", ""),
            )
            return self._written(request, registry, result, shape)
        if info.verb == "patch":
            assert info.name is not None
            return await self._patch(request, registry, info)
        if info.verb == "delete":
            assert info.name is not None
            shape = _answer_shape(request)
            result = await registry.delete(
                namespace, info.name, await self._delete_options(request)
            )
            if result.deleted:
                return json_response(orjson.dumps(_success(registry, result.obj)))
            return self._written(request, registry, result, shape)
        if info.verb == "deletecollection":
            shape = negotiate(request.headers.get("accept"), collection=True)
            _include_object(request)
            opts = parse_list_options(request, registry, watch=False)
            deleted = await registry.delete_collection(
                namespace, opts, await self._delete_options(request)
            )
            return self._list(
                request, registry, ListResult(deleted, registry.store.revision), shape
            )
        raise errors.method_not_allowed(info.verb, info.resource)

    # -- bodies and options ------------------------------------------------------

    async def _body(self, request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise errors.too_large(self.max_body_bytes)
        chunks = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body_bytes:
                raise errors.too_large(self.max_body_bytes)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _patch(self, request: Request, registry: Registry, info: RequestInfo) -> Response:
        assert info.name is not None
        patch_type = media_type(request.headers.get("content-type"))
        if patch_type not in SUPPORTED_PATCH_TYPES:
            raise errors.unsupported_media_type(patch_type, SUPPORTED_PATCH_TYPES)
        apply = patch_type == APPLY_PATCH
        shape = _answer_shape(request)
        opts = parse_write_options(request, apply=apply)
        body = await self._body(request)
        config = decode_body(body, "application/yaml") if apply else None
        if not body.strip():
            raise errors.bad_request("the patch is empty")
        result = await registry.patch(
            info.namespace,
            info.name,
            body,
            patch_type,
            opts,
            subresource=info.subresource or "",
            user_agent=request.headers.get("user-agent", ""),
            apply_config=config,
        )
        return self._written(request, registry, result, shape)

    async def _delete_options(self, request: Request) -> DeleteOptions:
        """DeleteOptions from the body (checked against its model) or the query."""
        body = await self._body(request)
        options = meta.DeleteOptions()
        if body.strip():
            raw = decode_body(body, request.headers.get("content-type"))
            parsed, _unknown, problems = check_object(raw, meta.DeleteOptions)
            if parsed is None:
                raise errors.bad_request(
                    "the DeleteOptions in the request body are invalid: "
                    + "; ".join(str(p) for p in problems),
                    [
                        {"reason": p.type.reason, "message": p.message(), "field": p.field}
                        for p in problems
                    ],
                )
            options = parsed
        dry_run = options.dry_run or request.query_params.getlist("dryRun")
        _check_dry_run(dry_run)
        policy = options.propagation_policy or request.query_params.get("propagationPolicy")
        if policy is not None and policy not in ("Orphan", "Background", "Foreground"):
            raise errors.invalid(
                "DeleteOptions",
                "meta.k8s.io",
                "",
                [
                    fielderr.not_supported(
                        "propagationPolicy", policy, ["Foreground", "Background", "Orphan"]
                    )
                ],
            )
        pre = options.preconditions or meta.Preconditions()
        return DeleteOptions(
            dry_run=bool(dry_run),
            precondition_uid=pre.uid,
            precondition_resource_version=pre.resource_version,
        )

    # -- encoding ------------------------------------------------------------------

    def _written(
        self, request: Request, registry: Registry, result: WriteResult, shape: Shape
    ) -> Response:
        """The answer to a write that has happened: nothing here may fail on the client's
        input, or a stored write would be reported as a failure (and its retry conflict).
        ``shape`` and the query were checked before the write."""
        response = self._object(request, registry, result.obj, shape, code=result.code)
        for header in warning_headers(result.warnings):
            response.headers.append("Warning", header)
        return response

    def _object(
        self,
        request: Request,
        registry: Registry,
        stored: StoredObject,
        shape: Shape,
        code: int = 200,
    ) -> Response:
        if shape is Shape.OBJECT:
            return json_response(stored.raw, code)
        if shape is Shape.METADATA:
            return json_response(orjson.dumps(partial_object_metadata(stored.obj)), code)
        include = _include_object(request)
        meta = {"resourceVersion": stored.obj.get("metadata", {}).get("resourceVersion", "")}
        return json_response(
            orjson.dumps(
                table(
                    registry.strategy.table_columns(),
                    [stored.obj],
                    include_object=include,
                    list_meta=meta,
                )
            ),
            code,
        )

    def _list(
        self, request: Request, registry: Registry, result: ListResult, shape: Shape
    ) -> Response:
        meta: dict[str, Any] = {"resourceVersion": str(result.revision)}
        if result.continue_token:
            meta["continue"] = result.continue_token
        if shape is Shape.OBJECT:
            head = orjson.dumps(
                {
                    "kind": registry.resource.list_kind,
                    "apiVersion": registry.resource.group_version,
                    "metadata": meta,
                }
            )
            body = head[:-1] + b',"items":[' + b",".join(i.raw for i in result.items) + b"]}"
            return json_response(body)
        if shape is Shape.METADATA:
            return json_response(
                orjson.dumps(
                    {
                        "kind": "PartialObjectMetadataList",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": meta,
                        "items": [partial_object_metadata(i.obj) for i in result.items],
                    }
                )
            )
        include = _include_object(request)
        return json_response(
            orjson.dumps(
                table(
                    registry.strategy.table_columns(),
                    (i.obj for i in result.items),
                    include_object=include,
                    list_meta=meta,
                )
            )
        )

    async def _watch(
        self, request: Request, registry: Registry, namespace: str | None, shape: Shape
    ) -> Response:
        opts = parse_list_options(request, registry, watch=True)
        params = request.query_params
        timeout = queryparams.count(params, "timeoutSeconds")
        if timeout is None:
            timeout = int(self.min_request_timeout)
        watch_request = WatchRequest(
            opts,
            send_initial_events=queryparams.boolean(params, "sendInitialEvents"),
            allow_bookmarks=queryparams.flag(params, "allowWatchBookmarks"),
            timeout_seconds=float(timeout),
            bookmark_interval=self.bookmark_interval,
        )
        stream = await WatchStream.open(registry, namespace, watch_request)
        include = _include_object(request) if shape is Shape.TABLE else "Metadata"

        async def body() -> AsyncGenerator[bytes, None]:
            first = True
            async with contextlib.aclosing(stream.items()) as items:
                async for item in items:
                    yield _encode_event(item, registry, shape, include, first)
                    if item.obj is not None:
                        first = False

        return _ClosingStreamingResponse(
            body(), media_type=JSON, headers={"Cache-Control": "no-cache, private"}
        )


class _ClosingStreamingResponse(StreamingResponse):
    """Closes its body when the response ends, however it ends: a client that went away
    stops the watch behind the body at once, not whenever the generator is collected."""

    def __init__(self, content: AsyncGenerator[bytes, None], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._content = content

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._content.aclose()


def _encode_event(
    item: WatchItem, registry: Registry, shape: Shape, include: str, first: bool
) -> bytes:
    head = b'{"type":"' + item.type.encode() + b'","object":'
    if item.error is not None:
        return head + item.error.body() + b"}\n"
    if item.obj is None:
        meta: dict[str, Any] = {"resourceVersion": str(item.revision)}
        if item.initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        if shape is Shape.OBJECT:
            bookmark = {
                "kind": registry.resource.kind,
                "apiVersion": registry.resource.group_version,
                "metadata": meta,
            }
        else:
            bookmark = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": meta,
            }
        return head + orjson.dumps(bookmark) + b"}\n"
    if shape is Shape.OBJECT:
        return head + item.obj.raw + b"}\n"
    if shape is Shape.METADATA:
        return head + orjson.dumps(partial_object_metadata(item.obj.obj)) + b"}\n"
    rows = table(
        registry.strategy.table_columns(),
        [item.obj.obj],
        include_object=include,
        list_meta={"resourceVersion": str(item.obj.revision)},
        with_headers=first,
    )
    return head + orjson.dumps(rows) + b"}\n"


def _success(registry: Registry, deleted: StoredObject) -> dict[str, Any]:
    details: dict[str, Any] = {
        "name": deleted.obj["metadata"].get("name"),
        "kind": registry.resource.plural,
    }
    if registry.resource.group:
        details["group"] = registry.resource.group
    if deleted.obj["metadata"].get("uid"):
        details["uid"] = deleted.obj["metadata"]["uid"]
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


# -- query parameters ----------------------------------------------------------------


def _check_dry_run(values: Any) -> None:
    if not values:
        return
    if not isinstance(values, list) or any(v != "All" for v in values):
        raise errors.bad_request(
            f"Invalid dryRun value: {values!r}; the only supported value is All"
        )


def _answer_shape(request: Request) -> Shape:
    """The shape of a write's answer, settled (or refused) before the write."""
    shape = negotiate(request.headers.get("accept"), collection=False)
    if shape is Shape.TABLE:
        _include_object(request)
    return shape


def _include_object(request: Request) -> str:
    value = request.query_params.get("includeObject") or "Metadata"
    if value not in ("None", "Metadata", "Object"):
        raise errors.bad_request(
            f"includeObject must be one of None, Metadata or Object, not {value!r}"
        )
    return value


def parse_write_options(request: Request, *, apply: bool) -> WriteOptions:
    params = request.query_params
    _check_dry_run(params.getlist("dryRun"))
    manager = params.get("fieldManager", "")
    if len(manager) > FIELD_MANAGER_MAX or any(not ch.isprintable() for ch in manager):
        raise errors.invalid(
            "PatchOptions" if apply else "UpdateOptions",
            "meta.k8s.io",
            "",
            [
                fielderr.invalid(
                    "fieldManager",
                    manager,
                    f"must be at most {FIELD_MANAGER_MAX} printable characters",
                )
            ],
        )
    force_param = params.get("force")
    if force_param is not None and not apply:
        raise errors.invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            [fielderr.forbidden("force", "may not be specified for non-apply patch")],
        )
    return WriteOptions(
        dry_run=bool(params.getlist("dryRun")),
        field_manager=manager,
        field_validation=FieldValidation.parse(params.get("fieldValidation")),
        force=queryparams.flag(params, "force"),
        user=str(getattr(request.scope.get("user"), "name", "") or ""),
    )


def parse_list_options(request: Request, registry: Registry, *, watch: bool) -> ListOptions:
    params = request.query_params
    rv = params.get("resourceVersion", "")
    match = params.get("resourceVersionMatch", "")
    cont = params.get("continue", "")
    send_initial = queryparams.boolean(params, "sendInitialEvents")
    bookmarks = queryparams.flag(params, "allowWatchBookmarks")
    problems = []
    if match and match not in ("NotOlderThan", "Exact"):
        problems.append(
            fielderr.not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan"])
        )
    if match and not rv and not (watch and send_initial is not None):
        problems.append(
            fielderr.forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            )
        )
    if match and cont:
        problems.append(
            fielderr.forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            )
        )
    if match == "Exact" and rv == "0":
        problems.append(
            fielderr.forbidden(
                "resourceVersionMatch",
                'resourceVersionMatch "Exact" is forbidden for resourceVersion "0"',
            )
        )
    if send_initial is not None:
        if not watch:
            problems.append(
                fielderr.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")
            )
        else:
            if match != "NotOlderThan":
                problems.append(
                    fielderr.forbidden(
                        "resourceVersionMatch",
                        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                    )
                )
            if not bookmarks and send_initial:
                problems.append(
                    fielderr.forbidden(
                        "allowWatchBookmarks",
                        "sendInitialEvents requires setting allowWatchBookmarks to true",
                    )
                )
    elif watch and match:
        problems.append(
            fielderr.forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            )
        )
    if problems:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", problems)
    if cont and rv and rv != "0":
        raise errors.bad_request("specifying resource version is not allowed when using continue")
    limit = queryparams.count(params, "limit") or 0
    return ListOptions(
        label_selector=parse_label_selector(params.get("labelSelector", "")),
        field_selector=parse_field_selector(
            params.get("fieldSelector", ""), registry.field_getters
        ),
        limit=0 if watch else limit,
        continue_token="" if watch else cont,
        resource_version=rv,
        resource_version_match=match,
    )
