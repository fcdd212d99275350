"""What an AllocationReview may read and hold, through the real server (RBAC standalone).

A user who may only create AllocationReviews is refused a review of another namespace's
claim and of a claim that does not exist with the same 403 (same reason, same details
shape, the same message but for the name it sent), and the answer carries nothing of the
claim; an inline spec needs nothing more. A user who may read the claim gets the answer
(and a missing claim is the 404 a get would be). ``reserve: true`` needs ``create`` on
devicereservations: without it a 403 and nothing is held, with it a reservation."""

from __future__ import annotations

import concurrent.futures
import secrets
import shlex
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from .harness import REPO, ServerProcess, start_server
from .objects import is_status
from .readme import commands, sh_blocks

GROUP = "resource.k8s.io"
REVIEWS = f"/apis/{GROUP}/v1alpha3/allocationreviews"
RESERVATIONS = f"/apis/{GROUP}/v1alpha3/devicereservations"
USERS = ("admin", "reviewer", "reader", "reserver")
POLICY = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: allocation-reviewer}
rules:
- {apiGroups: [resource.k8s.io], resources: [allocationreviews], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: allocation-reviewers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: allocation-reviewer}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: reviewer}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: reader}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: reserver}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: claim-reader, namespace: team-a}
rules:
- {apiGroups: [resource.k8s.io], resources: [resourceclaims], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: claim-readers, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: claim-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: reader}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: reserver}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: device-reserver}
rules:
- {apiGroups: [resource.k8s.io], resources: [devicereservations], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: device-reservers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: device-reserver}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: reserver}
"""


def _claim(namespace: str, name: str, request: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": request,
                        "exactly": {"deviceClassName": "gpu.example.com", "count": 1},
                    }
                ]
            }
        },
    }


@pytest.fixture(scope="module")
def tokens() -> dict[str, str]:
    return {user: secrets.token_urlsafe(16) for user in USERS}


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, tokens: dict[str, str]
) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("reviewaccess")
    token_file = workdir / "tokens.csv"
    lines = [f'{tokens["admin"]},admin,admin,"system:masters"']
    lines += [f"{tokens[u]},{u},{u}-uid" for u in USERS if u != "admin"]
    token_file.write_text("\n".join(lines) + "\n")
    proc = start_server(workdir, ["--token-auth-file", str(token_file)])
    for name in ("00-deviceclasses.yaml", "05-nodes.yaml", "10-node-slices.yaml"):
        proc.kubectl("apply", "-f", str(REPO / "examples" / name))
    for namespace in ("team-a", "team-b"):
        proc.kubectl("create", "namespace", namespace)
    proc.kubectl("apply", "-f", "-", input=POLICY)
    claims = [
        _claim("team-a", "shared", "gpu"),
        _claim("team-b", "private", "secret-request-name"),
    ]
    proc.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(claims))
    yield proc
    proc.stop()


def _as(server: ServerProcess, token: str) -> httpx.Client:
    client = server.client()
    client.headers["Authorization"] = f"Bearer {token}"
    return client


def _review(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1alpha3", "kind": "AllocationReview", "spec": spec}


def _stored(namespace: str, name: str) -> dict[str, Any]:
    return _review({"claims": [{"namespace": namespace, "name": name}]})


INLINE = {
    "name": "inline",
    "spec": {
        "devices": {
            "requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 1}}
            ]
        }
    },
}


def _reservations(server: ServerProcess) -> list[str]:
    with server.client() as client:
        items = client.get(RESERVATIONS).json()["items"]
    return sorted(i["metadata"]["name"] for i in items)


def test_a_forbidden_claim_and_a_missing_one_get_the_same_403(
    server: ServerProcess, tokens: dict[str, str]
) -> None:
    with _as(server, tokens["reviewer"]) as client:
        existing = client.post(REVIEWS, json=_stored("team-b", "private"))
        missing = client.post(REVIEWS, json=_stored("team-b", "nothing-here"))
    for answer in (existing, missing):
        assert answer.status_code == 403, answer.text
        assert is_status(answer.json(), 403)
        assert answer.json()["reason"] == "Forbidden"
    one, other = existing.json(), missing.json()
    assert set(one) == set(other)
    assert set(one["details"]) == set(other["details"])
    assert one["details"]["kind"] == other["details"]["kind"] == "resourceclaims"
    # Word for word the same, but for the name the caller sent.
    assert one["message"].replace("private", "X") == other["message"].replace("nothing-here", "X")
    # Nothing of the stored claim leaks.
    assert "secret-request-name" not in existing.text
    assert "gpu.example.com" not in existing.text


def test_the_same_refusal_in_a_review_of_several_claims(
    server: ServerProcess, tokens: dict[str, str]
) -> None:
    """An allowed inline claim beside a forbidden stored one does not open the door."""
    spec = {"claims": [INLINE, {"namespace": "team-b", "name": "private"}]}
    with _as(server, tokens["reader"]) as client:
        answer = client.post(REVIEWS, json=_review(spec))
    assert answer.status_code == 403, answer.text
    assert "secret-request-name" not in answer.text


def test_an_inline_spec_needs_nothing_more(server: ServerProcess, tokens: dict[str, str]) -> None:
    with _as(server, tokens["reviewer"]) as client:
        answer = client.post(REVIEWS, json=_review({"claims": [INLINE]}))
    assert answer.status_code == 201, answer.text
    assert any(n["feasible"] for n in answer.json()["status"]["nodes"])


def test_a_reader_of_the_claim_gets_the_answer(
    server: ServerProcess, tokens: dict[str, str]
) -> None:
    with _as(server, tokens["reader"]) as client:
        answer = client.post(REVIEWS, json=_stored("team-a", "shared"))
        missing = client.post(REVIEWS, json=_stored("team-a", "nothing-here"))
        elsewhere = client.post(REVIEWS, json=_stored("team-b", "private"))
    assert answer.status_code == 201, answer.text
    feasible = [n for n in answer.json()["status"]["nodes"] if n["feasible"]]
    assert feasible
    results = feasible[0]["allocations"][0]["devices"]["results"]
    assert {r["request"] for r in results} == {"gpu"}
    # Who may read the namespace's claims learns from a review only what a get tells it.
    assert missing.status_code == 404, missing.text
    assert elsewhere.status_code == 403, elsewhere.text


def test_reserving_needs_create_on_devicereservations(
    server: ServerProcess, tokens: dict[str, str]
) -> None:
    before = _reservations(server)
    spec = {"claims": [INLINE], "reserve": True, "reservationSeconds": 60}
    with _as(server, tokens["reader"]) as client:
        refused = client.post(REVIEWS, json=_review(spec))
    assert refused.status_code == 403, refused.text
    assert is_status(refused.json(), 403)
    assert refused.json()["details"]["kind"] == "devicereservations"
    assert _reservations(server) == before  # nothing held
    with _as(server, tokens["reserver"]) as client:
        held = client.post(REVIEWS, json=_review(spec))
    assert held.status_code == 201, held.text
    reservation = held.json()["status"]["reservation"]["name"]
    assert _reservations(server) == sorted([*before, reservation])
    server.kubectl("delete", "devicereservations", reservation)


def test_kubectl_says_who_may_reserve(server: ServerProcess) -> None:
    for user, answer in (("reserver", "yes"), ("reader", "no")):
        done = server.kubectl(
            "auth", "can-i", "create", "devicereservations", "--as", user, check=False
        )
        assert done.stdout.strip() == answer


def test_refusals_under_concurrent_reviews_hold_nothing(
    server: ServerProcess, tokens: dict[str, str]
) -> None:
    """Many callers at once, several rounds: each refused one is refused, each allowed one
    answered, and only the allowed reservers hold devices."""
    before = _reservations(server)
    spec = {"claims": [INLINE], "reserve": True, "reservationSeconds": 60}

    def ask(user: str) -> tuple[str, int, str | None]:
        with _as(server, tokens[user]) as client:
            answer = client.post(REVIEWS, json=_review(spec))
        held = None
        if answer.status_code == 201:
            held = (answer.json()["status"].get("reservation") or {}).get("name")
        return user, answer.status_code, held

    for _ in range(3):
        users = ["reader", "reviewer", "reserver"] * 4
        with concurrent.futures.ThreadPoolExecutor(len(users)) as pool:
            outcomes = list(pool.map(ask, users))
        made = []
        for user, code, held in outcomes:
            assert code == (201 if user == "reserver" else 403), (user, code)
            if held:
                made.append(held)
        assert _reservations(server) == sorted([*before, *made])
        for name in made:
            server.kubectl("delete", "devicereservations", name)


def test_the_readmes_reserver_role(server: ServerProcess) -> None:
    """The README's commands that let a user reserve do so, as written."""
    [block] = sh_blocks("### AllocationReview")
    lines = commands(block)
    for line in lines:
        words = shlex.split(line, comments=True)
        assert words[0] == "kubectl"
        done = server.kubectl(*words[1:], check=False)
        assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "yes"  # the last: kubectl auth can-i
    spec = {"claims": [INLINE], "reserve": True, "reservationSeconds": 60}
    with server.client() as client:  # the admin, as kubectl --as
        made = client.post(
            REVIEWS, json=_review(spec), headers={"Impersonate-User": "my-scheduler"}
        )
    assert made.status_code == 201, made.text
    reservation = made.json()["status"]["reservation"]["name"]
    server.kubectl("delete", "devicereservations", reservation)
