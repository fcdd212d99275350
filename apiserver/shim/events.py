"""Events written over HTTPS by the scheduler shim and the stand-in scheduler, as
kube-scheduler writes its own: core v1 Events through the API server's REST API, one
deduplicated Event per object and problem (the toolkit's recorder)."""

from __future__ import annotations

from urllib.parse import quote

from ..toolkit import JSON
from ..toolkit.events import DedupEventRecorder
from .client import APIClient, APIError


class ClientEventWriter:
    def __init__(self, api: APIClient) -> None:
        self.api = api

    @staticmethod
    def _path(namespace: str, name: str = "") -> str:
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/events"
        return f"{path}/{quote(name, safe='')}" if name else path

    async def get(self, namespace: str, name: str) -> JSON | None:
        try:
            return await self.api.get(self._path(namespace, name))
        except APIError as err:
            if err.code != 404:
                raise
            return None

    async def create(self, namespace: str, event: JSON) -> bool:
        try:
            await self.api.create(self._path(namespace), event)
        except APIError as err:
            if err.code != 409:
                raise
            return False
        return True

    async def merge(self, namespace: str, name: str, patch: JSON) -> None:
        await self.api.merge_patch(self._path(namespace, name), patch)


class ClientEventRecorder(DedupEventRecorder):
    def __init__(self, api: APIClient, component: str) -> None:
        super().__init__(ClientEventWriter(api), component)
