"""The cluster's word on client certificates: ``kube-system/extension-apiserver-authentication``.

kube-apiserver publishes there the CA of its own client certificates (``client-ca-file``) and
its front-proxy settings (``requestheader-client-ca-file`` and the ``requestheader-*`` lists,
each a JSON array in a string). ``AuthenticationConfigMap`` reads it at start and then every
``resync`` seconds, so a rotated CA takes effect without a restart; the sources it hands out
(``client_ca``, ``request_header``) always answer with the latest good reading. A ConfigMap
that cannot be read is a warning, never a failed start: until one reading succeeds the
methods it configures authenticate nobody, and after that the last good reading stays.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from ..kubeclient import APIError, KubeClient
from .requestheader import (
    DEFAULT_EXTRA_PREFIXES,
    DEFAULT_GROUP_HEADERS,
    DEFAULT_USERNAME_HEADERS,
    RequestHeaderConfig,
)
from .x509 import CABundle

log = logging.getLogger("apiserver")

NAMESPACE = "kube-system"
NAME = "extension-apiserver-authentication"
PATH = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{NAME}"


@dataclass(frozen=True)
class ClusterAuthentication:
    """What the ConfigMap says; None for what it does not configure."""

    client_ca: CABundle | None
    request_header: RequestHeaderConfig | None


def _string_list(data: dict[str, str], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = data.get(key)
    if raw is None or raw == "":
        return default
    try:
        values = json.loads(raw)
    except ValueError:
        values = None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{key} is not a JSON list of strings: {raw[:100]!r}")
    return tuple(values)


def _bundle(data: dict[str, str], key: str) -> CABundle | None:
    pem = data.get(key)
    if not pem:
        return None
    try:
        return CABundle.from_pem(pem.encode())
    except ValueError as exc:
        raise ValueError(f"{key} holds no PEM certificates: {exc}") from exc


def parse_configmap(data: dict[str, str]) -> ClusterAuthentication:
    """The settings of the ConfigMap's ``data``; ValueError when a key is malformed."""
    request_ca = _bundle(data, "requestheader-client-ca-file")
    request_header = None
    if request_ca is not None:
        request_header = RequestHeaderConfig(
            ca=request_ca,
            allowed_names=_string_list(data, "requestheader-allowed-names", ()),
            username_headers=_string_list(
                data, "requestheader-username-headers", DEFAULT_USERNAME_HEADERS
            ),
            uid_headers=_string_list(data, "requestheader-uid-headers", ()),
            group_headers=_string_list(data, "requestheader-group-headers", DEFAULT_GROUP_HEADERS),
            extra_prefixes=_string_list(
                data, "requestheader-extra-headers-prefix", DEFAULT_EXTRA_PREFIXES
            ),
        )
    return ClusterAuthentication(
        client_ca=_bundle(data, "client-ca-file"),
        request_header=request_header,
    )


class AuthenticationConfigMap:
    def __init__(self, client: KubeClient, resync: float = 10.0) -> None:
        self.client = client
        self.resync = resync
        self.current = ClusterAuthentication(None, None)
        self.reads = 0
        """Successful readings so far (tests wait on it)."""
        self._task: asyncio.Task[None] | None = None

    def client_ca(self) -> CABundle | None:
        return self.current.client_ca

    def request_header(self) -> RequestHeaderConfig | None:
        return self.current.request_header

    async def refresh(self) -> bool:
        """Read the ConfigMap once; True when it was read and understood."""
        try:
            body: Any = await self.client.get(PATH)
            self.current = parse_configmap(dict(body.get("data") or {}))
        except (APIError, ValueError, AttributeError) as exc:
            log.warning(
                "cannot read ConfigMap %s/%s (client certificate and front-proxy"
                " authentication use the last good reading, or stay off): %s",
                NAMESPACE,
                NAME,
                exc,
            )
            return False
        self.reads += 1
        return True

    async def start(self) -> None:
        await self.refresh()
        self._task = asyncio.create_task(self._keep_current(), name="auth-configmap")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _keep_current(self) -> None:
        while True:
            await asyncio.sleep(self.resync)
            await self.refresh()
