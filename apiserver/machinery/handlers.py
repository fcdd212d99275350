"""HTTP handling of resource requests, for every kind: parse, dispatch, encode.

Requests arrive as ``/apis/<group>/<version>/...`` (or ``/api/v1/...``); the path and
method say which verb of which registry to call; query parameters and headers become
typed options; the answer is built from stored JSON bytes wherever the client wants the
object as stored, and from dicts only for Tables and metadata-only views.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from ..api import DeleteOptions as DeleteOptionsBody
from ..api import Preconditions
from ..api import field as fielderr
from ..storage import StoredObject
from . import errors, queryparams
from .decoding import FieldValidation, check_object, decode_body, media_type
from .disconnect import unless_client_leaves
from .negotiation import Shape, negotiate
from .patching import APPLY_PATCH, SUPPORTED_PATCH_TYPES
from .requestinfo import RequestInfo, parse_request
from .rest import (
    Applier,
    CollectionDeleter,
    Creater,
    DeleteOptions,
    Deleter,
    Getter,
    Lister,
    ListOptions,
    ListResult,
    NamedCreater,
    Patcher,
    Resource,
    Updater,
    Watcher,
    WriteOptions,
    WriteResult,
)
from .selectors import parse_field_selector, parse_label_selector
from .table import partial_object_metadata, table
from .user import NOBODY
from .warningheader import warning_headers
from .watch import ABORT_EXTENSION, INITIAL_EVENTS_END, WatchItem, WatchRequest, WatchStream

JSON_MEDIA_TYPE = "application/json"
MAX_BODY_BYTES = 3 * 1024 * 1024
FIELD_MANAGER_MAX = 128


def json_response(
    body: bytes, code: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(body, status_code=code, media_type=JSON_MEDIA_TYPE, headers=dict(headers or {}))


def status_response(err: errors.StatusError) -> Response:
    return json_response(err.body(), err.code, err.headers)


@dataclass(frozen=True)
class Endpoint:
    """One served path — a resource or one of its subresources — and what it can do; a verb
    without its capability is 405."""

    served: Resource
    getter: Getter | None = None
    lister: Lister | None = None
    watcher: Watcher | None = None
    creater: Creater | None = None
    named_creater: NamedCreater | None = None
    updater: Updater | None = None
    patcher: Patcher | None = None
    applier: Applier | None = None
    deleter: Deleter | None = None
    collection_deleter: CollectionDeleter | None = None

    def allow(self, *, named: bool) -> str:
        """The ``Allow`` header of a 405: the methods this path answers."""
        methods: list[tuple[str, object]]
        if named:
            methods = [
                ("DELETE", self.deleter),
                ("GET", self.getter),
                ("PATCH", self.patcher or self.applier),
                ("POST", self.named_creater),
                ("PUT", self.updater),
            ]
        else:
            methods = [
                ("DELETE", self.collection_deleter),
                ("GET", self.lister),
                ("POST", self.creater),
            ]
        return ", ".join(m for m, capability in methods if capability is not None)

    @classmethod
    def of(cls, served: Resource) -> Endpoint:
        """A capability is offered if the resource has it and its kind is served for the
        verb: a stored kind the server alone writes keeps its registry (the server writes
        through it in-process) but is served only for the verbs its strategy names."""
        verbs = served.resource.verbs

        def cap(protocol: Any) -> Any:
            offered = isinstance(served, protocol) and _VERB_OF[protocol] in verbs
            return served if offered else None

        return cls(
            served,
            getter=cap(Getter),
            lister=cap(Lister),
            watcher=cap(Watcher),
            creater=cap(Creater),
            named_creater=cap(NamedCreater),
            updater=cap(Updater),
            patcher=cap(Patcher),
            applier=cap(Applier),
            deleter=cap(Deleter),
            collection_deleter=cap(CollectionDeleter),
        )


_VERB_OF: dict[Any, str] = {
    Getter: "get",
    Lister: "list",
    Watcher: "watch",
    Creater: "create",
    NamedCreater: "create",
    Updater: "update",
    Patcher: "patch",
    Applier: "patch",
    Deleter: "delete",
    CollectionDeleter: "deletecollection",
}
"""The Kubernetes verb each capability serves (apply is a patch)."""


class ResourceHandler:
    """Routes resource requests of one or more group-versions to what serves them."""

    def __init__(
        self,
        served: Mapping[tuple[str, str, str, str], Resource],
        *,
        max_body_bytes: int = MAX_BODY_BYTES,
        min_request_timeout: float = 1800.0,
        bookmark_interval: float = 60.0,
    ) -> None:
        """``served``: (group, version, resource, subresource or "") → what serves it."""
        self.endpoints = {key: Endpoint.of(s) for key, s in served.items()}
        self.max_body_bytes = max_body_bytes
        self.min_request_timeout = min_request_timeout
        self.bookmark_interval = bookmark_interval
        self.stopping = asyncio.Event()
        """Set when the server begins to shut down: open watches end, as kube-apiserver
        closes them, instead of being cancelled mid-stream when the grace period is over."""

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
            key = (group, version, info.resource, info.subresource or "")
            endpoint = self.endpoints.get(key)
            if endpoint is None or (
                info.namespace is not None and not endpoint.served.resource.namespaced
            ):
                raise errors.StatusError(
                    404, "NotFound", "the server could not find the requested resource"
                )
            return await self._dispatch(request, endpoint, info)
        except errors.StatusError as err:
            if err.code == 405:
                err.headers.setdefault("Allow", self._allow(group, version, segments))
            return status_response(err)

    def _allow(self, group: str, version: str, segments: list[str]) -> str:
        info = parse_request("GET", segments, watch_param=None)  # the URL's shape only
        endpoint = self.endpoints.get((group, version, info.resource, info.subresource or ""))
        return endpoint.allow(named=info.name is not None) if endpoint is not None else ""

    async def _dispatch(self, request: Request, endpoint: Endpoint, info: RequestInfo) -> Response:
        """Answer with the endpoint's capability for the request's verb; 405 if it has none."""
        answer = await self._read(request, endpoint, info)
        if answer is None:
            answer = await self._create(request, endpoint, info)
        if answer is None:
            answer = await self._change(request, endpoint, info)
        if answer is not None:
            return answer
        resource = endpoint.served.resource.plural
        if info.subresource:
            resource = f"{resource}/{info.subresource}"
        raise errors.method_not_allowed(info.verb, resource)

    async def _read(
        self, request: Request, endpoint: Endpoint, info: RequestInfo
    ) -> Response | None:
        """get, list and watch; None for any other verb or one the endpoint does not serve."""
        served, verb = endpoint.served, info.verb
        if verb == "get" and endpoint.getter is not None:
            assert info.name is not None
            shape = negotiate(request.headers.get("accept"), collection=False)
            stored = await endpoint.getter.get(info.namespace, info.name)
            return self._object(request, served, stored, shape)
        if verb == "list" and endpoint.lister is not None:
            shape = negotiate(request.headers.get("accept"), collection=True)
            opts = parse_list_options(request, served, watch=False)
            listed = await endpoint.lister.list(info.namespace, opts)
            return self._list(request, served, listed, shape)
        if verb == "watch" and endpoint.watcher is not None:
            shape = negotiate(request.headers.get("accept"), collection=True, watch=True)
            return await self._watch(request, endpoint.watcher, served, info.namespace, shape)
        return None

    async def _create(
        self, request: Request, endpoint: Endpoint, info: RequestInfo
    ) -> Response | None:
        """create, at a collection or at a name (a subresource that creates, like a
        binding); None for any other verb or one the endpoint does not serve."""
        served, namespace = endpoint.served, info.namespace
        if info.verb != "create":
            return None
        if info.name is not None and endpoint.named_creater is not None:
            shape = _answer_shape(request)
            write, body = await self._write_input(request)
            result = await endpoint.named_creater.create_named(namespace, info.name, body, write)
            return self._written(request, served, result, shape)
        if info.name is None and endpoint.creater is not None:
            shape = _answer_shape(request)  # refused now, not after the object is stored
            write, body = await self._write_input(request)
            creating = endpoint.creater.create(namespace, body, write)
            if getattr(served, "stops_when_client_leaves", False):
                what = f"POST {served.resource.plural}.{served.resource.group or 'core'}"
                result = await unless_client_leaves(request.receive, creating, what)
            else:
                result = await creating
            return self._written(request, served, result, shape)
        return None

    async def _change(
        self, request: Request, endpoint: Endpoint, info: RequestInfo
    ) -> Response | None:
        """update, patch, delete and deletecollection; None for any other verb or one the
        endpoint does not serve."""
        served, verb, namespace = endpoint.served, info.verb, info.namespace
        if verb == "update" and endpoint.updater is not None:
            assert info.name is not None
            shape = _answer_shape(request)
            write, body = await self._write_input(request)
            result = await endpoint.updater.update(namespace, info.name, body, write)
            return self._written(request, served, result, shape)
        if verb == "patch" and (endpoint.patcher is not None or endpoint.applier is not None):
            assert info.name is not None
            return await self._patch(request, endpoint, info.name, namespace)
        if verb == "delete" and endpoint.deleter is not None:
            assert info.name is not None
            shape = _answer_shape(request)
            result = await endpoint.deleter.delete(
                namespace, info.name, await self._delete_options(request)
            )
            if result.deleted and not served.resource.returns_deleted_object:
                return json_response(orjson.dumps(_success(served, result.obj)))
            return self._written(request, served, result, shape)
        if verb == "deletecollection" and endpoint.collection_deleter is not None:
            shape = negotiate(request.headers.get("accept"), collection=True)
            _include_object(request)
            opts = parse_list_options(request, served, watch=False)
            deleted = await endpoint.collection_deleter.delete_collection(
                namespace, opts, await self._delete_options(request)
            )
            return self._list(request, served, deleted, shape)
        return None

    # -- bodies and options ------------------------------------------------------

    async def _write_input(self, request: Request) -> tuple[WriteOptions, dict[str, Any]]:
        """A create's or update's options and its decoded body, in that order (a bad option
        is refused before the body is read)."""
        write = parse_write_options(request, apply=False)
        body = decode_body(await self._body(request), request.headers.get("content-type"))
        return write, body

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

    async def _patch(
        self, request: Request, endpoint: Endpoint, name: str, namespace: str | None
    ) -> Response:
        patch_type = media_type(request.headers.get("content-type"))
        supported = [
            t
            for t in SUPPORTED_PATCH_TYPES
            if (endpoint.applier if t == APPLY_PATCH else endpoint.patcher) is not None
        ]
        if patch_type not in supported:
            raise errors.unsupported_media_type(patch_type, supported)
        apply = patch_type == APPLY_PATCH
        shape = _answer_shape(request)
        opts = parse_write_options(request, apply=apply)
        body = await self._body(request)
        if apply:
            config = decode_body(body, "application/yaml")
        if not body.strip():
            raise errors.bad_request("the patch is empty")
        if apply:
            assert endpoint.applier is not None
            result = await endpoint.applier.apply(namespace, name, config, opts)
        else:
            assert endpoint.patcher is not None
            result = await endpoint.patcher.patch(namespace, name, body, patch_type, opts)
        return self._written(request, endpoint.served, result, shape)

    async def _delete_options(self, request: Request) -> DeleteOptions:
        """DeleteOptions from the body (checked against its model) or the query."""
        body = await self._body(request)
        options = DeleteOptionsBody()
        if body.strip():
            raw = decode_body(body, request.headers.get("content-type"))
            parsed, _unknown, problems = check_object(raw, DeleteOptionsBody)
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
        pre = options.preconditions or Preconditions()
        return DeleteOptions(
            dry_run=bool(dry_run),
            precondition_uid=pre.uid,
            precondition_resource_version=pre.resource_version,
            user=request.scope.get("user") or NOBODY,
        )

    # -- encoding ------------------------------------------------------------------

    def _written(
        self, request: Request, registry: Resource, result: WriteResult, shape: Shape
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
        registry: Resource,
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
        self, request: Request, registry: Resource, result: ListResult, shape: Shape
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
            # One join of every piece: the body is copied once (a megabyte-sized list costs
            # a page-faulting allocation per copy).
            parts = [head[:-1], b',"items":[']
            for i, item in enumerate(result.items):
                if i:
                    parts.append(b",")
                parts.append(item.raw)
            parts.append(b"]}")
            return json_response(b"".join(parts))
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
        self,
        request: Request,
        watcher: Watcher,
        registry: Resource,
        namespace: str | None,
        shape: Shape,
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
        stream = await WatchStream.open(watcher, registry.resource, namespace, watch_request)
        include = _include_object(request) if shape is Shape.TABLE else "Metadata"

        # The server's way to drop this connection, for a watch cut off for falling behind.
        abort = request.scope.get("extensions", {}).get(ABORT_EXTENSION)

        async def body() -> AsyncGenerator[bytes, None]:
            first = True
            async with contextlib.aclosing(stream.items(abort)) as items:
                async for item in items:
                    yield _encode_event(item, registry, shape, include, first)
                    if item.obj is not None:
                        first = False

        return _ClosingStreamingResponse(
            body(),
            self.stopping,
            media_type=JSON_MEDIA_TYPE,
            headers={"Cache-Control": "no-cache, private"},
        )


class _ClosingStreamingResponse(StreamingResponse):
    """Closes its body when the response ends, however it ends: a client that went away
    stops the watch behind the body at once, not whenever the generator is collected. When
    the server begins to shut down (``stopping``) the stream ends as a complete response,
    so clients see the watch end and start another elsewhere."""

    def __init__(
        self, content: AsyncGenerator[bytes, None], stopping: asyncio.Event, **kwargs: Any
    ) -> None:
        super().__init__(content, **kwargs)
        self._content = content
        self._stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        streaming = asyncio.ensure_future(super().__call__(scope, receive, send))
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait((streaming, stopping), return_when=asyncio.FIRST_COMPLETED)
            if streaming.done():
                streaming.result()
                return
            streaming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await streaming
            # (RuntimeError: the stream was stopped before it had started; nothing to end.)
            with contextlib.suppress(OSError, RuntimeError):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            streaming.cancel()
            stopping.cancel()
            await self._content.aclose()


def _encode_event(
    item: WatchItem, registry: Resource, shape: Shape, include: str, first: bool
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


def _success(registry: Resource, deleted: StoredObject) -> dict[str, Any]:
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
        user=request.scope.get("user") or NOBODY,
        user_agent=request.headers.get("user-agent", ""),
    )


def parse_list_options(request: Request, registry: Resource, *, watch: bool) -> ListOptions:
    """The list (or watch) options of ``request``: a 422 naming each option that clashes with
    another, a 400 for a continue token beside a resourceVersion."""
    params = request.query_params
    rv = params.get("resourceVersion", "")
    match = params.get("resourceVersionMatch", "")
    cont = params.get("continue", "")
    send_initial = queryparams.boolean(params, "sendInitialEvents")
    bookmarks = queryparams.flag(params, "allowWatchBookmarks")
    problems = [
        *_version_match_problems(
            rv, match, cont, initial_events=watch and send_initial is not None
        ),
        *_initial_events_problems(send_initial, match, bookmarks, watch=watch),
    ]
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


def _version_match_problems(
    rv: str, match: str, cont: str, *, initial_events: bool
) -> list[fielderr.FieldError]:
    """What is wrong with ``resourceVersionMatch`` beside the resourceVersion and continue
    token (a watch asking for initial events may set it without a resourceVersion)."""
    if not match:
        return []
    problems = []
    if match not in ("NotOlderThan", "Exact"):
        problems.append(
            fielderr.not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan"])
        )
    if not rv and not initial_events:
        problems.append(
            fielderr.forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            )
        )
    if cont:
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
    return problems


def _initial_events_problems(
    send_initial: bool | None, match: str, bookmarks: bool, *, watch: bool
) -> list[fielderr.FieldError]:
    """What is wrong with ``sendInitialEvents`` (a watch-list needs NotOlderThan and
    bookmarks, a list may not ask for it), and with a plain watch's resourceVersionMatch."""
    if send_initial is None:
        if watch and match:
            return [
                fielderr.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is"
                    " provided",
                )
            ]
        return []
    if not watch:
        return [fielderr.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")]
    problems = []
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
    return problems
