"""RBAC through the real server: users from a token file, roles and bindings applied with
kubectl, decisions seen as 403 ``Status`` objects worded as kube-apiserver words them,
impersonation with ``kubectl --as``, and the KEP-5677 ``pool-status-reader`` story."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from .harness import ServerProcess, start_server
from .objects import RPSR_PATH, is_status

USERS = ("grace", "bob", "judy")
POOL_STATUS_READER = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: pool-status-reader
rules:
- apiGroups: ["resource.k8s.io"]
  resources: ["resourcepoolstatusrequests"]
  verbs: ["create", "get", "list", "delete"]
"""


STORY_BINDINGS = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: grace-pool-status
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pool-status-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: grace}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: bob-view
  namespace: team-a
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: judy-team-view
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: team-judy}]
"""


NAMESPACES = ("team-a", "team-b", "printing", "elsewhere", "judy-ns")


def _grant_story_roles(server: RBACServer) -> None:
    """The KEP's role for grace, view in team-a for bob, view for judy's group (idempotent)."""
    server.proc.kubectl("apply", "-f", "-", input=POOL_STATUS_READER)
    server.proc.kubectl("apply", "-f", "-", input=STORY_BINDINGS)


class RBACServer:
    def __init__(self, proc: ServerProcess, tokens: dict[str, str]) -> None:
        self.proc = proc
        self.tokens = tokens

    def kubectl_as(self, user: str, *args: str, check: bool = True) -> str:
        result = self.proc.kubectl(f"--token={self.tokens[user]}", *args, check=check)
        return result.stdout if check else result.stderr

    def client(self, user: str):  # type: ignore[no-untyped-def]
        client = self.proc.client()
        client.headers["Authorization"] = f"Bearer {self.tokens[user]}"
        return client


@pytest.fixture(scope="module")
def rbac_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RBACServer]:
    workdir = tmp_path_factory.mktemp("rbac")
    tokens = {name: secrets.token_urlsafe(16) for name in ("admin", *USERS)}
    lines = [f'{tokens["admin"]},admin,admin,"system:masters"']
    lines += [f'{tokens[u]},{u},{u}-uid,"team-{u}"' for u in USERS]
    token_file = workdir / "tokens.csv"
    token_file.write_text("\n".join(lines) + "\n")
    proc = start_server(workdir, ["--token-auth-file", str(token_file)])
    # Objects are only created in namespaces that exist (namespace lifecycle).
    for namespace in NAMESPACES:
        proc.kubectl("create", "namespace", namespace)
    try:
        yield RBACServer(proc, tokens)
    finally:
        proc.stop()


def _rpsr(name: str) -> dict[str, object]:
    return {
        "apiVersion": "resource.k8s.io/v1alpha1",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": "example.com/gpu"},
    }


def test_bootstrap_roles_listed_as_kubectl_lists_them(rbac_server: RBACServer) -> None:
    roles = rbac_server.proc.kubectl("get", "clusterroles").stdout.splitlines()
    assert roles[0].split() == ["NAME", "CREATED", "AT"]
    names = {line.split()[0] for line in roles[1:]}
    assert {"cluster-admin", "admin", "edit", "view", "system:basic-user"} <= names
    bindings = rbac_server.proc.kubectl("get", "clusterrolebindings", "-o", "wide").stdout
    header = bindings.splitlines()[0].split()
    assert header == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    row = next(line for line in bindings.splitlines() if line.startswith("cluster-admin "))
    assert "ClusterRole/cluster-admin" in row
    assert "system:masters" in row


def test_admin_role_shows_aggregated_rules(rbac_server: RBACServer) -> None:
    admin = yaml.safe_load(
        rbac_server.proc.kubectl("get", "clusterrole", "admin", "-o", "yaml").stdout
    )
    resources = {r for rule in admin["rules"] for r in rule.get("resources", [])}
    # From system:aggregate-to-view (through view and edit) and system:aggregate-to-admin.
    assert {"resourceclaims", "resourceslicepatches", "events", "rolebindings"} <= resources
    assert "resourcepoolstatusrequests" not in resources  # KEP-5677: granted explicitly


def test_user_without_bindings_gets_403_naming_verb_resource_and_user(
    rbac_server: RBACServer,
) -> None:
    with rbac_server.client("bob") as client:
        response = client.get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims")
        assert response.status_code == 403
        body = response.json()
        assert is_status(body, 403)
        assert body["reason"] == "Forbidden"
        assert body["message"] == (
            'resourceclaims.resource.k8s.io is forbidden: User "bob" cannot list resource'
            ' "resourceclaims" in API group "resource.k8s.io" in the namespace "default"'
        )
        # Discovery is open to every authenticated user (system:discovery).
        assert client.get("/apis").status_code == 200


def test_pool_status_reader_story(rbac_server: RBACServer) -> None:
    # The KEP's ClusterRole, applied verbatim; the binding made as an administrator would.
    rbac_server.proc.kubectl("apply", "-f", "-", input=POOL_STATUS_READER)
    rbac_server.proc.kubectl(
        "create",
        "clusterrolebinding",
        "grace-pool-status-story",
        "--clusterrole=pool-status-reader",
        "--user=grace",
    )
    name = f"story-{uuid.uuid4().hex[:8]}"
    with rbac_server.client("grace") as client:
        created = client.post(RPSR_PATH, json=_rpsr(name))
        assert created.status_code == 201, created.text
        assert client.get(f"{RPSR_PATH}/{name}").status_code == 200
        assert client.get(RPSR_PATH).status_code == 200
        claims = client.get("/apis/resource.k8s.io/v1/resourceclaims")
        assert claims.status_code == 403
        assert 'User "grace" cannot list resource "resourceclaims"' in claims.json()["message"]
        refused = client.put(f"{RPSR_PATH}/{name}", json=client.get(f"{RPSR_PATH}/{name}").json())
        assert refused.status_code == 403  # update is not among the role's verbs
        assert client.delete(f"{RPSR_PATH}/{name}").status_code == 200
    listed = rbac_server.kubectl_as("grace", "get", "resourcepoolstatusrequests")
    assert name not in listed
    denied = rbac_server.kubectl_as("grace", "get", "resourceclaims", "-A", check=False)
    assert "Forbidden" in denied
    assert 'User "grace" cannot list resource "resourceclaims"' in denied


def test_role_binding_grants_in_its_namespace_only(rbac_server: RBACServer) -> None:
    _grant_story_roles(rbac_server)
    assert (
        "No resources found"
        in rbac_server.proc.kubectl(
            f"--token={rbac_server.tokens['bob']}", "get", "resourceclaims", "-n", "team-a"
        ).stderr
    )
    denied = rbac_server.kubectl_as("bob", "get", "resourceclaims", "-n", "team-b", check=False)
    assert (
        'cannot list resource "resourceclaims" in API group "resource.k8s.io" in the namespace "team-b"'
        in denied
    )


def test_group_binding(rbac_server: RBACServer) -> None:
    _grant_story_roles(rbac_server)
    rbac_server.kubectl_as("judy", "get", "resourceslicepatches")
    denied = rbac_server.kubectl_as("judy", "delete", "resourceslicepatch", "any-name", check=False)
    assert 'User "judy" cannot delete resource "resourceslicepatches"' in denied


def test_impersonation(rbac_server: RBACServer) -> None:
    # system:masters may impersonate anyone; the request then runs as that user.
    denied = rbac_server.proc.kubectl("--as=bob", "get", "deviceclasses", check=False).stderr
    assert 'User "bob" cannot list resource "deviceclasses"' in denied
    rbac_server.proc.kubectl("--as=bob", "--as-group=system:masters", "get", "deviceclasses")
    # Someone without the impersonate verb is refused, naming what was asked.
    refused = rbac_server.kubectl_as("bob", "--as=grace", "get", "deviceclasses", check=False)
    assert (
        'users "grace" is forbidden: User "bob" cannot impersonate resource "users" in API group'
        ' "" at the cluster scope'
    ) in refused
    # Granting impersonation of one user by name allows exactly that.
    rbac_server.proc.kubectl(
        "create",
        "clusterrole",
        "impersonate-grace",
        "--verb=impersonate",
        "--resource=users",
        "--resource-name=grace",
    )
    rbac_server.proc.kubectl(
        "create",
        "clusterrolebinding",
        "bob-impersonates-grace",
        "--clusterrole=impersonate-grace",
        "--user=bob",
    )
    rbac_server.kubectl_as("bob", "--as=grace", "get", "resourcepoolstatusrequests")
    still = rbac_server.kubectl_as("bob", "--as=judy", "get", "deviceclasses", check=False)
    assert 'cannot impersonate resource "users"' in still


def test_bad_rbac_objects_name_the_field_and_store_nothing(rbac_server: RBACServer) -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "bad-urls", "namespace": "default"},
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}],
    }
    out = rbac_server.proc.kubectl("apply", "-f", "-", input=yaml.safe_dump(role), check=False)
    assert out.returncode != 0
    assert "rules[0].nonResourceURLs" in out.stderr
    assert "namespaced rules cannot apply to non-resource URLs" in out.stderr
    missing = rbac_server.proc.kubectl("get", "role", "bad-urls", "-n", "default", check=False)
    assert "NotFound" in missing.stderr
    binding = rbac_server.proc.kubectl(
        "create", "clusterrolebinding", "change-me", "--clusterrole=view", "--user=x"
    )
    assert binding.returncode == 0
    changed = rbac_server.proc.kubectl(
        "patch",
        "clusterrolebinding",
        "change-me",
        "--type=merge",
        "-p",
        '{"roleRef":{"name":"edit"}}',
        check=False,
    )
    assert "cannot change roleRef" in changed.stderr


def test_token_file_users_are_who_they_say(rbac_server: RBACServer, tmp_path: Path) -> None:
    # An unknown token is not a user at all.
    with rbac_server.proc.client() as client:
        client.headers["Authorization"] = "Bearer not-a-token"
        assert client.get("/apis").status_code == 401


def test_roles_and_role_bindings_printed_as_kubectl_prints_them(rbac_server: RBACServer) -> None:
    kubectl = rbac_server.proc.kubectl
    kubectl(
        "create",
        "role",
        "claim-reader",
        "--verb=get,list",
        "--resource=resourceclaims",
        "-n",
        "printing",
    )
    kubectl(
        "create",
        "rolebinding",
        "claim-readers",
        "--role=claim-reader",
        "--user=bob",
        "--group=team-x",
        "--serviceaccount=printing:robot",
        "-n",
        "printing",
    )
    roles = kubectl("get", "roles", "-n", "printing").stdout.splitlines()
    assert roles[0].split() == ["NAME", "CREATED", "AT"]
    assert roles[1].split()[0] == "claim-reader"
    wide = kubectl("get", "rolebindings", "-n", "printing", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    cells = wide[1].split()
    assert cells[0:2] == ["claim-readers", "Role/claim-reader"]
    assert cells[3:] == ["bob", "team-x", "printing:robot"]
    # The binding grants what the Role says, in its namespace.
    rbac_server.kubectl_as("bob", "get", "resourceclaims", "-n", "printing")
    denied = rbac_server.kubectl_as("bob", "get", "resourceclaims", "-n", "elsewhere", check=False)
    assert 'in the namespace "elsewhere"' in denied


def test_whoami(rbac_server: RBACServer) -> None:
    out = rbac_server.kubectl_as("grace", "auth", "whoami", "-o", "yaml")
    review = yaml.safe_load(out)
    assert review["kind"] == "SelfSubjectReview"
    assert review["status"]["userInfo"]["username"] == "grace"
    assert review["status"]["userInfo"]["groups"] == ["team-grace", "system:authenticated"]
    table = rbac_server.kubectl_as("grace", "auth", "whoami")
    assert "grace" in table
    assert "team-grace" in table
    impersonated = rbac_server.proc.kubectl("--as=bob", "--as-group=g1", "auth", "whoami").stdout
    assert "bob" in impersonated
    assert "g1" in impersonated


CAN_I = [
    # (user, args, expected answer)
    ("grace", ["create", "resourcepoolstatusrequests"], "yes"),
    ("grace", ["get", "resourcepoolstatusrequests/some-name"], "yes"),
    ("grace", ["list", "resourcepoolstatusrequests"], "yes"),
    ("grace", ["update", "resourcepoolstatusrequests"], "no"),
    ("grace", ["list", "resourceclaims", "-A"], "no"),
    ("grace", ["create", "selfsubjectaccessreviews.authorization.k8s.io"], "yes"),
    ("grace", ["get", "/apis"], "yes"),
    ("grace", ["get", "/metrics"], "no"),
    ("bob", ["list", "resourceclaims", "-n", "team-a"], "yes"),
    ("bob", ["list", "resourceclaims", "-n", "team-b"], "no"),
    ("bob", ["delete", "resourceclaims", "-n", "team-a"], "no"),
    ("judy", ["list", "resourceslicepatches"], "yes"),
    ("judy", ["get", "resourceslicepatches", "--subresource=status"], "yes"),
    ("judy", ["delete", "resourceslicepatches"], "no"),
    ("admin", ["delete", "deviceclasses"], "yes"),
    ("admin", ["get", "/anything"], "yes"),
]


@pytest.mark.parametrize(
    ("user", "args", "answer"), CAN_I, ids=[f"{c[0]} {' '.join(c[1])}" for c in CAN_I]
)
def test_can_i(rbac_server: RBACServer, user: str, args: list[str], answer: str) -> None:
    _grant_story_roles(rbac_server)
    result = rbac_server.proc.kubectl(
        f"--token={rbac_server.tokens[user]}", "auth", "can-i", *args, check=False
    )
    assert result.stdout.strip() == answer, result.stderr
    assert result.returncode == (0 if answer == "yes" else 1)


def test_can_i_as_another_user(rbac_server: RBACServer) -> None:
    _grant_story_roles(rbac_server)
    kubectl = rbac_server.proc.kubectl
    assert (
        kubectl(
            "auth", "can-i", "create", "resourcepoolstatusrequests", "--as=grace"
        ).stdout.strip()
        == "yes"
    )
    no = kubectl("auth", "can-i", "list", "resourceclaims", "-A", "--as=grace", check=False)
    assert no.stdout.strip() == "no"
    group = kubectl(
        "auth", "can-i", "list", "resourceslicepatches", "--as=x", "--as-group=team-judy"
    )
    assert group.stdout.strip() == "yes"


def test_can_i_list(rbac_server: RBACServer) -> None:
    _grant_story_roles(rbac_server)
    listed = rbac_server.kubectl_as("grace", "auth", "can-i", "--list")
    header = listed.splitlines()[0].split()
    assert header == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    row = next(
        line
        for line in listed.splitlines()
        if line.startswith("resourcepoolstatusrequests.resource.k8s.io")
    )
    assert "[create get list delete]" in row
    assert "selfsubjectaccessreviews.authorization.k8s.io" in listed
    assert "resourceclaims" not in listed


def test_subject_access_review_for_another_user(rbac_server: RBACServer) -> None:
    _grant_story_roles(rbac_server)
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "grace",
            "groups": ["team-grace"],
            "resourceAttributes": {
                "verb": "list",
                "group": "resource.k8s.io",
                "resource": "resourceclaims",
            },
        },
    }
    with rbac_server.proc.client() as client:
        answered = client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review)
        assert answered.status_code == 201
        assert answered.json()["status"] == {"allowed": False}
        invalid = client.post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            json={**review, "spec": {"user": "grace"}},
        )
        assert invalid.status_code == 422
        assert "spec.resourceAttributes" in invalid.text
        # Nothing is stored: there is nothing to list.
        assert client.get("/apis/authorization.k8s.io/v1/subjectaccessreviews").status_code == 405
    with rbac_server.client("grace") as client:
        refused = client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review)
        assert refused.status_code == 403  # only system:auth-delegator holders may ask


def test_token_review(rbac_server: RBACServer) -> None:
    review = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": rbac_server.tokens["bob"]},
    }
    with rbac_server.proc.client() as client:
        answered = client.post("/apis/authentication.k8s.io/v1/tokenreviews", json=review)
        assert answered.status_code == 201
        status = answered.json()["status"]
        assert status["authenticated"] is True
        assert status["user"]["username"] == "bob"
        wrong = client.post(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            json={**review, "spec": {"token": "nope"}},
        )
        assert wrong.json()["status"]["authenticated"] is False


def test_nobody_grants_more_than_they_hold(rbac_server: RBACServer) -> None:
    kubectl = rbac_server.proc.kubectl
    kubectl(
        "apply",
        "-f",
        "-",
        input="""\
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: judy-admin, namespace: judy-ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: judy}]
""",
    )
    # Within what admin holds in judy-ns: allowed.
    rbac_server.kubectl_as(
        "judy",
        "create",
        "rolebinding",
        "edit-for-bob",
        "--clusterrole=edit",
        "--user=bob",
        "-n",
        "judy-ns",
    )
    # cluster-admin holds more than judy does there: refused, naming what is missing.
    refused = rbac_server.kubectl_as(
        "judy",
        "create",
        "rolebinding",
        "root-for-bob",
        "--clusterrole=cluster-admin",
        "--user=bob",
        "-n",
        "judy-ns",
        check=False,
    )
    assert 'rolebindings.rbac.authorization.k8s.io "root-for-bob" is forbidden' in refused
    assert "is attempting to grant RBAC permissions not currently held" in refused
    role = rbac_server.kubectl_as(
        "judy",
        "create",
        "role",
        "classes",
        "--verb=create",
        "--resource=deviceclasses",
        "-n",
        "judy-ns",
        check=False,
    )
    assert 'roles.rbac.authorization.k8s.io "classes" is forbidden' in role
    assert 'Resources:["deviceclasses"]' in role
    assert (
        "NotFound"
        in kubectl("get", "rolebinding", "root-for-bob", "-n", "judy-ns", check=False).stderr
    )
