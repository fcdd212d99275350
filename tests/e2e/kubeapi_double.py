"""A loopback HTTPS stand-in for the three kube-apiserver endpoints delegated auth calls.

No kube-apiserver can be installed here (no registry this project uses ships one), and this
server does not serve the review APIs yet; until it does, this double answers in their place,
with the JSON kube-apiserver sends:

- ``GET /api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication``:
  the ConfigMap (``configmap_data``; ``None`` answers 403 Forbidden, as RBAC would);
- ``POST /apis/authentication.k8s.io/v1/tokenreviews``: the review with ``status``
  (``authenticated`` and ``user`` for a token in ``users``);
- ``POST /apis/authorization.k8s.io/v1/subjectaccessreviews``: the review with ``status``
  ``allowed`` (or ``denied`` with a reason) from ``allow``, a function of the spec.

Every call must carry the bearer ``token`` the kubeconfig it writes names; every review is
recorded for the tests to inspect.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from apiserver.server.certs import ensure_serving_certs

CONFIGMAP_PATH = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def _allow_everyone(spec: dict[str, Any]) -> bool:
    return True


@dataclass
class KubeAPIDouble:
    workdir: Path
    token: str = "extension-server-sa-token"
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    """token -> TokenReview status.user"""
    allow: Callable[[dict[str, Any]], bool] = _allow_everyone
    configmap_data: dict[str, str] | None = None
    token_reviews: list[dict[str, Any]] = field(default_factory=list)
    access_reviews: list[dict[str, Any]] = field(default_factory=list)
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

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self) -> bool:
                if self.headers.get("Authorization") == f"Bearer {double.token}":
                    return True
                self._answer(401, _status(401, "Unauthorized", "Unauthorized"))
                return False

            def do_GET(self) -> None:
                if not self._authorized():
                    return
                if self.path != CONFIGMAP_PATH:
                    self._answer(404, _status(404, "NotFound", f"{self.path} not found"))
                    return
                double.configmap_reads += 1
                if double.configmap_data is None:
                    self._answer(
                        403,
                        _status(
                            403,
                            "Forbidden",
                            'configmaps "extension-apiserver-authentication" is forbidden',
                        ),
                    )
                    return
                self._answer(200, _configmap(dict(double.configmap_data)))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                review = json.loads(self.rfile.read(length))
                if not self._authorized():
                    return
                if self.path == TOKEN_REVIEWS:
                    double.token_reviews.append(review)
                    user = double.users.get(review["spec"]["token"])
                    status: dict[str, Any] = {"authenticated": user is not None}
                    if user is not None:
                        status["user"] = user
                    self._answer(201, {**_review_meta(review), "status": status})
                elif self.path == SUBJECT_ACCESS_REVIEWS:
                    double.access_reviews.append(review)
                    allowed = double.allow(review["spec"])
                    status = (
                        {"allowed": True, "reason": "allowed by the test policy"}
                        if allowed
                        else {
                            "allowed": False,
                            "denied": True,
                            "reason": "denied by the test policy",
                        }
                    )
                    self._answer(201, {**_review_meta(review), "status": status})
                else:
                    self._answer(404, _status(404, "NotFound", f"{self.path} not found"))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def write_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig that reaches this double, as the extension's ServiceAccount."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "kube",
                    "cluster": {"server": self.url, "certificate-authority": str(self._ca)},
                }
            ],
            "users": [{"name": "sa", "user": {"token": self.token}}],
            "contexts": [{"name": "kube", "context": {"cluster": "kube", "user": "sa"}}],
            "current-context": "kube",
        }
        path.write_text(yaml.safe_dump(config))
        return path


def _review_meta(review: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": review["kind"],
        "apiVersion": review["apiVersion"],
        "metadata": {"creationTimestamp": None},
        "spec": review["spec"],
    }


def _configmap(data: dict[str, str]) -> dict[str, Any]:
    return {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": "extension-apiserver-authentication",
            "namespace": "kube-system",
            "resourceVersion": "1",
        },
        "data": data,
    }


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
