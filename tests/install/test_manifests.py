"""The install manifests: every output of ``kubectl kustomize`` (the base, the ha overlay,
the other-group and scheduler-shim components, and the overlay `python -m apiserver
install-certs` writes) is valid against Kubernetes 1.37's schemas, and the objects agree
with each other, with the certificates, with the image and with the server's own command
line and served group-versions."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from apiserver.auth.rbac.bootstrap import SCHEDULER_SHIM
from apiserver.auth.rbac.bootstrap import cluster_roles as bootstrap_roles
from apiserver.auth.x509 import (
    CABundle,
    CertificateError,
    user_of_certificate,
    verify_client_certificate,
)
from apiserver.cli import build_parser
from apiserver.kubeclient import ClusterConfig, KubeClient
from apiserver.server.certs import cert_pem
from apiserver.server.installcerts import SCHEDULER_SECRET, SCHEDULER_USER, SHIM_SECRET
from apiserver.server.modes import served_group_versions
from apiserver.server.serve import ServeOptions
from apiserver.shim.app import ShimOptions, build_app
from apiserver.shim.paths import Paths
from apiserver.toolkit.options import from_args, validated
from tests.e2e.harness import REPO, kubectl_binary

MANIFESTS = REPO / "manifests"
KUBERNETES = "1.37.0"
OTHER_GROUP = "resource.x-k8s.io"
Doc = dict[str, Any]


def kustomize(directory: Path) -> list[Doc]:
    out = subprocess.run(
        [kubectl_binary(), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def make_certs(out: Path, *args: str) -> str:
    """Run ``install-certs`` into ``out``; the caBundle it prints."""
    done = subprocess.run(
        [sys.executable, "-m", "apiserver", "install-certs", "--out", str(out), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def overlay(tmp_path: Path, name: str, resources: list[Path], components: list[Path]) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    doc = {
        "resources": [os.path.relpath(r, directory) for r in resources],
        "components": [os.path.relpath(c, directory) for c in components],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(doc))
    return directory


def one(docs: list[Doc], kind: str, name: str) -> Doc:
    [found] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def of_kind(docs: list[Doc], kind: str) -> list[Doc]:
    return [d for d in docs if d["kind"] == kind]


@pytest.fixture(scope="module")
def installs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Doc]]:
    """Every way to install, rendered: as committed, and with the generated certificate."""
    tmp = tmp_path_factory.mktemp("installs")
    other = MANIFESTS / "components" / "other-group"
    shim = MANIFESTS / "components" / "scheduler-shim"
    rendered = {
        "base": kustomize(MANIFESTS / "base"),
        "ha": kustomize(MANIFESTS / "overlays" / "ha"),
        "base+other-group": kustomize(overlay(tmp, "og", [MANIFESTS / "base"], [other])),
        "ha+other-group": kustomize(
            overlay(tmp, "ha-og", [MANIFESTS / "overlays" / "ha"], [other])
        ),
    }
    rendered["base+shim"] = kustomize(overlay(tmp, "shim", [MANIFESTS / "base"], [shim]))
    rendered["ha+shim+other-group"] = kustomize(
        overlay(tmp, "ha-shim-og", [MANIFESTS / "overlays" / "ha"], [shim, other])
    )
    make_certs(tmp / "certs-base")
    rendered["certs-base"] = kustomize(tmp / "certs-base")
    make_certs(tmp / "certs-shim", "--scheduler-shim")
    rendered["certs-base+shim"] = kustomize(tmp / "certs-shim")
    make_certs(
        tmp / "certs-ha-shim",
        "--base",
        str(MANIFESTS / "overlays" / "ha"),
        "--group",
        OTHER_GROUP,
        "--scheduler-shim",
    )
    rendered["certs-ha+shim+other-group"] = kustomize(tmp / "certs-ha-shim")
    make_certs(
        tmp / "certs-ha", "--base", str(MANIFESTS / "overlays" / "ha"), "--group", OTHER_GROUP
    )
    rendered["certs-ha+other-group"] = kustomize(tmp / "certs-ha")
    return rendered


def test_every_manifest_is_valid_against_kubernetes_1_37(installs: dict[str, list[Doc]]) -> None:
    for name, docs in installs.items():
        assert docs, name
        for doc in docs:
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_the_validator_refuses_what_kubernetes_would(installs: dict[str, list[Doc]]) -> None:
    """The check above can fail: a field Kubernetes does not know, a wrong type."""
    deployment = one(installs["base"], "Deployment", "dra-apiserver")
    unknown = {**deployment, "spec": {**deployment["spec"], "replica": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(unknown, KUBERNETES, strict=True)
    wrong = {**deployment, "spec": {**deployment["spec"], "replicas": "two"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong, KUBERNETES, strict=True)


def container(docs: list[Doc]) -> Doc:
    deployment = one(docs, "Deployment", "dra-apiserver")
    [server] = deployment["spec"]["template"]["spec"]["containers"]
    return server  # type: ignore[no-any-return]


def flags(docs: list[Doc]) -> dict[str, str]:
    return dict(a.removeprefix("--").split("=", 1) for a in container(docs)["args"][1:])


@pytest.mark.parametrize(
    "install",
    ["base", "ha", "base+other-group", "certs-ha+other-group", "ha+shim+other-group"],
)
def test_service_and_apiservices_agree(installs: dict[str, list[Doc]], install: str) -> None:
    docs = installs[install]
    deployment = one(docs, "Deployment", "dra-apiserver")
    [service] = [s for s in of_kind(docs, "Service") if s["metadata"]["name"] == "dra-apiserver"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    port_names = {p["name"]: p["containerPort"] for p in container(docs)["ports"]}
    [service_port] = service["spec"]["ports"]
    assert service_port["targetPort"] in port_names

    group = flags(docs).get("group", "resource.k8s.io")
    apiservices = of_kind(docs, "APIService")
    assert sorted(f"{a['spec']['group']}/{a['spec']['version']}" for a in apiservices) == (
        served_group_versions(group)
    )
    for apiservice in apiservices:
        spec = apiservice["spec"]
        assert apiservice["metadata"]["name"] == f"{spec['version']}.{spec['group']}"
        assert spec["service"] == {
            "name": service["metadata"]["name"],
            "namespace": service["metadata"]["namespace"],
            "port": service_port["port"],
        }
    reader = one(docs, "ClusterRole", "pool-status-reader")
    assert reader["rules"][0]["apiGroups"] == [group]


@pytest.mark.parametrize("install", ["base", "ha", "certs-base"])
def test_service_account_and_bindings_agree(installs: dict[str, list[Doc]], install: str) -> None:
    docs = installs[install]
    deployment = one(docs, "Deployment", "dra-apiserver")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    namespace = deployment["metadata"]["namespace"]
    one(docs, "ServiceAccount", account)
    bindings = of_kind(docs, "ClusterRoleBinding") + of_kind(docs, "RoleBinding")
    roles = {
        (b["roleRef"]["kind"], b["roleRef"]["name"], b["metadata"].get("namespace"))
        for b in bindings
    }
    assert ("ClusterRole", "system:auth-delegator", None) in roles
    assert ("Role", "extension-apiserver-authentication-reader", "kube-system") in roles
    assert ("ClusterRole", "dra-apiserver", None) in roles
    for binding in bindings:
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account, "namespace": namespace}
        ]
        if binding["roleRef"]["name"] == "dra-apiserver":
            one(docs, "ClusterRole", "dra-apiserver")
    rules = one(docs, "ClusterRole", "dra-apiserver")["rules"]
    granted = {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    needed = {
        *(
            ("resource.k8s.io", r, v)
            for r in ("resourceslices", "resourceclaims", "deviceclasses", "devicetaintrules")
            for v in ("get", "list", "watch")
        ),
        *(("", "nodes", v) for v in ("get", "list", "watch")),
        ("resource.k8s.io", "resourceclaims/status", "update"),
        ("", "events", "create"),
        ("", "events", "patch"),
        ("", "events", "get"),  # the Event recorder reads the Event it would repeat
        ("apiregistration.k8s.io", "apiservices", "list"),  # the start-up check
    }
    assert needed <= granted


@pytest.mark.parametrize("install", ["base", "ha"])
def test_probes_ports_and_command_line_agree(installs: dict[str, list[Doc]], install: str) -> None:
    """The probes reach the port the server listens on, the image exposes it, and the
    server's command line parses its arguments."""
    docs = installs[install]
    server = container(docs)
    ports = {p["name"]: p["containerPort"] for p in server["ports"]}
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/livez")):
        get = server[probe]["httpGet"]
        assert (get["path"], get["scheme"]) == (path, "HTTPS")
        assert get["port"] in ports
    args = build_parser().parse_args(server["args"])
    validated(from_args(ServeOptions, args))  # no flag's check refuses its value
    assert args.mode == "aggregated"
    assert ports["https"] == args.secure_port
    assert args.bind_address == "0.0.0.0"
    exposed = re.findall(r"^EXPOSE (\d+)$", (REPO / "docker" / "Dockerfile").read_text(), re.M)
    assert exposed == [str(args.secure_port)]
    mounts = {m["name"]: m for m in server["volumeMounts"]}
    volumes = {
        v["name"]: v
        for v in one(docs, "Deployment", "dra-apiserver")["spec"]["template"]["spec"]["volumes"]
    }
    assert set(mounts) == set(volumes)
    assert Path(args.tls_cert_file).parent == Path(mounts["tls"]["mountPath"])
    assert Path(args.tls_private_key_file).parent == Path(mounts["tls"]["mountPath"])
    security = server["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert (
        one(docs, "Deployment", "dra-apiserver")["spec"]["template"]["spec"]["securityContext"][
            "runAsNonRoot"
        ]
        is True
    )
    assert server["resources"]["requests"]


