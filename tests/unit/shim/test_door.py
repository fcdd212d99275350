"""shim/door.py: who gets through the shim's door, in-process — the policy (the scheduler's
users and groups for the extender verbs, anyone known for /metrics), the middleware's 401
and 403 ``Status`` answers and what it lets through (a client certificate of the client CA,
carried in the ASGI TLS extension), and the laptop's client certificate beside the shim's
own CA, made once and made again when the CA changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from cryptography import x509

from apiserver.auth.credentials import Credentials
from apiserver.auth.x509 import CABundle, user_of_certificate, verify_client_certificate
from apiserver.machinery.user import UserInfo
from apiserver.server.certs import cert_pem, issue_client_cert, make_ca, write_client_cert
from apiserver.shim.door import (
    SCHEDULER_USER,
    SchedulerOnly,
    ShimDoor,
    laptop_client_ca,
    shim_authenticator,
)


class _Tokens:
    """Bearer tokens from a table (the shape of a TokenReview's answer)."""

    def __init__(self, users: dict[str, UserInfo]) -> None:
        self.users = users

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        header = credentials.header("authorization") or ""
        return self.users.get(header.removeprefix("Bearer "))


async def _inner(scope: Any, receive: Any, send: Any) -> None:
    body = orjson.dumps({"user": scope["user"].name if "user" in scope else None})
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


POLICY = SchedulerOnly([SCHEDULER_USER], ["schedulers"])
USERS = {
    "sched": UserInfo(SCHEDULER_USER),
    "grouped": UserInfo("custom-scheduler", groups=("schedulers",)),
    "alice": UserInfo("alice", groups=("dev",)),
}


def test_policy_allows_the_scheduler_and_metrics_for_anyone_known() -> None:
    for path in ("/filter", "/prioritize", "/bind"):
        assert POLICY.allows(USERS["sched"], path)
        assert POLICY.allows(USERS["grouped"], path)
        assert not POLICY.allows(USERS["alice"], path)
    assert POLICY.allows(USERS["alice"], "/metrics")


async def _call(app: Any, path: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://shim") as client:
        return await client.post(path, headers=headers)


@pytest.mark.parametrize(
    ("token", "code"), [(None, 401), ("nobody", 401), ("alice", 403), ("sched", 200)]
)
async def test_the_door_answers_401_403_or_lets_through(token: str | None, code: int) -> None:
    app = ShimDoor(_inner, _Tokens(USERS), POLICY)
    answer = await _call(app, "/bind", token)
    assert answer.status_code == code
    if code == 200:
        assert answer.json() == {"user": SCHEDULER_USER}
        return
    body = answer.json()
    assert body["kind"] == "Status"
    assert body["code"] == code
    assert body["reason"] == ("Unauthorized" if code == 401 else "Forbidden")


async def test_healthz_is_open() -> None:
    app = ShimDoor(_inner, _Tokens({}), POLICY)
    answer = await _call(app, "/healthz")
    assert answer.status_code == 200


async def _with_certificate(app: Any, pem: str) -> int:
    """The status of a POST /filter whose connection presented ``pem`` (as the server's
    TLS hook puts it into the scope)."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/filter",
        "headers": [],
        "query_string": b"",
        "extensions": {"tls": {"client_cert_chain": [pem]}},
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return int(sent[0]["status"])


async def test_a_client_certificate_of_the_client_ca_gets_in(tmp_path: Path) -> None:
    ca = make_ca("scheduler-client-ca")
    (tmp_path / "client-ca.crt").write_bytes(cert_pem(ca[0]))
    stranger = make_ca("stranger")
    async with httpx.AsyncClient(base_url="https://127.0.0.1:9") as api:
        app = ShimDoor(_inner, shim_authenticator(str(tmp_path / "client-ca.crt"), api), POLICY)
        scheduler = cert_pem(issue_client_cert(*ca, SCHEDULER_USER)[0]).decode()
        alice = cert_pem(issue_client_cert(*ca, "alice")[0]).decode()
        forged = cert_pem(issue_client_cert(*stranger, SCHEDULER_USER)[0]).decode()
        assert await _with_certificate(app, scheduler) == 200
        assert await _with_certificate(app, alice) == 403
        assert await _with_certificate(app, forged) == 401


def test_a_client_ca_file_that_is_not_a_ca_is_refused_at_start(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("not a certificate")
    with pytest.raises(ValueError, match="--client-ca-file"):
        shim_authenticator(str(tmp_path / "ca.crt"), httpx.AsyncClient())


def _scheduler_cert(directory: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate((directory / "scheduler.crt").read_bytes())


def test_the_laptop_client_certificate_is_made_once_beside_the_ca(tmp_path: Path) -> None:
    certs = tmp_path / "shim"
    ca_file = laptop_client_ca(certs)
    cert = _scheduler_cert(certs)
    verify_client_certificate(cert, CABundle.from_pem(ca_file.read_bytes()))
    user = user_of_certificate(cert)
    assert user is not None
    assert user.name == SCHEDULER_USER
    assert (certs / "scheduler.key").stat().st_mode & 0o077 == 0
    laptop_client_ca(certs)
    assert _scheduler_cert(certs) == cert  # kept while the CA vouches for it


def test_the_laptop_client_certificate_is_made_again_for_a_new_ca(tmp_path: Path) -> None:
    certs = tmp_path / "shim"
    laptop_client_ca(certs)
    old = _scheduler_cert(certs)
    for name in ("ca.crt", "ca.key"):
        (certs / name).unlink()
    ca_file = laptop_client_ca(certs)
    new = _scheduler_cert(certs)
    assert new != old
    verify_client_certificate(new, CABundle.from_pem(ca_file.read_bytes()))


def test_a_certificate_another_ca_signed_is_replaced(tmp_path: Path) -> None:
    certs = tmp_path / "shim"
    laptop_client_ca(certs)
    other = tmp_path / "other"
    laptop_client_ca(other)
    write_client_cert(other, SCHEDULER_USER, [], certs / "scheduler")
    ca_file = laptop_client_ca(certs)
    verify_client_certificate(_scheduler_cert(certs), CABundle.from_pem(ca_file.read_bytes()))
