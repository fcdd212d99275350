"""A loopback HTTPS front for the one kube-apiserver endpoint a standalone server lacks.

No kube-apiserver can be installed here (no registry this project uses ships one). A
standalone process of this server plays it: it serves TokenReview and SubjectAccessReview
for real, with its token file and its RBAC. What it does not serve is ConfigMaps, and
aggregated mode reads ``kube-system/extension-apiserver-authentication`` with the same
credentials (``--authentication-kubeconfig``) it sends its TokenReviews with. This front
answers that one read:

- ``GET /api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication``:
  the ConfigMap (``configmap_data``; ``None`` answers 403 Forbidden, as RBAC would);

and relays every other request, its method, path, bearer token and body unchanged, to the
standalone server (``upstream``), answering with what that server answered.
"""

from __future__ import annotations

import json
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import yaml

from apiserver.server.certs import ensure_serving_certs

from .harness import ServerProcess

CONFIGMAP_PATH = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"


@dataclass
class KubeAPIDouble:
    workdir: Path
    upstream: ServerProcess
    """The standalone server that answers everything but the ConfigMap."""
    token: str
    """The bearer token the kubeconfig it writes carries (one the upstream knows)."""
    configmap_data: dict[str, str] | None = None
    configmap_reads: int = 0
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> KubeAPIDouble:
        files = ensure_serving_certs(self.workdir / "certs")
        self._ca = files.ca_cert
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(files.cert), str(files.key))
        double = self
        relay = httpx.Client(
            base_url=self.upstream.url, verify=self.upstream.ssl_context(), timeout=30
        )

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self, code: int, data: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _relay(self, body: bytes | None) -> None:
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() in ("authorization", "content-type", "accept", "user-agent")
                }
                answer = relay.request(self.command, self.path, headers=headers, content=body)
                self._answer(answer.status_code, answer.content)

            def do_GET(self) -> None:
                if self.path != CONFIGMAP_PATH:
                    self._relay(None)
                    return
                if self.headers.get("Authorization") != f"Bearer {double.token}":
                    self._answer(401, _status(401, "Unauthorized", "Unauthorized"))
                    return
                double.configmap_reads += 1
                if double.configmap_data is None:
                    message = 'configmaps "extension-apiserver-authentication" is forbidden'
                    self._answer(403, _status(403, "Forbidden", message))
                    return
                self._answer(200, _configmap(dict(double.configmap_data)))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._relay(self.rfile.read(length))

        self._relay_client = relay
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
            self._relay_client.close()

    def write_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig that reaches this front, as the extension's ServiceAccount."""
        return write_token_kubeconfig(path, self.url, self._ca, self.token)


def write_token_kubeconfig(path: Path, server: str, ca: Path, token: str) -> Path:
    """A kubeconfig for ``server`` (trusting ``ca``) with a bearer ``token``."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "kube", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "kube", "context": {"cluster": "kube", "user": "u"}}],
        "current-context": "kube",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def _configmap(data: dict[str, str]) -> bytes:
    return json.dumps(
        {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {
                "name": "extension-apiserver-authentication",
                "namespace": "kube-system",
                "resourceVersion": "1",
            },
            "data": data,
        }
    ).encode()


def _status(code: int, reason: str, message: str) -> bytes:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    ).encode()
