"""The shim's connection to the API server: a kubeconfig's credentials, or the pod's
ServiceAccount in a cluster, over HTTPS (httpx), and the few calls it makes — get, create,
update, delete and watch of JSON objects."""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
import time
from collections.abc import AsyncIterator, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import yaml

from ..toolkit import JSON

IN_CLUSTER = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD = 60.0


class APIError(Exception):
    """A Kubernetes ``Status`` answer (or a transport failure, code 0)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class Credentials:
    """What a kubeconfig's current context gives: where, whom to trust, who we are."""

    server: str
    ca_pem: bytes | None
    token: str | None
    cert_pem: bytes | None
    key_pem: bytes | None
    token_file: Path | None = None
    """Read for the token, again every minute: a projected ServiceAccount token rotates."""

    @classmethod
    def in_cluster(cls, server: str | None = None, directory: Path = IN_CLUSTER) -> Credentials:
        """The pod's ServiceAccount, talking to the cluster's kube-apiserver."""
        host = os.environ.get("KUBERNETES_SERVICE_HOST")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not (server or host) or not (directory / "token").exists():
            raise ValueError(
                "not running in a cluster (no KUBERNETES_SERVICE_HOST or ServiceAccount"
                " token): give --kubeconfig"
            )
        if host and ":" in host:
            host = f"[{host}]"
        return cls(
            server=(server or f"https://{host}:{port}").rstrip("/"),
            ca_pem=(directory / "ca.crt").read_bytes(),
            token=None,
            cert_pem=None,
            key_pem=None,
            token_file=directory / "token",
        )

    @classmethod
    def from_kubeconfig(cls, path: str | Path, server: str | None = None) -> Credentials:
        config = yaml.safe_load(Path(path).read_text()) or {}
        base = Path(path).resolve().parent

        def named(section: str, name: str) -> JSON:
            for entry in config.get(section) or []:
                if entry.get("name") == name:
                    return dict(entry.get(section[:-1]) or {})
            raise ValueError(f"kubeconfig {path}: no {section[:-1]} {name!r}")

        contexts = config.get("contexts") or []
        current = config.get("current-context") or (contexts[0]["name"] if contexts else "")
        context = named("contexts", current)
        cluster = named("clusters", context.get("cluster", ""))
        user = named("users", context.get("user", "")) if context.get("user") else {}

        def data(entry: JSON, key: str) -> bytes | None:
            if entry.get(f"{key}-data"):
                return base64.b64decode(str(entry[f"{key}-data"]))
            if entry.get(key):
                return (base / str(entry[key])).read_bytes()
            return None

        token = user.get("token")
        if not token and user.get("tokenFile"):
            token = (base / user["tokenFile"]).read_text().strip()
        return cls(
            server=(server or cluster.get("server") or "").rstrip("/"),
            ca_pem=data(cluster, "certificate-authority"),
            token=token,
            cert_pem=data(user, "client-certificate"),
            key_pem=data(user, "client-key"),
        )

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        if self.ca_pem:
            context.load_verify_locations(cadata=self.ca_pem.decode())
        if self.cert_pem and self.key_pem:
            # The ssl module loads a client pair only from files.
            with tempfile.TemporaryDirectory() as directory:
                cert, key = Path(directory) / "c.crt", Path(directory) / "c.key"
                cert.write_bytes(self.cert_pem)
                key.write_bytes(self.key_pem)
                context.load_cert_chain(cert, key)
        return context


class _TokenFile(httpx.Auth):
    def __init__(self, path: Path) -> None:
        self.path = path
        self.token = ""
        self.read_at = -TOKEN_REREAD

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if time.monotonic() - self.read_at >= TOKEN_REREAD:
            self.token = self.path.read_text().strip()
            self.read_at = time.monotonic()
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


class APIClient:
    """JSON calls on one API server; a non-2xx answer raises ``APIError``."""

    def __init__(
        self,
        credentials: Credentials,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """``transport``: where requests go instead of the network (an in-process app)."""
        headers = {"Accept": "application/json", "User-Agent": "dra-scheduler-shim"}
        if credentials.token:
            headers["Authorization"] = f"Bearer {credentials.token}"
        self._http = httpx.AsyncClient(
            base_url=credentials.server,
            verify=credentials.ssl_context(),
            headers=headers,
            timeout=timeout,
            transport=transport,
            auth=_TokenFile(credentials.token_file) if credentials.token_file else None,
        )

    @property
    def http(self) -> httpx.AsyncClient:
        """The connection itself, for the reviews the shim posts (TokenReview)."""
        return self._http

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(
        self,
        method: str,
        path: str,
        body: JSON | None = None,
        params: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> JSON:
        content = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if body is not None else None
        try:
            try:
                answer = await self._http.request(
                    method, path, content=content, headers=headers, params=params
                )
            except httpx.RemoteProtocolError:
                if method != "GET":
                    raise
                # A kept-alive connection the server closed as the request went out (its
                # idle timeout): a read is safe to send again, once, as client-go does.
                answer = await self._http.request(method, path, headers=headers, params=params)
        except httpx.HTTPError as err:
            raise APIError(0, "ConnectionFailed", f"{method} {path}: {err}") from err
        parsed: Any = orjson.loads(answer.content) if answer.content else {}
        if answer.is_success:
            return parsed if isinstance(parsed, dict) else {}
        if isinstance(parsed, dict) and parsed.get("kind") == "Status":
            raise APIError(answer.status_code, parsed.get("reason", ""), parsed.get("message", ""))
        raise APIError(answer.status_code, "", answer.text[:200])

    async def get(self, path: str, **params: str) -> JSON:
        return await self._call("GET", path, params=params or None)

    async def create(self, path: str, body: JSON) -> JSON:
        return await self._call("POST", path, body)

    async def update(self, path: str, body: JSON) -> JSON:
        return await self._call("PUT", path, body)

    async def merge_patch(self, path: str, patch: JSON) -> JSON:
        return await self._call("PATCH", path, patch, content_type="application/merge-patch+json")

    async def delete(self, path: str) -> JSON:
        return await self._call("DELETE", path)

    async def watch(self, path: str, **params: str) -> AsyncIterator[JSON]:
        """The events of a watch, until the server ends it."""
        query = {**params, "watch": "true", "allowWatchBookmarks": "true"}
        try:
            async with self._http.stream("GET", path, params=query, timeout=None) as answer:
                if not answer.is_success:
                    await answer.aread()
                    raise APIError(answer.status_code, "", answer.text[:200])
                async for line in answer.aiter_lines():
                    if line.strip():
                        event = orjson.loads(line)
                        if isinstance(event, dict):
                            yield event
        except httpx.HTTPError as err:
            raise APIError(0, "ConnectionFailed", f"watch {path}: {err}") from err