def test_base_keeps_sqlite_on_its_claim(installs: dict[str, list[Doc]]) -> None:
    docs = installs["base"]
    deployment = one(docs, "Deployment", "dra-apiserver")
    assert deployment["spec"]["replicas"] == 1
    storage = build_parser().parse_args(container(docs)["args"]).storage
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    [data] = [
        m
        for m in container(docs)["volumeMounts"]
        if storage.startswith(f"sqlite:///{m['mountPath']}/")
    ]
    claim = volumes[data["name"]]["persistentVolumeClaim"]["claimName"]
    one(docs, "PersistentVolumeClaim", claim)


def test_ha_runs_two_replicas_on_three_etcd_members(installs: dict[str, list[Doc]]) -> None:
    docs = installs["ha"]
    assert of_kind(docs, "PersistentVolumeClaim") == []
    assert one(docs, "Deployment", "dra-apiserver")["spec"]["replicas"] == 2
    etcd = one(docs, "StatefulSet", "dra-etcd")
    assert etcd["spec"]["replicas"] == 3
    headless = one(docs, "Service", etcd["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    namespace = etcd["metadata"]["namespace"]
    storage = build_parser().parse_args(container(docs)["args"]).storage
    members = [
        f"{etcd['metadata']['name']}-{i}.{headless['metadata']['name']}.{namespace}.svc:2379"
        for i in range(3)
    ]
    assert storage == "etcd://" + ",".join(members)


@pytest.mark.parametrize(
    ("install", "directory"), [("certs-base", "certs-base"), ("certs-ha+other-group", "certs-ha")]
)
def test_certificate_names_the_service_and_the_ca_bundle_signs_it(
    installs: dict[str, list[Doc]], install: str, directory: str
) -> None:
    docs = installs[install]
    service = one(docs, "Service", "dra-apiserver")
    volume = next(
        v
        for v in one(docs, "Deployment", "dra-apiserver")["spec"]["template"]["spec"]["volumes"]
        if "secret" in v
    )
    secret = one(docs, "Secret", volume["secret"]["secretName"])
    assert secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"]["namespace"] == service["metadata"]["namespace"]
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    dns = set(names.get_values_for_type(x509.DNSName))
    # The name the aggregator verifies: <service>.<namespace>.svc.
    assert f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc" in dns
    [bundle] = {a["spec"]["caBundle"] for a in of_kind(docs, "APIService")}
    ca = x509.load_pem_x509_certificate(base64.b64decode(bundle))
    public = ca.public_key()
    assert isinstance(public, ec.EllipticCurvePublicKey)
    cert.verify_directly_issued_by(ca)


def test_certs_script_writes_only_ignored_files(tmp_path: Path) -> None:
    """By default it writes into certs/, where git ignores everything it writes."""
    out = tmp_path / "certs"
    bundle = make_certs(out)
    assert base64.b64decode(bundle).startswith(b"-----BEGIN CERTIFICATE-----")
    written = sorted(p.name for p in out.iterdir())
    assert written == [
        "ca.crt",
        "ca.key",
        "helm-values.yaml",
        "kustomization.yaml",
        "secret.yaml",
        "tls.crt",
        "tls.key",
    ]
    assert (out / "tls.key").stat().st_mode & 0o077 == 0
    paths = [f"certs/{name}" for name in written]
    ignored = subprocess.run(
        ["git", "check-ignore", *paths], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert sorted(ignored.stdout.split()) == sorted(paths)
    again = make_certs(out)  # the CA is kept: the caBundle in the cluster stays valid
    assert again == bundle


# -- the scheduler shim and the second scheduler ----------------------------------------

SHIM_INSTALLS = ["base+shim", "ha+shim+other-group", "certs-base+shim", "certs-ha+shim+other-group"]
SCHEDULER_NAME = "dra-extension-scheduler"
EXTENDER_FIELDS = {
    # k8s.io/kube-scheduler/config/v1 Extender, as its JSON names are spelled
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
}
TLS_FIELDS = {
    "insecure",
    "serverName",
    "certFile",
    "keyFile",
    "caFile",
    "certData",
    "keyData",
    "caData",
}


def shim_container(docs: list[Doc]) -> Doc:
    [shim] = one(docs, "Deployment", "dra-scheduler-shim")["spec"]["template"]["spec"]["containers"]
    return shim  # type: ignore[no-any-return]


def scheduler_pod(docs: list[Doc]) -> Doc:
    spec: Doc = one(docs, "Deployment", SCHEDULER_NAME)["spec"]["template"]["spec"]
    return spec


def scheduler_config(docs: list[Doc]) -> Doc:
    """The KubeSchedulerConfiguration the second scheduler reads (its --config)."""
    pod = scheduler_pod(docs)
    [container] = pod["containers"]
    [config_flag] = [a for a in container["command"] if a.startswith("--config=")]
    path = Path(config_flag.removeprefix("--config="))
    mount = next(m for m in container["volumeMounts"] if Path(m["mountPath"]) == path.parent)
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    config_map = one(docs, "ConfigMap", volume["configMap"]["name"])
    config: Doc = yaml.safe_load(config_map["data"][path.name])
    return config


def shim_args(docs: list[Doc]) -> Any:
    args = build_parser().parse_args(shim_container(docs)["args"])
    validated(from_args(ShimOptions, args))  # no flag's check refuses its value
    return args


def duration_seconds(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)([smh])", text))


@pytest.mark.parametrize("install", SHIM_INSTALLS)
def test_scheduler_configuration_names_the_shim_service(
    installs: dict[str, list[Doc]], install: str
) -> None:
    """The second scheduler's extender reaches the shim: its urlPrefix is the shim
    Service's DNS name and port, the Service selects the shim's pods and targets the port
    the shim listens on, and the verbs are the shim's routes."""
    docs = installs[install]
    config = scheduler_config(docs)
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    [extender] = config["extenders"]
    assert set(extender) <= EXTENDER_FIELDS
    assert set(extender.get("tlsConfig") or {}) <= TLS_FIELDS
    service = one(docs, "Service", "dra-scheduler-shim")
    [port] = service["spec"]["ports"]
    meta = service["metadata"]
    assert extender["urlPrefix"] == f"https://{meta['name']}.{meta['namespace']}.svc:{port['port']}"
    shim = one(docs, "Deployment", "dra-scheduler-shim")
    assert meta["namespace"] == shim["metadata"]["namespace"]
    labels = shim["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    ports = {p["name"]: p["containerPort"] for p in shim_container(docs)["ports"]}
    args = shim_args(docs)
    assert ports[port["targetPort"]] == args.port
    assert args.bind_address == "0.0.0.0"
    assert args.kubeconfig is None  # the pod's ServiceAccount

    routes = {getattr(r, "path", None) for r in build_app(_no_api(), Paths()).routes}
    for verb in ("filterVerb", "prioritizeVerb", "bindVerb"):
        assert f"/{extender[verb]}" in routes
    assert extender["enableHTTPS"] is True
    assert extender["ignorable"] is False
    assert extender["nodeCacheCapable"] is True
    assert extender["weight"] > 0
    # A bind waits up to the shim's attach timeout: the scheduler must wait longer.
    assert duration_seconds(extender["httpTimeout"]) > args.attach_timeout


def _no_api() -> KubeClient:
    return KubeClient(ClusterConfig("https://unused", None, None, None, None))


@pytest.mark.parametrize("install", SHIM_INSTALLS)
def test_the_second_scheduler_profile_leaves_claims_to_the_shim(
    installs: dict[str, list[Doc]], install: str
) -> None:
    docs = installs[install]
    config = scheduler_config(docs)
    [profile] = config["profiles"]
    assert profile["schedulerName"] == SCHEDULER_NAME
    disabled = profile["plugins"]["multiPoint"]["disabled"]
    assert {"name": "DynamicResources"} in disabled
    assert "enabled" not in profile["plugins"]["multiPoint"]
    # Its own leader election Lease, which its Role lets it hold.
    election = config["leaderElection"]
    namespace = one(docs, "Deployment", SCHEDULER_NAME)["metadata"]["namespace"]
    assert election["resourceNamespace"] == namespace
    [role] = [r for r in of_kind(docs, "Role") if r["metadata"]["name"].startswith(SCHEDULER_NAME)]
    assert role["metadata"]["namespace"] == namespace
    named = [rule for rule in role["rules"] if rule.get("resourceNames")]
    assert named[0]["resourceNames"] == [election["resourceName"]]
    assert {"get", "update"} <= set(named[0]["verbs"])
    # kube-scheduler pinned to a release, never a moving tag.
    [container] = scheduler_pod(docs)["containers"]
    assert re.fullmatch(r"registry\.k8s\.io/kube-scheduler:v1\.\d+\.\d+", container["image"])
    # The shim runs the server's image.
    assert shim_container(docs)["image"] == container_image(docs)


def container_image(docs: list[Doc]) -> str:
    return str(container(docs)["image"])


@pytest.mark.parametrize("install", SHIM_INSTALLS)
def test_shim_role_is_the_bootstrap_role_in_the_servers_group(
    installs: dict[str, list[Doc]], install: str
) -> None:
    """The cluster's ClusterRole for the shim holds what a standalone server's bootstrap
    role holds, in the group the server serves, and the shim asks in that group."""
    docs = installs[install]
    group = flags(docs).get("group", "resource.k8s.io")
    assert shim_args(docs).group == group
    [bootstrap] = [r for r in bootstrap_roles(group) if r["metadata"]["name"] == SCHEDULER_SHIM]
    assert one(docs, "ClusterRole", SCHEDULER_SHIM)["rules"] == bootstrap["rules"]


@pytest.mark.parametrize("install", SHIM_INSTALLS)
def test_shim_and_scheduler_service_accounts_and_bindings_agree(
    installs: dict[str, list[Doc]], install: str
) -> None:
    docs = installs[install]
    for deployment, roles in (
        ("dra-scheduler-shim", {("ClusterRole", SCHEDULER_SHIM)}),
        (
            SCHEDULER_NAME,
            {
                ("ClusterRole", "system:kube-scheduler"),
                ("ClusterRole", "system:volume-scheduler"),
                ("Role", "extension-apiserver-authentication-reader"),
                ("Role", f"{SCHEDULER_NAME}:leader-election"),
            },
        ),
    ):
        found = one(docs, "Deployment", deployment)
        account = found["spec"]["template"]["spec"]["serviceAccountName"]
        namespace = found["metadata"]["namespace"]
        one(docs, "ServiceAccount", account)
        subject = {"kind": "ServiceAccount", "name": account, "namespace": namespace}
        bound = {
            (b["roleRef"]["kind"], b["roleRef"]["name"])
            for b in of_kind(docs, "ClusterRoleBinding") + of_kind(docs, "RoleBinding")
            if subject in b["subjects"]
        }
        assert bound == roles


@pytest.mark.parametrize("install", SHIM_INSTALLS)
def test_shim_probes_security_and_certificate_files(
    installs: dict[str, list[Doc]], install: str
) -> None:
    docs = installs[install]
    shim = shim_container(docs)
    ports = {p["name"] for p in shim["ports"]}
    for probe in ("readinessProbe", "livenessProbe"):
        get = shim[probe]["httpGet"]
        assert (get["path"], get["scheme"]) == ("/healthz", "HTTPS")
        assert get["port"] in ports
    assert shim["securityContext"]["readOnlyRootFilesystem"] is True
    assert shim["securityContext"]["allowPrivilegeEscalation"] is False
    pod = one(docs, "Deployment", "dra-scheduler-shim")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert shim["resources"]["requests"]
    args = shim_args(docs)
    mounts = {m["name"]: m for m in shim["volumeMounts"]}
    assert Path(args.tls_cert_file).parent == Path(mounts["tls"]["mountPath"])
    assert Path(args.tls_private_key_file).parent == Path(mounts["tls"]["mountPath"])
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert set(mounts) == set(volumes)
    shim_secret = volumes["tls"]["secret"]["secretName"]
    assert shim_secret == SHIM_SECRET
    # The shim trusts the scheduler's client CA, a key of its own Secret.
    assert mounted(pod, shim, args.client_ca_file) == (SHIM_SECRET, "client-ca.crt")
    # The scheduler's extender tlsConfig: the shim's CA and its own client pair, all from
    # the scheduler's Secret (it never mounts the shim's key).
    [container] = scheduler_pod(docs)["containers"]
    tls = scheduler_config(docs)["extenders"][0]["tlsConfig"]
    assert set(tls) == {"caFile", "certFile", "keyFile"}
    files = {k: mounted(scheduler_pod(docs), container, tls[k]) for k in tls}
    assert files == {
        "caFile": (SCHEDULER_SECRET, "ca.crt"),
        "certFile": (SCHEDULER_SECRET, "tls.crt"),
        "keyFile": (SCHEDULER_SECRET, "tls.key"),
    }
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    # Only the scheduler's identity may call the shim.
    assert args.allowed_users == [SCHEDULER_USER]
    assert args.allowed_groups == []


def mounted(pod: Doc, container: Doc, path: str) -> tuple[str, str]:
    """(Secret name, key) of the file ``path`` a container sees through a Secret volume."""
    file = Path(path)
    mount = next(m for m in container["volumeMounts"] if Path(m["mountPath"]) == file.parent)
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    secret = volume["secret"]
    items = secret.get("items")
    if items is None:
        return secret["secretName"], file.name
    [key] = [i["key"] for i in items if i["path"] == file.name]
    return secret["secretName"], str(key)


def secret_file(docs: list[Doc], pair: tuple[str, str]) -> bytes:
    return base64.b64decode(one(docs, "Secret", pair[0])["data"][pair[1]])


@pytest.mark.parametrize("install", ["certs-base+shim", "certs-ha+shim+other-group"])
def test_the_schedulers_client_certificate_is_the_one_the_shim_lets_in(
    installs: dict[str, list[Doc]], install: str
) -> None:
    """The certificate the second scheduler presents verifies against the CA the shim
    trusts, names a user the shim allows, and is no server's certificate; the shim's
    serving certificate cannot pass as the scheduler (its CA is not the client CA)."""
    docs = installs[install]
    shim = shim_container(docs)
    shim_pod = one(docs, "Deployment", "dra-scheduler-shim")["spec"]["template"]["spec"]
    args = shim_args(docs)
    client_ca = CABundle.from_pem(secret_file(docs, mounted(shim_pod, shim, args.client_ca_file)))
    [container] = scheduler_pod(docs)["containers"]
    tls = scheduler_config(docs)["extenders"][0]["tlsConfig"]
    pod = scheduler_pod(docs)
    client = x509.load_pem_x509_certificate(
        secret_file(docs, mounted(pod, container, tls["certFile"]))
    )
    verify_client_certificate(client, client_ca)
    user = user_of_certificate(client)
    assert user is not None
    assert user.name in args.allowed_users
    key = serialization.load_pem_private_key(
        secret_file(docs, mounted(pod, container, tls["keyFile"])), password=None
    )
    assert key.public_key() == client.public_key()
    # The scheduler trusts the shim's serving certificate through its caFile.
    serving = x509.load_pem_x509_certificate(
        secret_file(docs, mounted(shim_pod, shim, args.tls_cert_file))
    )
    serving.verify_directly_issued_by(
        x509.load_pem_x509_certificate(secret_file(docs, mounted(pod, container, tls["caFile"])))
    )
    with pytest.raises(CertificateError):
        verify_client_certificate(serving, client_ca)
    # The client CA signs nothing the apiserver's CA does.
    [bundle] = {a["spec"]["caBundle"] for a in of_kind(docs, "APIService")}
    assert base64.b64decode(bundle) not in [cert_pem(c) for c in client_ca.certificates]


@pytest.mark.parametrize("install", ["certs-base+shim", "certs-ha+shim+other-group"])
def test_shim_certificate_names_the_extender_url_and_its_ca_is_the_installs(
    installs: dict[str, list[Doc]], install: str
) -> None:
    docs = installs[install]
    volume = next(
        v
        for v in one(docs, "Deployment", "dra-scheduler-shim")["spec"]["template"]["spec"][
            "volumes"
        ]
        if "secret" in v
    )
    secret = one(docs, "Secret", volume["secret"]["secretName"])
    assert secret["type"] == "kubernetes.io/tls"
    assert (
        secret["metadata"]["namespace"]
        == one(docs, "Service", "dra-scheduler-shim")["metadata"]["namespace"]
    )
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    host = re.sub(
        r"^https://([^:/]+).*$", r"\1", scheduler_config(docs)["extenders"][0]["urlPrefix"]
    )
    assert host in names.get_values_for_type(x509.DNSName)
    ca = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["ca.crt"]))
    cert.verify_directly_issued_by(ca)
    [bundle] = {a["spec"]["caBundle"] for a in of_kind(docs, "APIService")}
    assert base64.b64decode(bundle) == base64.b64decode(secret["data"]["ca.crt"])


def test_certs_script_with_the_shim_writes_only_ignored_files(tmp_path: Path) -> None:
    out = tmp_path / "certs"
    make_certs(out, "--scheduler-shim")
    written = sorted(p.name for p in out.iterdir())
    private = {
        "shim-tls.key",
        "shim-secret.yaml",
        "scheduler-client.key",
        "scheduler-client-ca.key",
        "scheduler-secret.yaml",
    }
    assert {"shim-tls.crt", "scheduler-client.crt", "scheduler-client-ca.crt"} | private <= set(
        written
    )
    for name in private:
        assert (out / name).stat().st_mode & 0o077 == 0, name
    paths = [f"certs/{name}" for name in written]
    ignored = subprocess.run(
        ["git", "check-ignore", *paths], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert sorted(ignored.stdout.split()) == sorted(paths)
