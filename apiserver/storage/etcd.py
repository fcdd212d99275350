"""The etcd backend: objects under a key prefix, resourceVersion = etcd revision.

Keys are ``<prefix><key>`` (``/registry/<group>/<plural>/[<namespace>/]<name>`` by
default, as Kubernetes lays them out). Writes are single transactions: create puts only
if the key has never been created (``create_revision == 0``), update and delete compare
the key's ``mod_revision`` with the revision the caller read, so a lost race is a
``PreconditionFailedError`` and never a lost update. Watches start from any revision etcd
still holds; a compacted one is ``RevisionCompactedError`` (410 Gone to clients).

The client is the gRPC API of etcd v3 through the protobuf bindings and stubs that the
``aetcd`` package ships (its ``rpc`` module), on a ``grpc.aio`` channel of our own: that
gives TLS client certificates, several endpoints, a deadline on every call and full
range requests (revision, limit), which aetcd's high-level client does not expose.

A revision is only known once etcd commits a write, so the stored bytes carry an empty
``metadata.resourceVersion`` placed right after ``"metadata":{``; reading splices the
key's ``mod_revision`` into that spot (one search near the start of the value and one
copy), never a parse and re-encode.

Every call has a short deadline and every transport failure is a
``StorageUnavailableError`` (503 to clients): an etcd outage never hangs a request.

Progress. A reader that must see every write acknowledged before it began (an
AllocationReview's catch-up) needs each watch to prove it delivered every event up to the
store's current revision, including watches of kinds nobody wrote lately. etcd 3.4.31+ and
3.5.13+ order a requested progress notification after pending events; older ones (3.5.1 is
what the dev extras install) may send it first (etcd-io/etcd#15220), so it proves nothing.
There ``request_ordered_progress`` writes a *progress mark*: a put of the key that is the
watched prefix itself (``<prefix>/<group>/<plural>/``, a key no object can have, since an
object's ends in its name). etcd delivers a watch's events in revision order without gaps,
so when the mark comes through, every earlier event of that prefix has; the watch swallows
it and counts its revision as progress, and lists never show it (a key ending in ``/`` is a
mark). Requests coalesce: the marks asked for while one transaction is in flight go
together in the next, one revision for all of them. Chosen over the alternatives because
it is the only one that proves order on every etcd: a quorum read of the current revision
says where to get to but not when an idle watch got there (nothing comes through it), and
detecting the version alone only says that notifications cannot be trusted. The cost is a
small write per lagging kind and review round, and only on such old etcd; consistent reads
of the watch cache keep asking for plain notifications and fall back to etcd itself, as
kube-apiserver does there, so reads never write. A mark stays (one key per kind); a server
version that predates marks cannot list a kind that has one, so before going back to such
a version, delete the keys under the prefix that end in ``/``.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import ipaddress
import logging
import re
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import grpc
import orjson
from aetcd import rpc

from ..tasks import BackgroundTask
from ..toolkit.options import non_negative, option
from .errors import (
    KeyExistsError,
    KeyNotFoundError,
    PreconditionFailedError,
    RevisionCompactedError,
    StorageError,
    StorageUnavailableError,
)
from .interface import (
    EventType,
    ListPage,
    StoredObject,
    Watch,
    WatchEvent,
    check_distinct,
    prefix_end,
)

log = logging.getLogger("apiserver.storage.etcd")

_MARK = b'"metadata":{"resourceVersion":"'
_UNAVAILABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.ABORTED,
}
_CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    # Come back quickly after an outage instead of gRPC's default of up to two minutes.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    # Notice a silent peer (a hung or partitioned etcd) on long-lived watch streams;
    # etcd accepts pings every 5 s or slower.
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
]


DEFAULT_PREFIX = "/registry"
"""Where Kubernetes keeps its objects in etcd, and so do we unless told otherwise."""


@dataclass(frozen=True)
class EtcdConfig:
    """Where etcd is and how to talk to it: the endpoints come from the storage URL, the
    rest from the ``--etcd-*`` flags."""

    endpoints: tuple[str, ...] = ()
    prefix: str = option("--etcd-prefix", DEFAULT_PREFIX, "key prefix of every object in etcd")
    ca_file: str | None = option(
        "--etcd-cafile", None, "CA bundle that signed etcd's serving certificate (TLS)"
    )
    cert_file: str | None = option(
        "--etcd-certfile", None, "client certificate for etcd (TLS client auth)"
    )
    key_file: str | None = option("--etcd-keyfile", None, "key of --etcd-certfile")
    request_timeout: float = option(
        "--etcd-request-timeout",
        5.0,
        "deadline of one etcd call in seconds; past it the request is a 503",
        check=non_negative,
    )
    compaction_interval: float = option(
        "--etcd-compaction-interval",
        300.0,
        "seconds between compactions of etcd history, 0 to leave it to etcd",
        check=non_negative,
    )

    @classmethod
    def from_url(cls, url: str, **options: Any) -> EtcdConfig:
        """``etcd://HOST:PORT[,HOST:PORT...]`` (``etcds://`` is the same, with TLS)."""
        return cls(**options).with_url(url)

    def with_url(self, url: str) -> EtcdConfig:
        """These settings for the endpoints of ``url``, checked together."""
        scheme, sep, rest = url.partition("://")
        if not sep or scheme not in ("etcd", "etcds"):
            raise ValueError(f"not an etcd URL: {url!r}; expected etcd://HOST:PORT[,HOST:PORT]")
        endpoints = tuple(e.strip() for e in rest.strip("/").split(",") if e.strip())
        if not endpoints:
            raise ValueError("etcd storage needs at least one endpoint, e.g. etcd://127.0.0.1:2379")
        for endpoint in endpoints:
            _split_endpoint(endpoint)
        prefix = self.prefix or DEFAULT_PREFIX  # an empty --etcd-prefix too
        if not prefix.startswith("/"):
            raise ValueError(f"the etcd key prefix must start with '/': {prefix!r}")
        config = replace(self, endpoints=endpoints, prefix=prefix.rstrip("/") or "")
        if scheme == "etcds" and config.ca_file is None:
            raise ValueError("etcds:// needs --etcd-cafile")
        if (config.cert_file is None) != (config.key_file is None):
            raise ValueError("--etcd-certfile and --etcd-keyfile go together")
        return config


