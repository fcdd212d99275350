"""Events written to an API server over its REST API (core v1 Events), deduplicated as
everywhere else (the toolkit's ``DedupEventRecorder``): aggregated mode writes them to the
kube-apiserver, the scheduler shim and the stand-in scheduler to the server they use."""

from __future__ import annotations

from urllib.parse import quote

from ..toolkit import JSON
from ..toolkit.events import DedupEventRecorder
from .client import KubeClient
from .errors import Conflict, NotFound


class ClientEventWriter:
    def __init__(self, client: KubeClient) -> None:
        self.client = client

    @staticmethod
    def _path(namespace: str, name: str = "") -> str:
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/events"
        return f"{path}/{quote(name, safe='')}" if name else path

    async def get(self, namespace: str, name: str) -> JSON | None:
        try:
            return await self.client.get(self._path(namespace, name))
        except NotFound:
            return None

    async def create(self, namespace: str, event: JSON) -> bool:
        try:
            await self.client.create(self._path(namespace), event)
        except Conflict:
            return False
        return True

    async def merge(self, namespace: str, name: str, patch: JSON) -> None:
        await self.client.merge_patch(self._path(namespace, name), patch)


class ClientEventRecorder(DedupEventRecorder):
    def __init__(self, client: KubeClient, component: str) -> None:
        super().__init__(ClientEventWriter(client), component)
