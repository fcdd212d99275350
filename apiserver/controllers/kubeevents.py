"""Events written to a kube-apiserver (aggregated mode): core v1 Events over its REST API,
with the same deduplication as in standalone mode (``DedupEventRecorder``)."""

from __future__ import annotations

from urllib.parse import quote

from ..machinery import MERGE_PATCH
from ..sources.upstream import KubeConnection
from ..toolkit import JSON
from .events import DedupEventRecorder


class EventWriteError(Exception):
    """The kube-apiserver refused or failed an Event write."""


class KubeEventWriter:
    def __init__(self, connection: KubeConnection) -> None:
        self.connection = connection

    @staticmethod
    def _path(namespace: str, name: str = "") -> str:
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/events"
        return f"{path}/{quote(name, safe='')}" if name else path

    async def get(self, namespace: str, name: str) -> JSON | None:
        status, body = await self.connection.request("GET", self._path(namespace, name))
        if status == 404:
            return None
        if status != 200 or not isinstance(body, dict):
            raise EventWriteError(f"get event {namespace}/{name}: HTTP {status}: {body}")
        return body

    async def create(self, namespace: str, event: JSON) -> bool:
        status, body = await self.connection.request("POST", self._path(namespace), body=event)
        if status == 409:
            return False
        if status not in (200, 201):
            raise EventWriteError(f"create event in {namespace}: HTTP {status}: {body}")
        return True

    async def merge(self, namespace: str, name: str, patch: JSON) -> None:
        status, body = await self.connection.request(
            "PATCH", self._path(namespace, name), body=patch, content_type=MERGE_PATCH
        )
        if status != 200:
            raise EventWriteError(f"patch event {namespace}/{name}: HTTP {status}: {body}")


class KubeEventRecorder(DedupEventRecorder):
    def __init__(self, connection: KubeConnection, component: str) -> None:
        super().__init__(KubeEventWriter(connection), component)
