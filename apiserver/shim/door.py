"""Who may call the shim: the scheduler, and nobody else.

kube-scheduler reaches an extender over HTTPS and proves who it is with the client
certificate of its extender ``tlsConfig`` (``certFile``/``keyFile``); it sends no token. So
the shim authenticates, as Kubernetes' own servers do, with:

- a client certificate that ``--client-ca-file`` signed (the install makes a CA for the
  scheduler alone; on a laptop the shim's own CA, see ``laptop_client_ca``): its CN is the
  user, each O a group;
- a bearer token, checked by a TokenReview against the API server the shim talks to (for a
  scheduler that runs with a ServiceAccount token instead of a certificate).

Then it authorizes: ``/filter``, ``/prioritize`` and ``/bind`` only for the users of
``--allowed-users`` or the groups of ``--allowed-groups`` (the scheduler's identity);
``/metrics`` for any authenticated caller; ``/healthz`` for anyone (the kubelet's probes).
Anonymous calls get a 401 ``Status``, a certificate no trusted CA signed is no credential
(401 as well), and an authenticated caller that is not the scheduler gets a 403 ``Status``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import orjson
from cryptography import x509
from starlette.types import ASGIApp, Receive, Scope, Send

# The pieces of auth/ that reach no storage: the shim must not (pyproject's contract), so
# the door is this small middleware rather than the server's.
from ..auth.authenticator import Authenticator, AuthenticatorChain
from ..auth.credentials import Credentials
from ..auth.tokenreview import TokenReviewAuthenticator
from ..auth.x509 import (
    CABundle,
    CertificateError,
    ClientCertAuthenticator,
    FileCA,
    verify_client_certificate,
)
from ..kubeclient import KubeClient
from ..machinery.user import UserInfo
from ..server.certs import ensure_serving_certs, write_client_cert
from ..server.installcerts import SCHEDULER_USER

log = logging.getLogger(__name__)

__all__ = [
    "SCHEDULER_USER",
    "SchedulerOnly",
    "ShimDoor",
    "laptop_client_ca",
    "shim_authenticator",
]

OPEN_PATHS = frozenset({"/healthz"})
AUTHENTICATED_PATHS = frozenset({"/metrics"})
LAPTOP_CLIENT_CERT = "scheduler"
"""``<cert-dir>/scheduler.crt`` and ``.key``: the laptop scheduler's client certificate."""


class SchedulerOnly:
    """Who may use which door: the extender verbs only the scheduler's identity, the
    metrics anyone authenticated."""

    def __init__(self, users: Iterable[str], groups: Iterable[str] = ()) -> None:
        self.users = frozenset(users)
        self.groups = frozenset(groups)

    def allows(self, user: UserInfo, path: str) -> bool:
        if path in AUTHENTICATED_PATHS:
            return True
        return user.name in self.users or bool(self.groups.intersection(user.groups))


def shim_authenticator(client_ca_file: str | None, api: KubeClient) -> Authenticator:
    """Client certificates of ``client_ca_file`` (re-read when it changes), then bearer
    tokens by TokenReview over ``api`` (the shim's connection to the API server)."""
    methods: list[Authenticator] = []
    if client_ca_file:
        try:
            methods.append(ClientCertAuthenticator(FileCA(client_ca_file)))
        except (OSError, ValueError) as exc:
            raise ValueError(f"--client-ca-file {client_ca_file}: {exc}") from exc
    methods.append(TokenReviewAuthenticator(api))
    return AuthenticatorChain(methods)


def _status(code: int, reason: str, message: str) -> bytes:
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "details": {},
            "code": code,
        }
    )


class ShimDoor:
    """The ASGI middleware in front of the shim: a 401 ``Status`` for a caller no method
    authenticates, a 403 ``Status`` for one that is not the scheduler."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator, policy: SchedulerOnly) -> None:
        self.app = app
        self.authenticator = authenticator
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        user = await self.authenticator.authenticate(Credentials.from_scope(scope))
        if user is None:
            await self._refuse(send, 401, "Unauthorized", "Unauthorized")
            return
        if not self.policy.allows(user, scope["path"]):
            message = (
                f'forbidden: User "{user.name}" cannot {scope["method"].lower()} path'
                f' "{scope["path"]}": only the scheduler may call the shim'
            )
            await self._refuse(send, 403, "Forbidden", message)
            return
        scope["user"] = user
        await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(send: Send, code: int, reason: str, message: str) -> None:
        body = _status(code, reason, message)
        await send(
            {
                "type": "http.response.start",
                "status": code,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def laptop_client_ca(cert_dir: str | Path, user: str = SCHEDULER_USER) -> Path:
    """The CA of ``cert_dir`` (the shim's self-made serving CA) as the client CA, with a
    client certificate for ``user`` beside it (``scheduler.crt``/``.key``, made when
    missing), which ``python -m apiserver schedule`` presents by default."""
    files = ensure_serving_certs(cert_dir)
    cert = Path(cert_dir) / f"{LAPTOP_CLIENT_CERT}.crt"
    if not _still_good(cert, files.ca_cert):
        write_client_cert(cert_dir, user, [], Path(cert_dir) / LAPTOP_CLIENT_CERT)
        log.info("wrote the scheduler's client certificate %s (user %s)", cert, user)
    return files.ca_cert


def _still_good(cert: Path, ca: Path) -> bool:
    """Whether ``cert`` (and its key) exist and ``ca`` still vouches for it (a CA made anew
    since, or an expired certificate, means a new one)."""
    if not (cert.exists() and cert.with_suffix(".key").exists()):
        return False
    try:
        verify_client_certificate(
            x509.load_pem_x509_certificate(cert.read_bytes()),
            CABundle.from_pem(ca.read_bytes()),
        )
    except (CertificateError, ValueError):
        return False
    return True