def _split_endpoint(endpoint: str) -> tuple[str, int]:
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"etcd endpoint {endpoint!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def _target(endpoints: tuple[str, ...]) -> tuple[str, str | None]:
    """A gRPC target for all endpoints (pick-first fails over between them), and the TLS
    server name to check when the endpoints were given by host name."""
    addresses: list[tuple[int, str, int]] = []
    server_name: str | None = None
    for endpoint in endpoints:
        host, port = _split_endpoint(endpoint)
        try:
            ip = ipaddress.ip_address(host)
            addresses.append((ip.version, str(ip), port))
            continue
        except ValueError:
            server_name = server_name or host
        for family, _, _, _, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
            version = 6 if family == socket.AF_INET6 else 4
            addresses.append((version, str(sockaddr[0]), port))
            break
    version = addresses[0][0]
    same = [(a, p) for v, a, p in addresses if v == version]
    if version == 6:
        return "ipv6:" + ",".join(f"[{a}]:{p}" for a, p in same), server_name
    return "ipv4:" + ",".join(f"{a}:{p}" for a, p in same), server_name


def encode(obj: dict[str, Any]) -> bytes:
    """The stored form: JSON with an empty ``metadata.resourceVersion`` first in metadata.

    ``apiVersion`` and ``kind`` (strings) may come before ``metadata``; every other field
    follows it, so the first ``"metadata":{"resourceVersion":"`` in the bytes is this one
    (a JSON string cannot hold that sequence unescaped).
    """
    meta = obj.get("metadata")
    ordered: dict[str, Any] = {}
    for name in ("apiVersion", "kind"):
        value = obj.get(name)
        if isinstance(value, str):
            ordered[name] = value
    stamped: dict[str, Any] = {"resourceVersion": ""}
    if isinstance(meta, dict):
        stamped.update((k, v) for k, v in meta.items() if k != "resourceVersion")
    ordered["metadata"] = stamped
    for name, value in obj.items():
        if name not in ordered:
            ordered[name] = value
    return orjson.dumps(ordered)


