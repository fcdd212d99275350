"""The connection to a kube-apiserver (aggregated mode): its configuration, from a kubeconfig
file or from the Pod's in-cluster service account, and one kubernetes-asyncio ``ApiClient``
opened inside the event loop that uses it.

``KubeSource`` and the Event writer call ``call_api`` on it as on an ``ApiClient``; it can
be handed to them before it is opened, because the client library's session must be made
in the running loop, after the server's parts have been wired together.
"""

from __future__ import annotations

import os
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio import client, config

IN_CLUSTER_HOST = "KUBERNETES_SERVICE_HOST"


class UpstreamConfigError(ValueError):
    """No usable configuration for the kube-apiserver."""


class KubeConnection:
    def __init__(self, kubeconfig: str | None = None, *, request_timeout: float = 30.0) -> None:
        """``kubeconfig``: a kubeconfig file; without one, the in-cluster configuration."""
        self.kubeconfig = kubeconfig
        self.request_timeout = request_timeout
        self._api: Any = None

    async def open(self) -> None:
        if self._api is not None:
            return
        configuration = client.Configuration()
        if self.kubeconfig:
            try:
                await config.load_kube_config(
                    config_file=self.kubeconfig, client_configuration=configuration
                )
            except (OSError, config.ConfigException) as exc:
                raise UpstreamConfigError(f"--kubeconfig {self.kubeconfig}: {exc}") from exc
        elif os.environ.get(IN_CLUSTER_HOST):
            try:
                load_incluster: Any = config.load_incluster_config
                load_incluster(client_configuration=configuration)
            except config.ConfigException as exc:
                raise UpstreamConfigError(f"in-cluster configuration: {exc}") from exc
        else:
            raise UpstreamConfigError(
                "aggregated mode reads from a kube-apiserver: pass --kubeconfig, or run in a"
                f" Pod (in-cluster configuration, {IN_CLUSTER_HOST} is not set)"
            )
        self._api = client.ApiClient(configuration=configuration)

    async def close(self) -> None:
        if self._api is not None:
            await self._api.close()
            self._api = None

    @property
    def host(self) -> str:
        return str(self._api.configuration.host) if self._api is not None else ""

    def call_api(self, *args: Any, **kwargs: Any) -> Any:
        if self._api is None:
            raise RuntimeError("the kube-apiserver connection is not open")
        return self._api.call_api(*args, **kwargs)

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """One request, its status and its decoded JSON body (None when not JSON)."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        response = await self.call_api(
            path,
            method,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=aiohttp.ClientTimeout(total=self.request_timeout),
        )
        try:
            raw = await response.read()
            status = int(response.status)
        finally:
            response.release()
        try:
            return status, orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            return status, None