def with_revision(value: bytes, revision: int) -> bytes:
    """``value`` (as ``encode`` wrote it) with ``metadata.resourceVersion`` set."""
    at = value.find(_MARK)
    if at >= 0 and value[at + len(_MARK) : at + len(_MARK) + 1] == b'"':
        cut = at + len(_MARK)
        return b"".join((value[:cut], str(revision).encode(), value[cut:]))
    # Not written by this server (e.g. put by hand): parse and re-encode.
    obj = orjson.loads(value)
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
    return orjson.dumps(obj)


_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)")


def progress_is_ordered(version: str) -> bool:
    """Whether this etcd orders progress notifications after pending events.

    Before 3.4.31 and 3.5.13 a requested progress notification could overtake events
    (etcd-io/etcd#15220), so it proves nothing about what was delivered.
    """
    match = _VERSION.match(version)
    if not match:
        return False
    major, minor, patch = (int(g) for g in match.groups())
    if (major, minor) == (3, 4):
        return patch >= 31
    if (major, minor) == (3, 5):
        return patch >= 13
    return (major, minor) > (3, 5)


class EtcdStore:
    def __init__(self, config: EtcdConfig) -> None:
        self.config = config
        self._prefix = config.prefix.encode()
        self._compact_key = self._prefix + b"/compact_rev_key"
        self._timeout = config.request_timeout
        self._channel: grpc.aio.Channel | None = None
        self._kv: Any = None
        self._watch_stub: Any = None
        self._maintenance: Any = None
        self._metadata: tuple[tuple[str, str], ...] = ()
        self._revision = 0
        self._compacted = 0
        self._healthy = False
        self._closed = False
        self.ordered_progress = False
        self.server_version = ""
        self._probe_waiters: asyncio.Future[int] | None = None
        self._prober: asyncio.Task[None] | None = None
        self._marks_wanted: set[bytes] = set()
        self._marker: asyncio.Task[None] | None = None
        self._compactor = BackgroundTask("etcd compaction", self._compact_periodically, log)

    # -- lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        target, server_name = _target(self.config.endpoints)
        options = list(_CHANNEL_OPTIONS)
        if self.config.ca_file or self.config.cert_file:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read(self.config.ca_file),
                private_key=_read(self.config.key_file),
                certificate_chain=_read(self.config.cert_file),
            )
            if server_name:
                options.append(("grpc.ssl_target_name_override", server_name))
            self._channel = grpc.aio.secure_channel(target, credentials, options=options)
        else:
            self._channel = grpc.aio.insecure_channel(target, options=options)
        self._kv = rpc.KVStub(self._channel)
        self._watch_stub = rpc.WatchStub(self._channel)
        self._maintenance = rpc.MaintenanceStub(self._channel)
        # etcd may still be starting: the store works once it answers, and until then
        # every request is a 503 and readiness says why.
        try:
            await self._inspect()
        except StorageUnavailableError as exc:
            log.warning("etcd is not reachable yet: %s", exc)
        if self.config.compaction_interval > 0:
            self._compactor.start()

    async def _inspect(self) -> None:
        status = await self._call(self._maintenance.Status, rpc.StatusRequest())
        self.server_version = str(status.version)
        self.ordered_progress = progress_is_ordered(self.server_version)
        self._seen(status.header.revision)
        found = await self._call(self._kv.Range, rpc.RangeRequest(key=self._compact_key))
        if found.kvs:
            self._compacted = max(self._compacted, int(found.kvs[0].value or b"0"))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._compactor.close()
        for task in (self._prober, self._marker):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self._channel is not None:
            await self._channel.close()

    @property
    def revision(self) -> int:
        return self._revision

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    def readiness(self) -> dict[str, bool]:
        return {"etcd": self._healthy and not self._closed}

    # -- calls -------------------------------------------------------------------------

    def _seen(self, revision: int) -> None:
        if revision > self._revision:
            self._revision = revision

    async def _call(self, method: Callable[..., Any], request: Any, requested: int = 0) -> Any:
        if self._closed or self._channel is None:
            raise StorageUnavailableError("", "the store is not running")
        try:
            response = await method(request, timeout=self._timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as exc:
            raise self._error(exc, requested) from exc
        self._healthy = True
        return response

    def _error(self, exc: grpc.aio.AioRpcError, requested: int = 0) -> StorageError:
        code, details = exc.code(), exc.details() or ""
        if code == grpc.StatusCode.OUT_OF_RANGE and "compacted" in details:
            self._compacted = max(self._compacted, requested + 1)
            return RevisionCompactedError(requested, self._compacted)
        if code in _UNAVAILABLE:
            self._healthy = False
            return StorageUnavailableError("", f"etcd: {code.name.lower()}: {details}")
        return StorageError("", f"etcd: {code.name.lower()}: {details}")

    def _key(self, key: str) -> bytes:
        return self._prefix + key.encode()

    def _stored(self, kv: Any, revision: int | None = None) -> StoredObject:
        rev = kv.mod_revision if revision is None else revision
        key = kv.key[len(self._prefix) :].decode()
        return StoredObject(key, rev, with_revision(kv.value, rev))

    # -- reads -------------------------------------------------------------------------

    async def get(self, key: str) -> StoredObject | None:
        response = await self._call(self._kv.Range, rpc.RangeRequest(key=self._key(key)))
        self._seen(response.header.revision)
        return self._stored(response.kvs[0]) if response.kvs else None

    async def list(
        self, prefix: str, *, revision: int | None = None, start: str = "", limit: int = 0
    ) -> ListPage:
        begin = self._key(max(prefix, start))
        at = revision or 0
        while True:
            request = rpc.RangeRequest(
                key=begin, range_end=self._key(prefix_end(prefix)), limit=limit, revision=at
            )
            response = await self._call(self._kv.Range, request, revision or 0)
            self._seen(response.header.revision)
            at = at or response.header.revision
            items = [self._stored(kv) for kv in response.kvs if not is_progress_mark(kv.key)]
            if items or not response.more or not response.kvs:
                return ListPage(items, at, bool(response.more))
            # A page of progress marks only: the next page, at the same revision.
            begin = response.kvs[-1].key + b"\x00"

    async def current_revision(self) -> int:
        """etcd's newest revision, from a linearizable read that began after this call.

        Concurrent callers share one read: whoever arrives while a read is in flight
        waits for the next one, which starts as soon as that one ends.
        """
        if self._probe_waiters is None:
            self._probe_waiters = asyncio.get_running_loop().create_future()
            self._probe_waiters.add_done_callback(_retrieve)
            if self._prober is None or self._prober.done():
                self._prober = asyncio.create_task(self._probe())
        return await asyncio.shield(self._probe_waiters)

    async def _probe(self) -> None:
        while self._probe_waiters is not None:
            waiters, self._probe_waiters = self._probe_waiters, None
            try:
                response = await self._call(
                    self._kv.Range, rpc.RangeRequest(key=self._compact_key, count_only=True)
                )
            except BaseException as exc:
                if not waiters.done():
                    waiters.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            self._seen(response.header.revision)
            if not waiters.done():
                waiters.set_result(response.header.revision)

    # -- progress marks ----------------------------------------------------------------

    def request_mark(self, prefix: str) -> None:
        """Write the progress mark of ``prefix`` soon (see the module docstring): with the
        marks asked for meanwhile, in one transaction that starts after this call."""
        self._marks_wanted.add(self._key(prefix))
        if self._marker is None or self._marker.done():
            self._marker = asyncio.create_task(self._write_marks())

    async def _write_marks(self) -> None:
        while self._marks_wanted and not self._closed:
            keys, self._marks_wanted = sorted(self._marks_wanted), set()
            request = rpc.TxnRequest(
                success=[rpc.RequestOp(request_put=rpc.PutRequest(key=k)) for k in keys]
            )
            try:
                response = await self._call(self._kv.Txn, request)
            except StorageError as exc:
                # The reader waiting for it asks again, or gives up with a 503.
                log.debug("progress marks not written: %s", exc)
                continue
            self._seen(response.header.revision)

    # -- writes ------------------------------------------------------------------------

    async def _txn(self, compare: Any, success: Any, key: bytes) -> Any:
        request = rpc.TxnRequest(
            compare=[compare],
            success=[success],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=key))],
        )
        response = await self._call(self._kv.Txn, request)
        self._seen(response.header.revision)
        return response

    async def create(self, key: str, obj: dict[str, Any]) -> StoredObject:
        value = encode(obj)
        ekey = self._key(key)
        response = await self._txn(
            rpc.Compare(
                key=ekey,
                target=rpc.Compare.CREATE,
                result=rpc.Compare.EQUAL,
                create_revision=0,
            ),
            rpc.RequestOp(request_put=rpc.PutRequest(key=ekey, value=value)),
            ekey,
        )
        if not response.succeeded:
            raise KeyExistsError(key)
        revision = response.header.revision
        obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
        return StoredObject(key, revision, with_revision(value, revision), obj)

    def _precondition(self, ekey: bytes, expected: int | None) -> Any:
        if expected is None:
            return rpc.Compare(
                key=ekey, target=rpc.Compare.VERSION, result=rpc.Compare.GREATER, version=0
            )
        return rpc.Compare(
            key=ekey, target=rpc.Compare.MOD, result=rpc.Compare.EQUAL, mod_revision=expected
        )

    def _failed(self, key: str, expected: int | None, response: Any) -> StorageError:
        kvs = response.responses[0].response_range.kvs
        if not kvs:
            return KeyNotFoundError(key)
        return PreconditionFailedError(key, expected or 0, kvs[0].mod_revision)

    async def update(
        self, key: str, obj: dict[str, Any], *, expected_revision: int | None
    ) -> StoredObject:
        value = encode(obj)
        ekey = self._key(key)
        response = await self._txn(
            self._precondition(ekey, expected_revision),
            rpc.RequestOp(request_put=rpc.PutRequest(key=ekey, value=value)),
            ekey,
        )
        if not response.succeeded:
            raise self._failed(key, expected_revision, response)
        revision = response.header.revision
        obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
        return StoredObject(key, revision, with_revision(value, revision), obj)

    async def delete(self, key: str, *, expected_revision: int | None) -> StoredObject:
        ekey = self._key(key)
        response = await self._txn(
            self._precondition(ekey, expected_revision),
            rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=ekey, prev_kv=True)),
            ekey,
        )
        if not response.succeeded:
            raise self._failed(key, expected_revision, response)
        prev = response.responses[0].response_delete_range.prev_kvs[0]
        return self._stored(prev, response.header.revision)

    async def create_many(
        self, items: Sequence[tuple[str, dict[str, Any]]]
    ) -> builtins.list[StoredObject]:
        check_distinct([key for key, _ in items])
        if not items:
            return []
        values = [encode(obj) for _, obj in items]
        ekeys = [self._key(key) for key, _ in items]
        request = rpc.TxnRequest(
            compare=[
                rpc.Compare(
                    key=ekey, target=rpc.Compare.CREATE, result=rpc.Compare.EQUAL, create_revision=0
                )
                for ekey in ekeys
            ],
            success=[
                rpc.RequestOp(request_put=rpc.PutRequest(key=ekey, value=value))
                for ekey, value in zip(ekeys, values, strict=True)
            ],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=ekey)) for ekey in ekeys],
        )
        response = await self._call(self._kv.Txn, request)
        self._seen(response.header.revision)
        if not response.succeeded:
            for (key, _), answer in zip(items, response.responses, strict=True):
                if answer.response_range.kvs:
                    raise KeyExistsError(key)
            raise StorageError(items[0][0], "etcd refused the transaction")
        revision = response.header.revision
        stored = []
        for (key, obj), value in zip(items, values, strict=True):
            obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
            stored.append(StoredObject(key, revision, with_revision(value, revision), obj))
        return stored

    async def delete_many(
        self, items: Sequence[tuple[str, int | None]]
    ) -> builtins.list[StoredObject]:
        check_distinct([key for key, _ in items])
        if not items:
            return []
        ekeys = [self._key(key) for key, _ in items]
        request = rpc.TxnRequest(
            compare=[
                self._precondition(ekey, expected)
                for ekey, (_, expected) in zip(ekeys, items, strict=True)
            ],
            success=[
                rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=ekey, prev_kv=True))
                for ekey in ekeys
            ],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=ekey)) for ekey in ekeys],
        )
        response = await self._call(self._kv.Txn, request)
        self._seen(response.header.revision)
        if not response.succeeded:
            for (key, expected), answer in zip(items, response.responses, strict=True):
                kvs = answer.response_range.kvs
                if not kvs:
                    raise KeyNotFoundError(key)
                if expected is not None and kvs[0].mod_revision != expected:
                    raise PreconditionFailedError(key, expected, kvs[0].mod_revision)
            raise StorageError(items[0][0], "etcd refused the transaction")
        revision = response.header.revision
        return [
            self._stored(answer.response_delete_range.prev_kvs[0], revision)
            for answer in response.responses
        ]

    # -- compaction --------------------------------------------------------------------

    async def compact(self, revision: int) -> None:
        """Drop history before ``revision`` now (normally periodic)."""
        revision = min(revision, self._revision)
        if revision <= self._compacted:
            return
        try:
            await self._call(self._kv.Compact, rpc.CompactionRequest(revision=revision))
        except StorageError as exc:
            if "compacted" not in str(exc):
                raise
        self._compacted = max(self._compacted, revision)
        with contextlib.suppress(StorageError):
            await self._call(
                self._kv.Put, rpc.PutRequest(key=self._compact_key, value=str(revision).encode())
            )

    async def _compact_periodically(self) -> None:
        """Every interval, compact to the revision seen one interval earlier.

        Replicas share the work through the compact key: a replica compacts only if the
        key is unchanged since it last looked, so one interval sees one compaction.
        """
        seen_version = -1
        target = 0
        while True:
            await asyncio.sleep(self.config.compaction_interval)
            try:
                found = await self._call(self._kv.Range, rpc.RangeRequest(key=self._compact_key))
                version = found.kvs[0].version if found.kvs else 0
                if found.kvs:
                    self._compacted = max(self._compacted, int(found.kvs[0].value or b"0"))
                if version == seen_version and target > self._compacted:
                    claim = rpc.TxnRequest(
                        compare=[
                            rpc.Compare(
                                key=self._compact_key,
                                target=rpc.Compare.VERSION,
                                result=rpc.Compare.EQUAL,
                                version=version,
                            )
                        ],
                        success=[
                            rpc.RequestOp(
                                request_put=rpc.PutRequest(
                                    key=self._compact_key, value=str(target).encode()
                                )
                            )
                        ],
                    )
                    if (await self._call(self._kv.Txn, claim)).succeeded:
                        version += 1
                        with contextlib.suppress(StorageError):
                            await self._call(
                                self._kv.Compact, rpc.CompactionRequest(revision=target)
                            )
                        self._compacted = max(self._compacted, target)
                seen_version = version
                target = found.header.revision
            except StorageError as exc:
                log.warning("periodic compaction skipped: %s", exc)

    # -- watch -------------------------------------------------------------------------

    def _event(self, event: Any) -> WatchEvent:
        kv = event.kv
        prev = self._stored(event.prev_kv) if event.HasField("prev_kv") else None
        if event.type == rpc.Event.DELETE:
            if prev is None:
                raise StorageError(kv.key.decode(errors="replace"), "delete without its last state")
            return WatchEvent(EventType.DELETED, self._stored(event.prev_kv, kv.mod_revision), prev)
        kind = EventType.ADDED if kv.create_revision == kv.mod_revision else EventType.MODIFIED
        return WatchEvent(kind, self._stored(kv), prev)

    def watch(self, prefix: str, revision: int) -> EtcdWatch:
        return EtcdWatch(self, prefix, revision)


class EtcdWatch(Watch):
    """One etcd watch stream for one prefix, from a revision.

    ``progress()`` is a revision up to which every event was delivered: the last event's,
    a progress notification etcd orders after pending events, or a progress mark that came
    through. ``request_progress()`` asks etcd for a notification; ``reported_revision`` is
    the newest revision etcd reported on this stream, proven complete only when
    ``progress()`` reaches it. ``request_ordered_progress()`` asks for a notification where
    etcd orders them, else for a progress mark (see the module docstring).
    """

    def __init__(self, store: EtcdStore, prefix: str, revision: int) -> None:
        self._store = store
        self._prefix = prefix
        self._revision = revision
        self._last = revision
        self._progress = 0
        self._created = False
        self._watch_id = -2
        self._closed = False
        self._call: Any = None
        self._progress_writer: asyncio.Task[None] | None = None

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[WatchEvent]:
        store = self._store
        if store._closed or store._watch_stub is None:
            raise StorageUnavailableError("", "the store is not running")
        if self._revision < store.compacted_revision:
            raise RevisionCompactedError(self._revision, store.compacted_revision)
        call = store._watch_stub.Watch(metadata=store._metadata)
        self._call = call
        create = rpc.WatchCreateRequest(
            key=store._key(self._prefix),
            range_end=store._key(prefix_end(self._prefix)),
            start_revision=self._revision + 1,
            prev_kv=True,
            progress_notify=True,
        )
        try:
            await call.write(rpc.WatchRequest(create_request=create))
            while True:
                response = await call.read()
                if response is grpc.aio.EOF:
                    raise StorageUnavailableError("", "etcd ended the watch stream")
                if response.compact_revision:
                    store._compacted = max(store._compacted, response.compact_revision)
                    raise RevisionCompactedError(self._revision, response.compact_revision)
                if response.canceled:
                    raise StorageUnavailableError(
                        "", f"etcd canceled the watch: {response.cancel_reason}"
                    )
                store._healthy = True
                revision = response.header.revision
                store._seen(revision)
                if response.created:
                    self._created = True
                    self._watch_id = response.watch_id
                    continue
                if not response.events:
                    self._on_progress(response.watch_id, revision)
                    continue
                marked = False
                for raw in response.events:
                    if is_progress_mark(raw.kv.key):
                        # Every earlier event of the prefix came first: proven progress.
                        self._progress = max(self._progress, raw.kv.mod_revision)
                        marked = True
                        continue
                    event = store._event(raw)
                    self._last = event.revision
                    yield event
                if marked and self.on_progress is not None:
                    self.on_progress()
        except grpc.aio.AioRpcError as exc:
            raise store._error(exc, self._revision) from exc
        except asyncio.CancelledError:
            if self._closed:
                return
            raise
        finally:
            call.cancel()

    def _on_progress(self, watch_id: int, revision: int) -> None:
        # A notification for this watch id went through the same queue as its events;
        # a broadcast one (id -1) did only on etcd versions that fixed the ordering.
        if watch_id == self._watch_id or self._store.ordered_progress:
            self._progress = max(self._progress, revision)
        self.reported_revision = max(self.reported_revision, revision)
        if self.on_progress is not None:
            self.on_progress()

    def progress(self) -> int | None:
        if not self._created:
            return None
        return max(self._last, self._progress)

    def request_progress(self) -> None:
        if not self._created or self._closed or self._call is None:
            return
        if self._progress_writer is not None and not self._progress_writer.done():
            return
        request = rpc.WatchRequest(progress_request=rpc.WatchProgressRequest())
        self._progress_writer = asyncio.create_task(self._write(request))

    def request_ordered_progress(self) -> None:
        if self._closed:
            return
        if self._store.ordered_progress:
            self.request_progress()
        else:
            self._store.request_mark(self._prefix)

    async def _write(self, request: Any) -> None:
        with contextlib.suppress(Exception):
            await self._call.write(request)

    async def close(self) -> None:
        self._closed = True
        if self._call is not None:
            self._call.cancel()


def is_progress_mark(key: bytes) -> bool:
    """Whether an etcd key is a progress mark: an object's key ends in its name, never in
    ``/``."""
    return key.endswith(b"/")


def _read(path: str | None) -> bytes | None:
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


def _retrieve(future: asyncio.Future[int]) -> None:
    """Mark a shared future's exception as seen even when every waiter gave up."""
    if not future.cancelled():
        future.exception()
